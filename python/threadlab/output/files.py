"""Files threadlab writes: whole or not at all, never onto its store, never
through another user's symbolic link (docs/security.md, "Output files").

- A regular file is written to a temporary file beside it (a random name,
  created with O_EXCL|O_NOFOLLOW, so nothing there can be taken over),
  flushed to disk, then renamed onto the target: a reader sees the old
  file or the new one, never half of one.  A full disk, a Ctrl-C or any
  other error removes the temporary file and leaves the target as it was.
- A target that is not a regular file (a FIFO, /dev/null, a terminal) is
  written directly: there is nothing to rename.
- A target that is the store, or one of its -wal, -shm or -journal files
  (the same device and inode, or the same name), is refused.
- A symbolic link given as the target is followed only when it belongs to
  the user or to root (as the kernel's fs.protected_symlinks does in
  shared directories); the file is then written where it points.
- Writing to a closed pipe raises OutputClosed.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
import sys
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from threadlab.errors import ThreadlabError, UserError

_T = TypeVar("_T", bound="_Transaction")
# The files SQLite keeps beside a database.
STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")
# Errors that are the request's fault (a path that cannot be written), as
# against the machine's (a full disk, an I/O error).
_USER_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EROFS, errno.ELOOP,
                errno.ENAMETOOLONG, errno.EEXIST, errno.EXDEV}


class OutputClosed(ThreadlabError):
    """The reader of our output went away (EPIPE): what it got is incomplete."""

    def __init__(self, what: str = "standard output") -> None:
        super().__init__(f"{what} was closed before everything was written (broken pipe); the output is incomplete")
        self.what = what


def write_error(what: str, error: OSError) -> ThreadlabError:
    """The one-line error for an output that could not be written."""
    if error.errno == errno.EPIPE:
        return OutputClosed(what)
    reason = error.strerror or str(error)
    kind = UserError if error.errno in _USER_ERRNOS else ThreadlabError
    return kind(f"{what}: cannot write: {reason}; nothing was written there")


def creation_mode() -> int:
    """The mode open() would give a new file: 0666 less the umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _owner_trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


# ------------------------------------------------------------- the store


class StoreGuard:
    """Refuses an output that is the store or one of SQLite's files beside it."""

    def __init__(self, store: Path | None) -> None:
        self.store = store
        self._ids: set[tuple[int, int]] = set()
        self._names: set[str] = set()
        if store is None:
            return
        for suffix in STORE_SUFFIXES:
            name = Path(os.path.realpath(f"{store}{suffix}"))
            self._names.add(str(name))
            try:
                info = os.stat(name)
            except OSError:
                continue
            self._ids.add((info.st_dev, info.st_ino))

    def _refuse(self, what: str) -> UserError:
        return UserError(f"{what}: that is the store {self.store} (or a file SQLite keeps beside it); threadlab "
                         "never writes over its store: give another file")

    def check(self, target: Path | int, what: str) -> None:
        """target: a path (followed), or an open file descriptor."""
        if self.store is None:
            return
        if not isinstance(target, int) and os.path.realpath(target) in self._names:
            raise self._refuse(what)
        try:
            info = os.stat(target)
        except OSError:
            return
        if (info.st_dev, info.st_ino) in self._ids:
            raise self._refuse(what)


# ------------------------------------------------------------ directories


def follow_trusted_link(path: Path, what: str) -> Path:
    """path itself, or where it points when it is a symbolic link of the
    user's or root's; another user's link is refused."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as error:
        raise write_error(what, error) from None
    if not stat.S_ISLNK(info.st_mode):
        return path
    if not _owner_trusted(info.st_uid):
        raise UserError(f"{what}: a symbolic link owned by another user (uid {info.st_uid}); threadlab does not "
                        "write through it: remove it or give another path")
    return Path(os.path.realpath(path))


class Directory:
    """A directory opened once (O_DIRECTORY|O_NOFOLLOW): every file made in
    it is made relative to it, so renaming a directory or planting a link
    on the way cannot redirect a later write."""

    def __init__(self, path: Path, what: str, parent: Directory | None = None) -> None:
        self.path = path
        self.what = what
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            if parent is None:
                self.fd = os.open(path, flags)
            else:
                self.fd = os.open(path.name, flags, dir_fd=parent.fd)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UserError(f"{what}: {path} is a symbolic link; threadlab does not write through it") from None
            raise write_error(what, error) from None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def sync(self) -> None:
        try:
            os.fsync(self.fd)
        except OSError:
            pass  # some file systems cannot sync a directory; the rename is still atomic

    def subdirectory(self, name: str) -> Directory:
        """The directory `name` inside this one, never a link to elsewhere."""
        return Directory(self.path / name, self.what, parent=self)

    def write(self, name: str, data: str | bytes) -> None:
        """Writes a whole file named `name` atomically."""
        with AtomicFile(self, name, binary=isinstance(data, bytes)) as out:
            out.write(data)


def _check_replaceable(directory: Directory, name: str, existing: os.stat_result) -> None:
    """In a sticky directory (/tmp) only the owner may replace a file: say
    so now rather than after a whole run."""
    euid = os.geteuid()
    if euid == 0 or existing.st_uid == euid:
        return
    info = os.fstat(directory.fd)
    if info.st_mode & stat.S_ISVTX and info.st_uid != euid:
        raise UserError(f"{directory.what}: {directory.path / name} belongs to another user (uid {existing.st_uid}) "
                        "in a shared directory; it cannot be replaced: give another path")


class _Transaction:
    """`with` commits on success and aborts on any exception (Ctrl-C too)."""

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


class AtomicFile(_Transaction):
    """A file written to a temporary name beside the target and renamed
    onto it by commit(); abort() (or an exception in a with block) removes
    the temporary file.  The target keeps its permission bits when it
    exists, and gets open()'s (0666 less the umask) when it is new."""

    def __init__(self, directory: Directory, name: str, *, binary: bool = False) -> None:
        self.directory = directory
        self.name = name
        try:
            existing = directory.lstat(name)
        except OSError as error:
            raise write_error(directory.what, error) from None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise UserError(f"{directory.what}: {directory.path / name} is a directory")
        ours = existing is not None and stat.S_ISREG(existing.st_mode) and existing.st_uid == os.geteuid()
        if existing is not None and not ours:
            _check_replaceable(directory, name, existing)
        # A file of ours keeps its permission bits; another's are not taken over.
        self.mode = stat.S_IMODE(existing.st_mode) if ours else creation_mode()  # type: ignore[union-attr]
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(100):
            self.temporary = f".{name}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(self.temporary, flags, 0o600, dir_fd=directory.fd)
                break
            except FileExistsError:
                continue
            except OSError as error:
                raise write_error(directory.what, error) from None
        else:  # pragma: no cover - 100 collisions of 48 random bits
            raise ThreadlabError(f"{directory.what}: cannot create a temporary file in {directory.path}")
        self.stream: IO[str] | IO[bytes] = (os.fdopen(fd, "wb") if binary
                                            else os.fdopen(fd, "w", encoding="utf-8", newline=""))
        self.done = False

    def write(self, data: str | bytes) -> None:
        try:
            self.stream.write(data)  # type: ignore[arg-type]
        except OSError as error:
            self.abort()
            raise write_error(self.directory.what, error) from None

    def flush(self) -> None:
        """Hands what was written to the kernel (a later rename shows it)."""
        try:
            self.stream.flush()
        except OSError as error:
            self.abort()
            raise write_error(self.directory.what, error) from None

    def commit(self) -> None:
        """The data on disk, then the temporary file renamed onto the target."""
        if self.done:
            return
        try:
            self.stream.flush()
            os.fchmod(self.stream.fileno(), self.mode)
            os.fsync(self.stream.fileno())
            self.stream.close()
            os.replace(self.temporary, self.name, src_dir_fd=self.directory.fd, dst_dir_fd=self.directory.fd)
        except OSError as error:
            self.abort()
            raise write_error(self.directory.what, error) from None
        self.done = True
        self.directory.sync()

    def abort(self) -> None:
        """Removes the temporary file; the target stays as it was."""
        if self.done:
            return
        self.done = True
        try:
            self.stream.close()
        except OSError:
            pass
        try:
            os.unlink(self.temporary, dir_fd=self.directory.fd)
        except OSError:
            pass


# ---------------------------------------------------------- one output file


class OutputFile(_Transaction):
    """`-o FILE` / `--json FILE`: an atomic file (see above), or the stream
    itself for a FIFO, a device or standard output ('-')."""

    def __init__(self, target: str, what: str, store: Path | None) -> None:
        self.what = what
        self.atomic: AtomicFile | None = None
        self._directory: Directory | None = None
        self.stream: IO[str] | None = None
        self._owned = False
        guard = StoreGuard(store)
        if target == "-":
            guard.check(1, what)
            self.stream = sys.stdout
            return
        path = follow_trusted_link(Path(target).expanduser(), what)
        try:
            info: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            info = None
        except OSError as error:
            raise write_error(what, error) from None
        guard.check(path, what)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise UserError(f"{what}: {target} is a directory; give a file")
        if info is not None and not stat.S_ISREG(info.st_mode):
            try:  # a FIFO, a device: written as it is
                self.stream = open(path, "w", encoding="utf-8")
            except OSError as error:
                raise write_error(what, error) from None
            self._owned = True
            return
        self._directory = Directory(path.parent if str(path.parent) else Path("."), what)
        try:
            self.atomic = AtomicFile(self._directory, path.name)
        except BaseException:
            self._directory.close()
            raise

    def write(self, data: str) -> None:
        if self.atomic is not None:
            self.atomic.write(data)
            return
        assert self.stream is not None
        try:
            self.stream.write(data)
        except OSError as error:
            raise write_error(self.what, error) from None

    def flush(self) -> None:
        if self.atomic is not None:
            self.atomic.flush()
            return
        assert self.stream is not None
        try:
            self.stream.flush()
        except OSError as error:
            raise write_error(self.what, error) from None

    def commit(self) -> None:
        """Everything written is in place (the rename of an atomic file)."""
        try:
            if self.atomic is not None:
                self.atomic.commit()
            else:
                self.flush()
        finally:
            self._close()

    def abort(self) -> None:
        """The target stays as it was (an atomic file); a stream is left."""
        if self.atomic is not None:
            self.atomic.abort()
        self._close()

    def _close(self) -> None:
        if self._directory is not None:
            self._directory.close()
            self._directory = None
        if self._owned and self.stream is not None:
            try:
                self.stream.close()
            except OSError:
                pass
            self._owned = False


def write_output(target: str, data: str, what: str, store: Path | None) -> None:
    """Writes a whole output (`-o FILE`; '-' is standard output)."""
    with OutputFile(target, what, store) as out:
        out.write(data)


class RecordsOutput:
    """--json FILE: each record on its own line, written whole.  '-' (and a
    FIFO) gets each line as it is measured; a file is written beside itself
    and renamed onto FILE when the run ends (OutputFile), so FILE is never
    half a run, and never the store.  A write that fails (a closed pipe, a
    full disk) raises: the run stops and says why.  No target: nothing is
    written."""

    def __init__(self, target: str | None, store: Path) -> None:
        self.out = OutputFile(target, f"--json {target}", store) if target else None

    def write(self, record: dict[str, Any]) -> None:
        if self.out:
            self.out.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.out.flush()

    def close(self, keep: bool = True) -> None:
        """keep: the records written are whole (the run ended, however it
        ended); False after a write failed."""
        if self.out:
            if keep:
                self.out.commit()
            else:
                self.out.abort()

