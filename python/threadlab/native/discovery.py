"""Where the native programs and libraries of a build are, and how a
program is asked a question (docs/native-protocol.md).

One way to find anything the build made: find(), by name (threadlab-rm,
threadlab-npb, libthreadlab-omp.so) or by a name ending in '*' (every
threadlab-bench-* or threadlab-app-* program).  It looks in
$THREADLAB_NATIVE_DIR alone when that is set, else in the source tree's
build/bin, then on $PATH; libraries in a directory's ../lib, where CMake
puts them, or beside the programs.

One way to ask a program: query() runs it with a question (--list, --env,
--options) as a child of threadlab.native.process and returns the lines
it printed; query_json() parses them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from threadlab.errors import ThreadlabError
from threadlab.native import process

NATIVE_DIR_ENV = "THREADLAB_NATIVE_DIR"
# The program families the front end runs (docs/native-protocol.md).
BENCH_PREFIX = "threadlab-bench-"
APP_PREFIX = "threadlab-app-"
# A question answers without measuring; a program that takes longer is broken.
QUERY_TIMEOUT_S = 60.0


def repository_root() -> Path:
    """The source tree this package lives in (python/threadlab/native/)."""
    return Path(__file__).resolve().parents[3]


def search_dirs() -> list[Path]:
    """Where programs are looked for, in order: $THREADLAB_NATIVE_DIR alone
    when set, else the source tree's build/bin, then $PATH."""
    override = os.environ.get(NATIVE_DIR_ENV)
    if override:
        return [Path(override)]
    dirs = [repository_root() / "build" / "bin"]
    dirs += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    return dirs


def _is_library(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


def _usable(path: Path, library: bool) -> bool:
    return path.is_file() and (library or os.access(path, os.X_OK))


def find(name: str, what: str | None = None) -> list[Path]:
    """The build's program or library `name`, or, for a name ending in
    '*', every program so named in the first directory that holds any
    (sorted).  ThreadlabError saying where it looked and how to build it
    when there is none; `what` names a family in that message."""
    library = _is_library(name)
    searched: list[Path] = []
    for directory in search_dirs():
        places = [directory.parent / "lib", directory] if library else [directory]
        for place in places:
            searched.append(place)
            if name.endswith("*"):
                found = sorted(p for p in place.glob(name) if _usable(p, library)) if place.is_dir() else []
            else:
                found = [place / name] if _usable(place / name, library) else []
            if found:
                return [Path(os.path.abspath(p)) for p in found]  # no bin/../lib in LD_PRELOAD
    where = ", ".join(str(p) for p in searched[: 4 if library else 2]) + (" and $PATH" if len(searched) > 4 else "")
    hint = (f"${NATIVE_DIR_ENV} is set: point it at a build's bin directory" if os.environ.get(NATIVE_DIR_ENV)
            else f"build {'them' if name.endswith('*') else 'it'} with `make`, or set ${NATIVE_DIR_ENV} to a "
            "build's bin directory")
    shown = f"no {what} ({name})" if what else f"{name} not found"
    raise ThreadlabError(f"{shown} (looked in {where}); {hint}")


def find_one(name: str) -> Path:
    """The build's program or library `name` (find() of one name)."""
    return find(name)[0]


def benchmark_programs() -> list[Path]:
    """Every benchmark program (threadlab-bench-*) of the build."""
    return find(BENCH_PREFIX + "*", "native benchmark programs")


def query(program: Path, *args: str, timeout_s: float = QUERY_TIMEOUT_S) -> list[str]:
    """The non-empty lines a program prints to a question (--list, --env,
    --options ...): ThreadlabError when it cannot start, does not answer in
    time, or fails (with the last line of its stderr)."""
    command = f"{program.name} {' '.join(args)}"
    try:
        done = process.run([program, *args], timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        raise ThreadlabError(f"{command} did not answer within {timeout_s:.0f} s") from None
    except OSError as error:
        raise ThreadlabError(f"cannot start {program}: {error.strerror}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ThreadlabError(f"{command} failed with exit status {done.returncode}: {last}")
    return [line for line in done.stdout.splitlines() if line.strip()]


def query_json(program: Path, *args: str, timeout_s: float = QUERY_TIMEOUT_S) -> list[dict[str, Any]]:
    """query(), each line a JSON object."""
    option = " ".join(args)
    objects = []
    for number, line in enumerate(query(program, *args, timeout_s=timeout_s), start=1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise ThreadlabError(f"{program.name} {option}, line {number}: not JSON ({error.msg})") from None
        if not isinstance(value, dict):
            raise ThreadlabError(f"{program.name} {option}, line {number}: expected a JSON object")
        objects.append(value)
    return objects
