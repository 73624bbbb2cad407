"""The record format and where records live: a new record (record), its
validation and summary (schema, with the format in schema/*.json), the
SQLite store (store), runs in and out of it (transfer)."""
