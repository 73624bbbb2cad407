"""What is printed or written: results tables (table), listings (listing),
numbers and units in words (units), escaping of stored text (sanitize),
output files written whole (files)."""
