"""threadlab-rm and libthreadlab-omp from Python: the one API through which
the command line (`threadlab rm`, `threadlab omp run`) and the
multiprogramming study start, query and stop the resource manager and put
OpenMP programs under it (docs/rm.md, docs/omp.md).

Everything goes through the daemon's own command line (`threadlab-rm
--status --json`, `--set`, `--stop`): the arena's layout is read by C code
only, so a layout change cannot make Python read garbage.

A manager is identified by its runtime directory (log, pid file, lock) and
its arena (a POSIX shared-memory object).  The standard directory goes
with the standard arena `/threadlab-rm-<uid>` (or $THREADLAB_RM_ARENA);
any other directory gets an arena named after it, so private managers (a
test's, a study's) never meet the user's.  Both are passed explicitly to
every process started here.

Another local user may have made the directory or the arena first (both
have predictable names in world-writable places): the daemon refuses
either unless it is the user's own and closed to others, and so does
everything here that reads the directory (docs/security.md).  Private
managers (Manager.start_private) are owned by this process: they stop,
and remove their arena and directory, when it exits however it exits.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Mapping, NoReturn, Sequence

from threadlab import vocabulary
from threadlab.native import discovery, process
from threadlab.errors import ThreadlabError, UserError

RM_PROGRAM = "threadlab-rm"
SHIM_LIBRARY = "libthreadlab-omp.so"
ULT_LIBRARY = "libthreadlab-gomp.so"  # libgomp's ABI on user-level threads (docs/omp-ult.md)
LAUNCHER = "threadlab-omp-run"  # the runtime's environment, then exec (native/omp/launch.c)
# `omp run --runtime`: the library that makes an OpenMP program follow the
# manager (native/omp/env.h), the first the default.
OMP_RUNTIMES: dict[str, str] = {
    "shim": f"libgomp with threadlab's shim ({SHIM_LIBRARY}) preloaded",
    "ult": f"{ULT_LIBRARY} in place of libgomp: OpenMP on user-level threads",
}
OMP_RUNTIME_LIBRARIES: dict[str, str] = {"shim": SHIM_LIBRARY, "ult": ULT_LIBRARY}
DEFAULT_OMP_RUNTIME = "shim"
DIR_ENV = "THREADLAB_RM_DIR"
ARENA_ENV = "THREADLAB_RM_ARENA"
SHM_DIR = Path("/dev/shm")  # where glibc's shm_open keeps the arena

# The daemon's accepted values (native/include/threadlab/rm.h, daemon.c).
POLICIES: tuple[str, ...] = ("timeshare", "equipartition", "static")
POLICY_ALIASES: dict[str, str] = {"equi": "equipartition", "dss": "equipartition", "ts": "timeshare",
                                  "dss-ts": "timeshare"}
DAEMON_DEFAULT_POLICY = "timeshare"
QUANTUM_MS_MIN, QUANTUM_MS_MAX = 1, 60000
DEFAULT_QUANTUM_MS = 100
SLOTS_MIN, SLOTS_MAX = 1, 4096
# --other-load: CPUs busy with work the manager does not manage are
# withheld from its programs (count, the daemon's default) or not (ignore).
OTHER_LOAD: tuple[str, ...] = ("count", "ignore")
LOG_MAX_KB_MIN, LOG_MAX_KB_MAX = 4, 1048576
MAX_CPUS = 1024
EXIT_NOT_RUNNING = 3  # the daemon's status for --status/--set without a manager


_START_TIMEOUT_S = 15.0
_QUERY_TIMEOUT_S = 15.0
_LOG_TAIL_LINES = 12


# ------------------------------------------------------------- locations


def _private(path: str) -> bool:
    """path is a directory of this user that nobody else may enter."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def standard_runtime_dir() -> Path:
    """The directory the daemon uses when $THREADLAB_RM_DIR is not set:
    $XDG_RUNTIME_DIR/threadlab when $XDG_RUNTIME_DIR is a private directory
    of this user, else /tmp/threadlab-<uid> (native/rm/rundir.c)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and xdg.startswith("/") and _private(xdg):
        return Path(xdg) / "threadlab"
    return Path(f"/tmp/threadlab-{os.getuid()}")


def runtime_dir() -> Path:
    """The manager's directory (log, pid file, lock), as the daemon picks it:
    $THREADLAB_RM_DIR, else $XDG_RUNTIME_DIR/threadlab, else
    /tmp/threadlab-<uid>."""
    override = os.environ.get(DIR_ENV)
    return Path(override) if override else standard_runtime_dir()


def resolve_dir(directory: Path | str | None) -> Path:
    return Path(directory).expanduser().absolute() if directory is not None else runtime_dir().absolute()


def private_prefix(owner: int | None = None) -> str:
    """The name private managers' directories and arenas start with:
    threadlab-rm-<uid>-pid<owner>- (native/rm/private.c)."""
    return f"threadlab-rm-{os.getuid()}-pid{os.getpid() if owner is None else owner}-"


def _private_owner(name: str) -> int | None:
    """The owner pid a private manager's directory or arena name holds."""
    found = re.fullmatch(rf"threadlab-rm-{os.getuid()}-pid([1-9][0-9]*)-.+", name)
    return int(found.group(1)) if found else None


def arena_name(directory: Path | str | None = None) -> str:
    """The shared-memory arena of the manager of `directory` (default: the
    runtime directory).  $THREADLAB_RM_ARENA names it for the runtime
    directory the environment designates; otherwise the standard directory
    has the standard arena, a private manager's directory an arena of its
    own name, and any other directory one named after its path (docs/rm.md,
    "Finding the manager")."""
    where = resolve_dir(directory)
    explicit = os.environ.get(ARENA_ENV)
    if explicit and where == runtime_dir().absolute():
        return explicit if explicit.startswith("/") else "/" + explicit
    if where == standard_runtime_dir().absolute():
        return f"/threadlab-rm-{os.getuid()}"
    if _private_owner(where.name):
        return "/" + where.name
    digest = hashlib.sha1(str(where).encode()).hexdigest()[:12]
    return f"/threadlab-rm-{os.getuid()}-{digest}"


# ----------------------------------------------------------- validation


def policy_choices() -> str:
    """The accepted policy names, for help and errors."""
    aliases = ", ".join(f"{alias} = {name}" for alias, name in POLICY_ALIASES.items())
    return f"{', '.join(POLICIES)} ({aliases})"


def check_policy(policy: str, what: str = "policy") -> str:
    """The daemon's name of a policy (aliases allowed), or a UserError
    naming `what` (an option, in the command line)."""
    name = POLICY_ALIASES.get(policy, policy)
    if name not in POLICIES:
        raise UserError(f"{what} {policy}: expected one of {policy_choices()}")
    return name


def _in_range(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_quantum(quantum_ms: int) -> int:
    if not _in_range(quantum_ms, QUANTUM_MS_MIN, QUANTUM_MS_MAX):
        raise UserError(f"quantum {quantum_ms!r} ms: expected an integer from {QUANTUM_MS_MIN} to {QUANTUM_MS_MAX}")
    return quantum_ms


def cpu_list(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the daemon's --cpus syntax)."""
    values = sorted(set(cpus))
    if not values:
        raise UserError("cpus: the list is empty (expected CPU numbers such as 0-3,6)")
    for cpu in values:
        if not _in_range(cpu, 0, MAX_CPUS - 1):
            raise UserError(f"cpus: CPU {cpu!r}: expected CPU numbers from 0 to {MAX_CPUS - 1}")
    return vocabulary.format_ranges(values)


def parse_cpu_list(text: str) -> list[int]:
    """"0-2,5" -> [0, 1, 2, 5]; a UserError naming the bad part."""
    try:
        return vocabulary.parse_ranges(text.split(","), 0, MAX_CPUS - 1)
    except ValueError as bad:
        part = str(bad)
        raise UserError(f"--cpus {text}: bad part {part or '(empty)'!r}; expected a CPU list such as "
                        f"0-3,6 (CPUs 0 to {MAX_CPUS - 1})") from None


# ------------------------------------------------------- the directory


def open_directory(directory: Path, create: bool = False) -> int:
    """A descriptor of the manager's directory, opened without following a
    symbolic link and checked to be this user's, mode 0700, as the daemon
    checks it (native/rm/rundir.c); with create it is made first (its
    parents as usual, itself mode 0700).  ThreadlabError naming it, its
    owner and mode, and what to do; FileNotFoundError when it does not
    exist (without create)."""
    if create:
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir(mode=0o700, exist_ok=True)
        except OSError as error:
            raise ThreadlabError(f"cannot create the manager's directory {directory}: {error.strerror}") from None
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as error:
        try:
            info = os.lstat(directory)
        except OSError:
            raise ThreadlabError(f"cannot open the manager's directory {directory}: {error.strerror}") from None
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a file"
        raise ThreadlabError(f"refusing the directory {directory}: it is {kind} (owner uid {info.st_uid}, mode "
                             f"{stat.S_IMODE(info.st_mode):04o}), not a directory; remove it, or choose another "
                             "directory (--dir)") from None
    info = os.fstat(fd)
    problem = None
    if info.st_uid != os.geteuid():
        problem = (f"it belongs to uid {info.st_uid} (mode {stat.S_IMODE(info.st_mode):04o}), not to this user "
                   f"(uid {os.geteuid()}); someone else may have made it to redirect the manager's files: remove "
                   "it (as its owner or root), or choose another directory (--dir)")
    elif info.st_mode & 0o077:
        problem = (f"its mode is {stat.S_IMODE(info.st_mode):04o}, so other users may enter it; the manager's "
                   "directory must be mode 0700: remove it, or `chmod 700` it if nobody else could have put "
                   "files in it")
    if problem:
        os.close(fd)
        raise ThreadlabError(f"refusing the directory {directory}: {problem}")
    return fd


# ----------------------------------------------------------- the daemon


def daemon_env(directory: Path) -> dict[str, str]:
    """This process's environment with the manager of `directory` named."""
    env = dict(os.environ)
    env[DIR_ENV] = str(directory)
    env[ARENA_ENV] = arena_name(directory)
    return env


def daemon_args(
    *,
    policy: str | None = None,
    quantum_ms: int = DEFAULT_QUANTUM_MS,
    cpus: Sequence[int] | None = None,
    slots: int | None = None,
    reset: bool = False,
    owner: int | None = None,
    other_load: str | None = None,
    log_max_kb: int | None = None,
) -> list[str]:
    """The daemon's options that start a manager so (Manager.start; `threadlab
    rm start --foreground`), each value checked (UserError).  owner: the
    process whose exit stops the manager (a private one); other_load: count
    or ignore the CPUs other work keeps busy (None: the daemon's default,
    count); log_max_kb: rm.log's size before it is rotated."""
    args: list[str] = []
    if policy is not None:
        args += ["--policy", check_policy(policy)]
    args += ["--quantum-ms", str(check_quantum(quantum_ms))]
    if cpus is not None:
        args += ["--cpus", cpu_list(cpus)]
    if slots is not None:
        if not _in_range(slots, SLOTS_MIN, SLOTS_MAX):
            raise UserError(f"slots {slots!r}: expected an integer from {SLOTS_MIN} to {SLOTS_MAX}")
        args += ["--slots", str(slots)]
    if reset:
        args.append("--reset")
    if owner is not None:
        args += ["--owner", str(owner)]
    if other_load is not None:
        if other_load not in OTHER_LOAD:
            raise UserError(f"other load {other_load!r}: expected {' or '.join(OTHER_LOAD)}")
        args += ["--other-load", other_load]
    if log_max_kb is not None:
        if not _in_range(log_max_kb, LOG_MAX_KB_MIN, LOG_MAX_KB_MAX):
            raise UserError(f"log size {log_max_kb!r} KiB: expected an integer from {LOG_MAX_KB_MIN} to "
                            f"{LOG_MAX_KB_MAX}")
        args += ["--log-max-kb", str(log_max_kb)]
    return args


def _call(directory: Path | None, *args: str, timeout: float = _QUERY_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """The daemon's command line (--status, --set, --stop, --sweep, or a
    start: its first process returns once the manager it forked is ready;
    the manager, in a session of its own, outlives the call)."""
    program = discovery.find_one(RM_PROGRAM)
    try:
        return process.run([program, *args], timeout_s=timeout, detaches=True,
                           env=daemon_env(directory) if directory is not None else None)
    except subprocess.TimeoutExpired:
        raise ThreadlabError(f"{RM_PROGRAM} {' '.join(args)} did not answer within {timeout:g} s") from None
    except OSError as error:
        raise ThreadlabError(f"cannot start {program}: {error.strerror}") from None


def _message(done: subprocess.CompletedProcess[str]) -> str:
    """The daemon's message on stderr in one line, without its prefix."""
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    text = ": ".join(lines) if lines else f"exit status {done.returncode}"
    return text.replace(f"{RM_PROGRAM}: ", "")


def log_path(directory: Path | str | None = None) -> Path:
    return resolve_dir(directory) / "rm.log"


def log_tail(directory: Path | str | None = None, lines: int = _LOG_TAIL_LINES) -> list[str]:
    """The end of the manager's log; nothing when the directory or the log
    is not safe to read (another user's, a symbolic link)."""
    try:
        fd = open_directory(resolve_dir(directory))
    except (OSError, ThreadlabError):
        return []
    try:
        log = os.open("rm.log", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return []
    finally:
        os.close(fd)
    with os.fdopen(log, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return []
        text = file.read().decode(errors="replace")
    return text.splitlines()[-lines:]


def status(directory: Path | str | None = None) -> dict[str, Any]:
    """`threadlab-rm --status --json` of the manager of `directory`: always
    a dict; "running" says whether a live manager owns the arena."""
    where = resolve_dir(directory)
    done = _call(where, "--status", "--json")
    if done.returncode not in (0, EXIT_NOT_RUNNING):
        raise ThreadlabError(f"{RM_PROGRAM} --status: {_message(done)}")
    try:
        value = json.loads(done.stdout)
    except json.JSONDecodeError as error:
        raise ThreadlabError(f"{RM_PROGRAM} --status --json printed no JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise ThreadlabError(f"{RM_PROGRAM} --status --json printed {type(value).__name__}, not an object")
    value["directory"] = str(where)
    return value


def stop_manager(directory: Path | str | None = None, timeout: float = 5.0) -> tuple[int | None, str]:
    """Stops the manager of `directory` (SIGTERM; it removes its arena, and a
    private one its directory); with none running, removes the arena a
    killed one left.  The daemon decides which process is the manager: the
    one its pid file names, checked to be a threadlab-rm of this user
    holding the directory's lock, never a pid read from the arena.  Returns
    (the pid stopped, or None when none ran; the daemon's line).
    ThreadlabError when it outlives the timeout or something is refused."""
    if not 0 < timeout <= 3600:
        raise UserError(f"timeout {timeout!r} s: expected seconds from 0 to 3600")
    done = _call(resolve_dir(directory), "--stop", "--timeout", f"{timeout:g}", timeout=timeout + _QUERY_TIMEOUT_S)
    if done.returncode not in (0, EXIT_NOT_RUNNING):
        raise ThreadlabError(f"{RM_PROGRAM} --stop: {_message(done)}")
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    stopped = re.search(r"stopped \(pid (\d+)\)", line) if done.returncode == 0 else None
    return (int(stopped.group(1)) if stopped else None), line


def sweep() -> list[str]:
    """Removes what private managers whose owner is gone left (`threadlab-rm
    --sweep`): one line per object removed."""
    done = _call(None, "--sweep")
    if done.returncode != 0:
        raise ThreadlabError(f"{RM_PROGRAM} --sweep: {_message(done)}")
    return [line for line in done.stdout.splitlines() if line.strip()]


def _process_is_manager(pid: int) -> bool:
    """pid is a live threadlab-rm of this user (a zombie is not: the daemon
    is detached, and where nothing reaps orphans it stays one)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
        owner = os.stat(f"/proc/{pid}").st_uid
        program = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False
    rest = state.rpartition(")")[2]
    return (owner == os.geteuid() and rest.split()[:1] != ["Z"]
            and os.path.basename(program).removesuffix(" (deleted)") == RM_PROGRAM)


class Manager:
    """A running threadlab-rm.  Use as a context manager to stop it on exit:

        with Manager.start(directory=tmp, policy="equipartition") as rm:
            argv, env = omp_launch(["./cg"], directory=rm.directory)
    """

    def __init__(self, directory: Path, pid: int) -> None:
        self.directory = directory
        self.arena = arena_name(directory)
        self.pid = pid

    def __repr__(self) -> str:
        return f"Manager(pid={self.pid}, directory={str(self.directory)!r}, arena={self.arena!r})"

    # -- life cycle

    @classmethod
    def start(
        cls,
        *,
        directory: Path | None = None,
        policy: str | None = None,
        quantum_ms: int = DEFAULT_QUANTUM_MS,
        cpus: Sequence[int] | None = None,
        slots: int | None = None,
        reset: bool = False,
        owner: int | None = None,
        other_load: str | None = None,
        log_max_kb: int | None = None,
    ) -> Manager:
        """Starts the daemon detached and returns once it manages the arena.
        policy None keeps the daemon's default (timeshare); cpus None: every
        CPU this process may use; slots None: the daemon's 64 (or the arena's
        size when it adopts one); reset: replace an arena left by another
        version; owner: a process whose exit stops it (start_private);
        other_load, log_max_kb: daemon_args().
        Raises ThreadlabError with the daemon's reason and the tail of its
        log when it cannot start (one is running already, the directory or
        the arena is another user's, ...)."""
        where = resolve_dir(directory)
        args = daemon_args(policy=policy, quantum_ms=quantum_ms, cpus=cpus, slots=slots, reset=reset, owner=owner,
                           other_load=other_load, log_max_kb=log_max_kb)
        if cpus is not None:
            # The daemon inherits this process's affinity: refuse the rest
            # here, as a usage error, before anything starts.
            allowed = os.sched_getaffinity(0)
            outside = sorted(set(cpus) - allowed)
            if outside:
                raise UserError(f"cpus {cpu_list(cpus)}: CPU {outside[0]} is not available to this process "
                                f"(available: {cpu_list(sorted(allowed))})")
        os.close(open_directory(where, create=True))
        # The daemon forks; its first process exits once the manager is
        # ready (or has failed), printing "threadlab-rm started (pid N)".
        done = _call(where, *args, timeout=_START_TIMEOUT_S)
        pid = _started_pid(done.stdout)
        if done.returncode != 0 or pid is None:
            tail = log_tail(where)
            shown = ("\n  log " + str(log_path(where)) + ":\n    " + "\n    ".join(tail)) if tail else ""
            raise ThreadlabError(f"threadlab-rm did not start: {_message(done)}{shown}")
        return cls(where, pid)

    @classmethod
    def start_private(
        cls,
        *,
        policy: str | None = None,
        quantum_ms: int = DEFAULT_QUANTUM_MS,
        cpus: Sequence[int] | None = None,
        slots: int | None = None,
        other_load: str | None = None,
    ) -> Manager:
        """A manager of this process's own (a study's, a benchmark's): in a
        new directory made by mkdtemp in the temporary directory, with an
        arena of the same name, stopped -- arena and directory removed --
        when this process exits, however it exits.  What private managers
        of processes that are gone left is removed first, each said on
        stderr."""
        for line in sweep():
            print(f"threadlab: {line}", file=sys.stderr)
        try:
            where = Path(tempfile.mkdtemp(prefix=private_prefix()))
        except OSError as error:
            raise ThreadlabError(f"cannot create a private manager's directory in {tempfile.gettempdir()}: "
                                 f"{error.strerror}") from None
        try:
            return cls.start(directory=where, policy=policy, quantum_ms=quantum_ms, cpus=cpus, slots=slots,
                             owner=os.getpid(), other_load=other_load)
        except BaseException:
            # The daemon removes what it made when it fails; the directory
            # made here stays only when it never got that far.
            try:
                where.rmdir()
            except OSError:
                pass
            raise

    @classmethod
    def running(cls, directory: Path | None = None) -> Manager | None:
        """The live manager of `directory` (default: the runtime directory),
        or None."""
        where = resolve_dir(directory)
        state = status(where)
        if not state.get("running"):
            return None
        return cls(where, int(state["manager"]["pid"]))

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the manager (SIGTERM; it removes its arena, and a private
        one its directory).  When it was killed instead, removes what it
        left, so that nothing of it stays in /dev/shm (stop_manager()).
        ThreadlabError when it outlives the timeout."""
        stop_manager(self.directory, timeout)

    def close(self) -> None:
        """Stops it, or kills it when it does not stop, and removes what it
        leaves: for the `finally` of whoever started it."""
        try:
            self.stop()
        except ThreadlabError:
            self.kill()
            try:
                self.stop()
            except ThreadlabError:
                pass

    def kill(self) -> None:
        """SIGKILL, for a manager that does not stop (and for tests of a
        manager's death); the arena stays, marked by a dead manager."""
        if _process_is_manager(self.pid):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def alive(self) -> bool:
        return _process_is_manager(self.pid)

    def __enter__(self) -> Manager:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    # -- queries and control

    def status(self) -> dict[str, Any]:
        """The daemon's --status --json: arena, manager, counters, apps."""
        return status(self.directory)

    def set(self, policy: str | None = None, quantum_ms: int | None = None) -> None:
        """Changes the policy and/or the quantum while it runs; returns once
        the manager applied the change."""
        args: list[str] = []
        if policy is not None:
            args.append(f"policy={check_policy(policy)}")
        if quantum_ms is not None:
            args.append(f"quantum_ms={check_quantum(quantum_ms)}")
        if not args:
            raise UserError("set: nothing to change (give a policy and/or a quantum)")
        done = _call(self.directory, "--set", *args)
        if done.returncode == EXIT_NOT_RUNNING:
            raise ThreadlabError(f"no manager is running (directory {self.directory})")
        if done.returncode != 0:
            raise ThreadlabError(f"{RM_PROGRAM} --set: {_message(done)}")


def _started_pid(stdout: str) -> int | None:
    for line in stdout.splitlines():
        if "started (pid " in line:
            try:
                return int(line.rsplit("(pid ", 1)[1].rstrip(")\n "))
            except ValueError:
                return None
    return None


# -------------------------------------------------------------- the shim


def preload_environment(library: Path | None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (None: threadlab's environment) with LD_PRELOAD naming
    `library` first, then what it preloaded already less threadlab's OpenMP
    runtimes (the shim, libthreadlab-gomp: one from another build
    interposes the same entries), the rule of threadlab-omp-run
    (native/omp/env.c); library None: those runtimes removed alone."""
    env = dict(os.environ if base is None else base)
    kept = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":")
            if p and Path(p).name not in OMP_RUNTIME_LIBRARIES.values()]
    preload = ([str(library)] if library is not None else []) + kept
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    else:
        env.pop("LD_PRELOAD", None)
    return env


def check_omp_runtime(runtime: str, what: str = "--runtime") -> str:
    """An `omp run` runtime (OMP_RUNTIMES), or a UserError naming it."""
    if runtime not in OMP_RUNTIMES:
        accepted = "; ".join(f"{name} ({meaning})" for name, meaning in OMP_RUNTIMES.items())
        raise UserError(f"{what} {runtime}: unknown runtime; expected {accepted}")
    return runtime


def omp_launch(
    command: Sequence[str],
    base: Mapping[str, str] | None = None,
    *,
    directory: Path | None = None,
    pin: bool = False,
    quiet: bool = False,
    runtime: str = DEFAULT_OMP_RUNTIME,
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run `command` (an OpenMP program built
    with gcc/g++/gfortran, and its arguments) under the manager of
    `directory`: threadlab-omp-run, which sets the runtime's environment
    and execs the program (native/omp/env.c).  runtime "shim": the shim
    preloaded over libgomp, OMP_DYNAMIC=true with the user's value kept
    for when it runs unmanaged, a short spin unless the user chose a wait
    policy (docs/omp.md); "ult": libthreadlab-gomp preloaded in place of
    libgomp (docs/omp-ult.md).  Here the manager is named: its directory
    and arena, whichever `directory` (None: the runtime directory) is.
    With pin (shim only) the team threads are pinned to the allocated
    CPUs; with quiet the runtime prints no notices.  UserError for an
    unknown runtime or pin with ult; ThreadlabError when the launcher or
    the runtime's library is not built (saying how to build it)."""
    check_omp_runtime(runtime)
    if pin and runtime != "shim":
        raise UserError(f"--pin applies to --runtime shim only ({ULT_LIBRARY} binds its virtual processors "
                        "with OMP_PROC_BIND)")
    launcher = discovery.find_one(LAUNCHER)
    discovery.find_one(OMP_RUNTIME_LIBRARIES[runtime])  # the launcher's own message is less helpful
    env = dict(os.environ if base is None else base)
    where = resolve_dir(directory)
    env[DIR_ENV] = str(where)
    env[ARENA_ENV] = arena_name(where)
    options = (["--runtime", runtime] if runtime != DEFAULT_OMP_RUNTIME else []) + (["--pin"] if pin else []) \
        + (["--quiet"] if quiet else [])
    return [str(launcher), *options, "--", *command], env


OMP_RUN_USAGE = "threadlab omp run [--runtime shim|ult] [--pin] -- PROGRAM [ARGS ...]"


def omp_run(command: Sequence[str], *, directory: Path | None = None, pin: bool = False,
            quiet: bool = False, runtime: str = DEFAULT_OMP_RUNTIME) -> NoReturn:
    """`threadlab omp run`: threadlab becomes the launcher running `command`
    (PROGRAM [ARGS ...], PROGRAM found on $PATH) under the manager of
    `directory` on `runtime` (omp_launch).  UserError before anything runs
    when PROGRAM is not there or the runtime is unknown; ThreadlabError
    when the launcher or the runtime's library is not built."""
    program = process.user_program(command, OMP_RUN_USAGE)
    where = resolve_dir(directory)
    try:
        os.close(open_directory(where))
    except FileNotFoundError:
        pass
    except ThreadlabError as refused:  # no manager can run there: the program runs unmanaged, told why
        if not quiet:
            print(f"threadlab: {refused}; the program runs unmanaged", file=sys.stderr)
    process.replace_with(*omp_launch(program, directory=directory, pin=pin, quiet=quiet, runtime=runtime))
