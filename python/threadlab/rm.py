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
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Mapping, Sequence

from threadlab import native
from threadlab.errors import ThreadlabError, UserError

RM_PROGRAM = "threadlab-rm"
SHIM_LIBRARY = "libthreadlab-omp.so"
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
MAX_CPUS = 1024
EXIT_NOT_RUNNING = 3  # the daemon's status for --status/--set without a manager

# libgomp's idle team threads spin GOMP_SPINCOUNT times before sleeping
# (default 300,000: up to milliseconds of a CPU per wait).  Under the
# manager a thread left out of a shrunk team would burn a CPU another
# program owns, so the spin is cut to a few tens of microseconds: long
# enough to keep barriers of back-to-back regions cheap (OMP_WAIT_POLICY=
# passive would make every barrier a futex sleep), short enough to cost
# the owner of the CPU nothing noticeable.  A user's own OMP_WAIT_POLICY
# or GOMP_SPINCOUNT is left alone.
SPINCOUNT = "10000"

_START_TIMEOUT_S = 15.0
_QUERY_TIMEOUT_S = 15.0
_LOG_TAIL_LINES = 12


# ------------------------------------------------------------- locations


def standard_runtime_dir() -> Path:
    """The directory the daemon uses when $THREADLAB_RM_DIR is not set."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "threadlab" if xdg else Path(f"/tmp/threadlab-{os.getuid()}")


def runtime_dir() -> Path:
    """The manager's directory (log, pid file, lock), as the daemon picks it:
    $THREADLAB_RM_DIR, else $XDG_RUNTIME_DIR/threadlab, else
    /tmp/threadlab-<uid>."""
    override = os.environ.get(DIR_ENV)
    return Path(override) if override else standard_runtime_dir()


def resolve_dir(directory: Path | str | None) -> Path:
    return Path(directory).expanduser().absolute() if directory is not None else runtime_dir().absolute()


def arena_name(directory: Path | str | None = None) -> str:
    """The shared-memory arena of the manager of `directory` (default: the
    runtime directory).  $THREADLAB_RM_ARENA names it for the runtime
    directory the environment designates; otherwise the standard directory
    has the standard arena, and any other directory one named after it
    (docs/rm.md, "Finding the manager")."""
    where = resolve_dir(directory)
    explicit = os.environ.get(ARENA_ENV)
    if explicit and where == runtime_dir().absolute():
        return explicit if explicit.startswith("/") else "/" + explicit
    if where == standard_runtime_dir().absolute():
        return f"/threadlab-rm-{os.getuid()}"
    digest = hashlib.sha1(str(where).encode()).hexdigest()[:12]
    return f"/threadlab-rm-{os.getuid()}-{digest}"


def find_native(name: str) -> Path:
    """A native program (threadlab-rm, threadlab-omp-probe, ...) or library
    (libthreadlab-omp.so) of the build: in $THREADLAB_NATIVE_DIR or build/bin
    (programs also on $PATH); libraries in the directory's ../lib as CMake
    puts them, or beside the programs."""
    is_library = name.endswith(".so") or ".so." in name
    searched: list[Path] = []
    for directory in native.native_dirs():
        candidates = [directory.parent / "lib" / name, directory / name] if is_library else [directory / name]
        for path in candidates:
            searched.append(path)
            if path.is_file() and (is_library or os.access(path, os.X_OK)):
                return Path(os.path.abspath(path))  # no bin/../lib in LD_PRELOAD
    if is_library:
        where = ", ".join(str(p.parent) for p in searched[:4])
    else:
        where = ", ".join(str(p.parent) for p in searched[:2]) + (" and $PATH" if len(searched) > 2 else "")
    hint = (f"${native.NATIVE_DIR_ENV} is set: point it at a build's bin directory"
            if os.environ.get(native.NATIVE_DIR_ENV)
            else f"build it with `make`, or set ${native.NATIVE_DIR_ENV} to a build's bin directory")
    raise UserError(f"{name} not found (looked in {where}); {hint}")


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
    ranges: list[str] = []
    first = last = values[0]
    for cpu in values[1:] + [None]:  # type: ignore[list-item]
        if cpu is not None and cpu == last + 1:
            last = cpu
            continue
        ranges.append(str(first) if first == last else f"{first}-{last}")
        if cpu is not None:
            first = last = cpu
    return ",".join(ranges)


def parse_cpu_list(text: str) -> list[int]:
    """"0-2,5" -> [0, 1, 2, 5]; a UserError naming the bad part."""
    cpus: list[int] = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high) if high else int(low)
        except ValueError:
            first, last = -1, -1
        if not (0 <= first <= last < MAX_CPUS):
            raise UserError(f"--cpus {text}: bad part {part.strip() or '(empty)'!r}; expected a CPU list such as "
                            f"0-3,6 (CPUs 0 to {MAX_CPUS - 1})")
        cpus.extend(range(first, last + 1))
    return sorted(set(cpus))


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
) -> list[str]:
    """The daemon's options that start a manager so (Manager.start; `threadlab
    rm start --foreground`), each value checked (UserError)."""
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
    return args


def _call(directory: Path, *args: str, timeout: float = _QUERY_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    program = find_native(RM_PROGRAM)
    try:
        return subprocess.run([str(program), *args], capture_output=True, text=True, timeout=timeout,
                              env=daemon_env(directory), check=False, stdin=subprocess.DEVNULL)
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
    try:
        text = log_path(directory).read_text(errors="replace")
    except OSError:
        return []
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


def _process_is_manager(pid: int) -> bool:
    """pid is a live threadlab-rm (a zombie is not: the daemon is detached,
    and where nothing reaps orphans it stays one)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    name, _, rest = stat.partition("(")[2].rpartition(")")
    return name == RM_PROGRAM[:15] and rest.split()[:1] != ["Z"]


class Manager:
    """A running threadlab-rm.  Use as a context manager to stop it on exit:

        with Manager.start(directory=tmp, policy="equipartition") as rm:
            env = shim_environment(directory=rm.directory)
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
    ) -> Manager:
        """Starts the daemon detached and returns once it manages the arena.
        policy None keeps the daemon's default (timeshare); cpus None: every
        CPU this process may use; slots None: the daemon's 64 (or the arena's
        size when it adopts one); reset: replace an arena left by another
        version.  Raises ThreadlabError with the daemon's reason and the tail
        of its log when it cannot start (one is running already, ...)."""
        where = resolve_dir(directory)
        args = daemon_args(policy=policy, quantum_ms=quantum_ms, cpus=cpus, slots=slots, reset=reset)
        if cpus is not None:
            # The daemon inherits this process's affinity: refuse the rest
            # here, as a usage error, before anything starts.
            allowed = os.sched_getaffinity(0)
            outside = sorted(set(cpus) - allowed)
            if outside:
                raise UserError(f"cpus {cpu_list(cpus)}: CPU {outside[0]} is not available to this process "
                                f"(available: {cpu_list(sorted(allowed))})")
        try:
            where.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise ThreadlabError(f"cannot create the manager's directory {where}: {error.strerror}") from None
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
    def running(cls, directory: Path | None = None) -> Manager | None:
        """The live manager of `directory` (default: the runtime directory),
        or None."""
        where = resolve_dir(directory)
        state = status(where)
        if not state.get("running"):
            return None
        return cls(where, int(state["manager"]["pid"]))

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the manager (SIGTERM; it removes its arena).  When it was
        killed instead, removes the arena it left, so that nothing of it
        stays in /dev/shm.  ThreadlabError when it outlives the timeout."""
        if not 0 < timeout <= 3600:
            raise UserError(f"timeout {timeout!r} s: expected seconds from 0 to 3600")
        done = _call(self.directory, "--stop", "--timeout", f"{timeout:g}", timeout=timeout + _QUERY_TIMEOUT_S)
        if done.returncode != 0:
            raise ThreadlabError(f"{RM_PROGRAM} --stop: {_message(done)}")
        left = status(self.directory)
        if "manager" in left and not left["running"] and left["manager"]["pid"] == self.pid:
            # Programs still mapping it keep their mapping; the name goes.
            (SHM_DIR / self.arena.lstrip("/")).unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILL, for a manager that does not stop (and for tests of a
        manager's death); the arena stays, marked by a dead manager."""
        if _process_is_manager(self.pid):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def alive(self) -> bool:
        return _process_is_manager(self.pid)

    def __enter__(self) -> Manager:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        try:
            self.stop()
        except ThreadlabError:
            self.kill()

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


def shim_environment(
    base: Mapping[str, str] | None = None,
    *,
    directory: Path | None = None,
    pin: bool = False,
    quiet: bool = False,
) -> dict[str, str]:
    """The environment that puts an OpenMP program (gcc/gfortran, libgomp)
    under the manager of `directory`: the shim preloaded before any
    LD_PRELOAD already there, OMP_DYNAMIC=true (the user's setting kept in
    THREADLAB_OMP_DYNAMIC_ORIG: the shim restores it whenever the program
    runs unmanaged), a bounded spin (SPINCOUNT) unless the user chose a
    wait policy, the manager's directory and arena, and THREADLAB_OMP_PIN
    with pin.  With quiet the shim prints no notices."""
    env = dict(os.environ if base is None else base)
    shim = str(find_native(SHIM_LIBRARY))
    preload = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != shim]
    env["LD_PRELOAD"] = ":".join([shim, *preload])
    # Kept across a nested `omp run` (the inner one sees OMP_DYNAMIC=true).
    env.setdefault("THREADLAB_OMP_DYNAMIC_ORIG", env.get("OMP_DYNAMIC", "unset"))
    env["OMP_DYNAMIC"] = "true"
    if "OMP_WAIT_POLICY" not in env and "GOMP_SPINCOUNT" not in env:
        env["GOMP_SPINCOUNT"] = SPINCOUNT
    where = resolve_dir(directory)
    env[DIR_ENV] = str(where)
    env[ARENA_ENV] = arena_name(where)
    if pin:
        env["THREADLAB_OMP_PIN"] = "1"
    else:
        env.pop("THREADLAB_OMP_PIN", None)
    if quiet:
        env["THREADLAB_OMP_QUIET"] = "1"
    return env
