"""The store: every run and every record, in one SQLite file.

Guarantees (docs/store.md):
- A run row is written when the run starts; each record is committed on
  its own as soon as it arrives; the final status is set at the end.  An
  interrupted or crashed run therefore keeps every finished data point.
- WAL journal and a busy timeout: several threadlab processes can read and
  write the same store at once.
- PRAGMA user_version is the store's format; MIGRATIONS brings an older
  file forward in one transaction, and a newer file is refused.
- PRAGMA application_id marks the file as a threadlab store: an SQLite
  database of another program is refused, never given threadlab's tables.
- Reading commands open the file read-only (SQLite's mode=ro): a store on
  a read-only file system, or one the user may only read, can be read.
- A run still marked 'running' whose process is gone is reported as
  'incomplete' (the row is left as is: reading never writes).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from threadlab.errors import ThreadlabError, UserError
from threadlab.vocabulary import RUN_STATUSES
from threadlab.output.sanitize import printable

DB_ENV = "THREADLAB_DB"
BUSY_TIMEOUT_MS = 30_000
# Words that name a run without being its number or name.
LATEST_WORDS = ("latest", "last")
# PRAGMA application_id of a threadlab store: "TLAB" in ASCII.
APPLICATION_ID = 0x544C4142
# Formats written before stores carried the application id: a file of one
# of them with threadlab's tables is a threadlab store.
UNMARKED_FORMATS = (1, 2)
# The largest run number SQLite can hold (a signed 64-bit integer).
MAX_RUN_ID = 2**63 - 1


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


# Ordered; migration i brings user_version from i-1 to i.  Never edit a
# released migration: append a new one (the store then migrates forward).
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs and their records",
        (
            """CREATE TABLE runs (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT UNIQUE,
                status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
                started_at TEXT NOT NULL,
                finished_at TEXT,
                hostname TEXT NOT NULL,
                machine_id TEXT NOT NULL,
                pid INTEGER NOT NULL,
                process_key TEXT NOT NULL,
                threadlab_version TEXT NOT NULL,
                record_schema TEXT NOT NULL,
                command TEXT NOT NULL,
                options TEXT NOT NULL,
                catalog TEXT NOT NULL,
                environment TEXT NOT NULL,
                points_planned INTEGER NOT NULL
            )""",
            """CREATE TABLE records (
                run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                point INTEGER NOT NULL,
                benchmark TEXT NOT NULL,
                model TEXT NOT NULL,
                metric TEXT NOT NULL,
                placement TEXT NOT NULL,
                params TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('ok', 'unsupported', 'failed')),
                reason TEXT,
                unit TEXT NOT NULL,
                quantity TEXT NOT NULL,
                n INTEGER,
                mean REAL,
                sd REAL,
                rsd REAL,
                median REAL,
                min REAL,
                max REAL,
                checks_failed INTEGER NOT NULL,
                record TEXT NOT NULL,
                stored_at TEXT NOT NULL,
                PRIMARY KEY (run_id, seq)
            )""",
            "CREATE INDEX records_by_benchmark ON records(benchmark, metric, placement)",
            "CREATE INDEX runs_by_machine ON runs(machine_id, started_at)",
        ),
    ),
    Migration(
        2,
        "where a run came from (imported runs)",
        # NULL: measured by this store's threadlab.  Otherwise a JSON object:
        # imported_at, file, header (false: bare records, metadata synthesized),
        # original_id.
        ("ALTER TABLE runs ADD COLUMN origin TEXT",),
    ),
    Migration(
        3,
        "why a run stopped before its plan",
        # NULL: it ran to its end (or is still running).  Otherwise a
        # sentence: the signal that interrupted it, the output that closed.
        ("ALTER TABLE runs ADD COLUMN stop_reason TEXT",),
    ),
)
STORE_FORMAT = len(MIGRATIONS)


def user_data_db_path() -> Path:
    """$XDG_DATA_HOME/threadlab/threadlab.db (~/.local/share/threadlab/threadlab.db)."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "threadlab" / "threadlab.db"


def default_db_path() -> Path:
    """$THREADLAB_DB, else the user's data directory."""
    if os.environ.get(DB_ENV):
        return Path(os.environ[DB_ENV]).expanduser()
    return user_data_db_path()


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# ------------------------------------------------------ process liveness


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _process_start(pid: int) -> str | None:
    """Start time of a live process (clock ticks after boot); None when it
    is gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after the last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def process_key(pid: int | None = None) -> str:
    """An identity of a process that survives pid reuse: boot, pid, start time."""
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}:{pid}:{_process_start(pid)}"


def process_alive(hostname: str, key: str) -> bool | None:
    """True/False for a process of this machine; None for another host's."""
    if hostname != socket.gethostname():
        return None
    boot, _, rest = key.partition(":")
    pid_text, _, start = rest.partition(":")
    if boot != _boot_id() or not pid_text.isdigit():
        return False
    return _process_start(int(pid_text)) == start


# ------------------------------------------------------------------ runs


@dataclass
class RunInfo:
    id: int
    name: str | None
    status: str
    started_at: str
    finished_at: str | None
    hostname: str
    machine_id: str
    pid: int
    process_key: str
    threadlab_version: str
    command: list[str]
    options: dict[str, Any]
    catalog: list[dict[str, Any]]
    environment: dict[str, Any]
    points_planned: int
    counts: dict[str, int] = field(default_factory=dict)
    origin: dict[str, Any] | None = None  # None: measured here; else how it was imported
    record_schema: str = "threadlab.record/1"
    stop_reason: str | None = None  # why it stopped before its plan (None: it did not)

    @property
    def display_status(self) -> str:
        """The status a reader should see: a 'running' run whose process is
        gone (killed, machine rebooted) or that belongs to another host, where
        it cannot be checked, is 'incomplete'."""
        if self.status != "running":
            return self.status
        return "running" if process_alive(self.hostname, self.process_key) else "incomplete"

    @property
    def label(self) -> str:
        return f"run {self.id}" + (f" ({self.name})" if self.name else "")


_RUN_COLUMNS = (
    "id, name, status, started_at, finished_at, hostname, machine_id, pid, process_key, "
    "threadlab_version, command, options, catalog, environment, points_planned, record_schema"
)
# Columns added by a migration, with the format that added them: a store
# read without migrating it (read-only) shows them as NULL.
_LATER_RUN_COLUMNS = (("origin", 2), ("stop_reason", 3))


def _run_from_row(row: sqlite3.Row) -> RunInfo:
    return RunInfo(
        id=row["id"],
        name=row["name"],
        status=row["status"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        hostname=row["hostname"],
        machine_id=row["machine_id"],
        pid=row["pid"],
        process_key=row["process_key"],
        threadlab_version=row["threadlab_version"],
        command=json.loads(row["command"]),
        options=json.loads(row["options"]),
        catalog=json.loads(row["catalog"]),
        environment=json.loads(row["environment"]),
        points_planned=row["points_planned"],
        origin=json.loads(row["origin"]) if row["origin"] else None,
        record_schema=row["record_schema"],
        stop_reason=row["stop_reason"],
    )


class Store:
    """One open store.  Use as a context manager, or call close().

    create: make the file (and its directory) when it is missing; else a
    missing file raises NoStore.  readonly: open it with SQLite's mode=ro,
    for commands that only read (a read-only store can be read; nothing is
    migrated or written)."""

    def __init__(self, path: Path, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        try:
            exists = self.path.exists()
        except OSError as error:  # a directory on the way that the user may not search
            raise UserError(f"--db {self.path}: cannot reach it: {error.strerror}") from None
        if not exists and (readonly or not create):
            raise NoStore(self.path)
        if exists and not readonly:
            problem = _unwritable(self.path)
            if problem:
                raise UserError(
                    f"--db {self.path}: the store is read-only here ({problem}); the commands that only read it "
                    "work (runs, show, export, report, compare); this one writes to it"
                )
        if not exists:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise UserError(f"--db {self.path}: cannot create its directory: {error.strerror}") from None
        try:
            self._db = self._connect()
            self._columns = _RUN_COLUMNS
            self.empty = self._identify()
            if self.empty and readonly:
                self._db.close()
                raise NoStore(self.path)
            if not readonly:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._migrate()
            self._columns = self._run_columns()
        except sqlite3.OperationalError as error:  # cannot open, locked past the busy timeout, ...
            raise ThreadlabError(f"--db {self.path}: cannot open the store: {_sqlite_reason(error)}") from None
        except sqlite3.DatabaseError as error:  # "file is not a database"
            raise UserError(f"--db {self.path}: not a usable threadlab store ({error})") from None

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (_transaction),
        # so the sqlite3 module never opens one behind our back.
        options: dict[str, Any] = {"timeout": BUSY_TIMEOUT_MS / 1000, "isolation_level": None}
        if not self.readonly:
            db = sqlite3.connect(self.path, **options)
        else:
            uri = "file:" + urllib.parse.quote(str(self.path.absolute())) + "?mode=ro"
            db = sqlite3.connect(uri, uri=True, **options)
            try:
                db.execute("PRAGMA user_version").fetchone()
            except sqlite3.OperationalError as error:
                # A WAL store in a directory we cannot write (or on a
                # read-only file system), with no -shm file: SQLite cannot
                # set up the shared memory.  With no -wal file either, the
                # database file is all there is, and it is read as immutable.
                code = getattr(error, "sqlite_errorcode", 0) & 0xFF
                if code not in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN):
                    raise
                db.close()
                if _has_wal(self.path):
                    raise ThreadlabError(
                        f"--db {self.path}: cannot read the store: its -wal file holds writes not yet in the "
                        "store and SQLite cannot set up its -shm file here (a directory or file system it may "
                        "not write); open it once with write access, or copy the store with its -wal file"
                    ) from None
                db = sqlite3.connect(uri + "&immutable=1", uri=True, **options)
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        return db

    def _identify(self) -> bool:
        """Refuses a database that is not a threadlab store; True when the
        file is empty (a new store)."""
        # One read transaction: another process may create the store
        # meanwhile, and an id read before its commit beside tables read
        # after it looks like another program's database.
        self._db.execute("BEGIN")
        try:
            return self._identify_read()
        finally:
            self._db.execute("ROLLBACK")

    def _identify_read(self) -> bool:
        application_id = int(self._db.execute("PRAGMA application_id").fetchone()[0])
        version = self.format_version
        tables = [row[0] for row in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )]
        if application_id == APPLICATION_ID:
            if version > len(MIGRATIONS):
                raise UserError(
                    f"--db {self.path}: store format {version} was written by a newer threadlab "
                    f"(this one reads formats up to {len(MIGRATIONS)}); upgrade threadlab"
                )
            return False
        if application_id == 0 and version == 0 and not tables:
            objects = self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
            if not objects:
                return True
        if application_id == 0 and version in UNMARKED_FORMATS and self._has_threadlab_tables():
            return False  # a store from before the application id
        if application_id:
            what = f"its application_id is {application_id:#010x}, not threadlab's {APPLICATION_ID:#010x}"
        elif tables:
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            what = f"it holds the tables {shown}"
        else:
            what = f"its user_version is {version}"
        raise UserError(
            f"--db {self.path}: not a threadlab store: an SQLite database of another program ({what}); threadlab "
            "leaves it as it is: give the path of a threadlab store, or of a new file"
        )

    def _has_threadlab_tables(self) -> bool:
        def columns(table: str) -> set[str]:
            return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

        return {"id", "status", "process_key", "points_planned", "environment"} <= columns("runs") and \
            {"run_id", "seq", "point", "record", "checks_failed"} <= columns("records")

    def _run_columns(self) -> str:
        """The runs columns to select: one a migration added that this file
        lacks (an older store read without migrating) reads as NULL."""
        version = self.format_version
        later = [name if version >= added else f"NULL AS {name}" for name, added in _LATER_RUN_COLUMNS]
        return ", ".join([_RUN_COLUMNS, *later])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction.  IMMEDIATE takes the write lock at once, so
        two writers queue on the busy timeout instead of one failing with
        'database is locked' when it tries to upgrade a read lock."""
        if self.readonly:
            raise ValueError("a write on a store opened read-only")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
            self._db.execute("COMMIT")
        except BaseException:
            # Also on KeyboardInterrupt: never leave half a write behind.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------ format

    @property
    def format_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        latest = len(MIGRATIONS)
        if self.format_version == latest and not self.empty:
            return
        with self._transaction() as db:
            version = self.format_version  # again, under the lock: another process may have migrated
            if version > latest:
                raise UserError(
                    f"--db {self.path}: store format {version} was written by a newer threadlab "
                    f"(this one reads formats up to {latest}); upgrade threadlab"
                )
            for migration in MIGRATIONS[version:]:
                try:
                    for statement in migration.statements:
                        db.execute(statement)
                except sqlite3.Error as error:
                    raise ThreadlabError(
                        f"--db {self.path}: migrating the store to format {migration.version} "
                        f"({migration.description}) failed: {error}; the store is unchanged"
                    ) from None
            # user_version and application_id live in the database header:
            # they commit with the tables.
            db.execute(f"PRAGMA user_version = {latest}")
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        self.empty = False

    # -------------------------------------------------------------- runs

    def require_free_name(self, name: str | None) -> None:
        """Refuses a run name that another run has (names must resolve to one run)."""
        if name is None:
            return
        row = self._db.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()
        if row:
            raise UserError(f"--name {name}: a run with that name exists already (run {row['id']})")

    def create_run(
        self,
        *,
        name: str | None,
        command: Sequence[str],
        options: Mapping[str, Any],
        catalog: Sequence[Mapping[str, Any]],
        environment: Mapping[str, Any],
        points_planned: int,
        record_schema: str,
        threadlab_version: str,
    ) -> int:
        """The row of a starting run (status 'running'); its id."""
        host = environment.get("host", {})
        try:
            with self._transaction() as db:
                cursor = db.execute(
                    """INSERT INTO runs (name, status, started_at, hostname, machine_id, pid, process_key,
                       threadlab_version, record_schema, command, options, catalog, environment, points_planned)
                       VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (
                        name,
                        now_utc(),
                        host.get("hostname") or socket.gethostname(),
                        host.get("machine_id") or "unknown",
                        os.getpid(),
                        process_key(),
                        threadlab_version,
                        record_schema,
                        _json(list(command)),
                        _json(dict(options)),
                        _json(list(catalog)),
                        _json(dict(environment)),
                        points_planned,
                    ),
                )
        except sqlite3.IntegrityError:  # another process took the name since require_free_name
            self.require_free_name(name)
            raise
        return int(cursor.lastrowid)

    def add_record(self, run_id: int, point: int, record: Mapping[str, Any]) -> int:
        """Commits one validated record of a run; its sequence number."""
        with self._transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM records WHERE run_id = ?", (run_id,)).fetchone()[0]
            self._insert_record(db, run_id, seq, point, record)
        return int(seq)

    @staticmethod
    def _insert_record(db: sqlite3.Connection, run_id: int, seq: int, point: int, record: Mapping[str, Any]) -> None:
        from threadlab.analysis import stats  # numpy: only commands that store records pay for it

        summary = stats.record_summary(record)
        failed_checks = sum(1 for check in record.get("checks", []) if not check["ok"])
        db.execute(
            """INSERT INTO records (run_id, seq, point, benchmark, model, metric, placement, params, status,
               reason, unit, quantity, n, mean, sd, rsd, median, min, max, checks_failed, record, stored_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                run_id,
                seq,
                point,
                record["benchmark"],
                record["model"],
                record["metric"],
                record["placement"],
                _json(record["params"]),
                record["status"],
                record["reason"],
                record["unit"],
                record["quantity"],
                summary.n if summary else None,
                summary.mean if summary else None,
                summary.sd if summary else None,
                summary.rsd if summary else None,
                summary.median if summary else None,
                summary.min if summary else None,
                summary.max if summary else None,
                failed_checks,
                json.dumps(record, separators=(",", ":")),
                now_utc(),
            ),
        )

    def finish_run(self, run_id: int, status: str, environment: Mapping[str, Any] | None = None,
                   stop_reason: str | None = None) -> None:
        """Sets the final status (and the environment with its end-of-run
        values, and why the run stopped before its plan, if it did)."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"not a final run status: {status}")
        with self._transaction() as db:
            db.execute("UPDATE runs SET status = ?, finished_at = ?, stop_reason = ? WHERE id = ?",
                       (status, now_utc(), stop_reason, run_id))
            if environment is not None:
                db.execute("UPDATE runs SET environment = ? WHERE id = ?", (_json(dict(environment)), run_id))

    def import_run(
        self, run: Mapping[str, Any], records: Sequence[Mapping[str, Any]], points: Sequence[int], origin: Mapping[str, Any]
    ) -> int:
        """A run from elsewhere with all its records, in ONE transaction: a
        failure leaves the store as it was.  `run` holds the runs columns
        (as `threadlab export` writes them); records are already validated."""
        name = run.get("name")
        try:
            with self._transaction() as db:
                cursor = db.execute(
                    """INSERT INTO runs (name, status, started_at, finished_at, hostname, machine_id, pid, process_key,
                       threadlab_version, record_schema, command, options, catalog, environment, points_planned, origin,
                       stop_reason)
                       VALUES (?, ?, ?, ?, ?, ?, 0, 'imported', ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (
                        name,
                        run["status"],
                        run["started_at"],
                        run.get("finished_at"),
                        run["hostname"],
                        run["machine_id"],
                        run["threadlab_version"],
                        run["record_schema"],
                        _json(list(run["command"])),
                        _json(dict(run["options"])),
                        _json(list(run["catalog"])),
                        _json(dict(run["environment"])),
                        int(run["points_planned"]),
                        _json(dict(origin)),
                        run.get("stop_reason"),
                    ),
                )
                run_id = int(cursor.lastrowid)
                for seq, (point, record) in enumerate(zip(points, records), start=1):
                    self._insert_record(db, run_id, seq, point, record)
        except sqlite3.IntegrityError:  # another process took the name meanwhile
            self.require_free_name(name)
            raise
        return run_id

    def delete_runs(self, run_ids: Sequence[int]) -> dict[int, int]:
        """Deletes runs and their records in one transaction; records per run."""
        deleted: dict[int, int] = {}
        with self._transaction() as db:
            for run_id in run_ids:
                count = db.execute("SELECT COUNT(*) FROM records WHERE run_id = ?", (run_id,)).fetchone()[0]
                if db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount:
                    deleted[run_id] = int(count)  # the records go by ON DELETE CASCADE
        return deleted

    def rename_run(self, run_id: int, name: str | None) -> None:
        """Gives a run a (new) name, or none; names stay unique."""
        if name is not None:
            row = self._db.execute("SELECT id FROM runs WHERE name = ? AND id != ?", (name, run_id)).fetchone()
            if row:
                raise UserError(f"name {name}: run {row['id']} has that name already")
        try:
            with self._transaction() as db:
                db.execute("UPDATE runs SET name = ? WHERE id = ?", (name, run_id))
        except sqlite3.IntegrityError:
            raise UserError(f"name {name}: another run took that name meanwhile") from None

    def records_with_points(self, run_id: int) -> tuple[list[dict[str, Any]], list[int]]:
        """The records of a run and the sweep point of each, in stored order,
        read in one statement: a run still being written cannot add a record
        between the two lists."""
        rows = self._db.execute(
            "SELECT point, record FROM records WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        return [json.loads(row["record"]) for row in rows], [int(row["point"]) for row in rows]

    # ------------------------------------------------------------ reading

    def _counts(self, run_ids: Sequence[int]) -> dict[int, dict[str, int]]:
        counts: dict[int, dict[str, int]] = {run_id: {} for run_id in run_ids}
        if not run_ids:
            return counts
        marks = ",".join("?" * len(run_ids))
        for row in self._db.execute(
            f"SELECT run_id, status, COUNT(*) AS n FROM records WHERE run_id IN ({marks}) GROUP BY run_id, status",
            tuple(run_ids),
        ):
            counts[row["run_id"]][row["status"]] = row["n"]
        return counts

    def _runs_where(self, where: str, args: tuple[Any, ...] = (), limit: int | None = None) -> list[RunInfo]:
        sql = f"SELECT {self._columns} FROM runs {where} ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        runs = [_run_from_row(row) for row in self._db.execute(sql, args)]
        counts = self._counts([run.id for run in runs])
        for run in runs:
            run.counts = counts[run.id]
        return runs

    def runs(self, limit: int | None = None) -> list[RunInfo]:
        """Runs, newest first."""
        return self._runs_where("", (), limit)

    def resolve_run(self, ref: str) -> RunInfo:
        """The run a RUN argument names: its number, its name, or 'latest'/'last'."""
        text = ref.strip()
        if text.lower() in LATEST_WORDS:
            found = self._runs_where("", (), 1)
        elif text.isdecimal():
            number = int(text)  # beyond SQLite's integers: no run has it
            found = self._runs_where("WHERE id = ?", (number,)) if number <= MAX_RUN_ID else []
        else:
            found = self._runs_where("WHERE name = ?", (text,))
        if found:
            return found[0]
        total = self._db.execute("SELECT COUNT(*), MIN(id), MAX(id) FROM runs").fetchone()
        shown = printable(ref)
        if total[0] == 0:
            raise UserError(f"no run '{shown}': the store {self.path} has no runs yet (start one with `threadlab bench`)")
        raise UserError(
            f"no run '{shown}' in {self.path}; RUN is a run number ({total[1]}..{total[2]}), "
            "a run name, or 'latest' (see `threadlab runs`)"
        )

    def records(self, run_id: int) -> list[dict[str, Any]]:
        """The records of a run, in the order they were stored."""
        rows = self._db.execute("SELECT record FROM records WHERE run_id = ? ORDER BY seq", (run_id,))
        return [json.loads(row["record"]) for row in rows]


class NoStore(UserError):
    """The store file does not exist (a read command on a fresh machine)."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"no store at {path} yet (start a run with `threadlab bench`, or pass --db)")
        self.path = path


def _unwritable(path: Path) -> str | None:
    """Why this process cannot write the store (and the files SQLite keeps
    beside it), or None."""
    directory = path.absolute().parent
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "a read-only file system"
    except OSError:
        pass
    if not os.access(path, os.W_OK, effective_ids=True):
        return "no write permission on the file"
    if not os.access(directory, os.W_OK, effective_ids=True):
        return f"no write permission on its directory {directory}"
    return None


def _has_wal(path: Path) -> bool:
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False


def _is_readonly_error(error: sqlite3.Error) -> bool:
    return (getattr(error, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_READONLY


def _sqlite_reason(error: sqlite3.Error) -> str:
    if _is_readonly_error(error):
        return f"{error} (the store or its directory is read-only; reading commands work)"
    return str(error)


def validate_run_name(name: str) -> str:
    """A --name that can never be mistaken for a run number or 'latest'."""
    text = name.strip()
    if not text or len(text) > 100:
        raise UserError(f"--name {printable(name)!r}: expected 1 to 100 characters")
    if printable(text) != text:
        raise UserError(f"--name {printable(text)}: a name cannot hold control characters (escape sequences, "
                        "line breaks, tabs)")
    if text.isdigit() or text.lower() in LATEST_WORDS:
        raise UserError(f"--name {name}: a name cannot be a number or one of {', '.join(LATEST_WORDS)} (they name runs already)")
    return text
