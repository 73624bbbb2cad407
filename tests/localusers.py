"""Throw-away local users for the tests that act as another user: an
attacker, and a victim whose default names (/tmp/threadlab-<uid>,
/dev/shm/threadlab-rm-<uid>) belong to nobody else on the machine.

Only root can make them (useradd); elsewhere every test that needs one is
skipped with the reason.  Each user gets a random name, and is removed with
whatever it left in /tmp and /dev/shm and every process it still runs
(found by uid, ended by pid).  A user runs programs through
subprocess's user/group switch (setresuid after fork), in "/" (a test's
temporary directory is root's, mode 0700)."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, NoReturn

import pytest

from conftest import REAL_NATIVE_DIR, REPO

TIMEOUT_S = 60.0


def unavailable() -> str | None:
    """Why throw-away users cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root, to create throw-away users (useradd): run the tests as root to include it"
    missing = [tool for tool in ("useradd", "userdel") if shutil.which(tool) is None]
    if missing:
        return f"needs {' and '.join(missing)} to create a throw-away user"
    return None


@dataclass
class User:
    name: str
    uid: int
    gid: int
    python: str | None = None  # an interpreter this user can run threadlab with
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    def _options(self, env: dict[str, str] | None) -> dict[str, Any]:
        base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8"}
        return {"user": self.uid, "group": self.gid, "extra_groups": [], "cwd": "/", "env": {**base, **(env or {})},
                "text": True, "stdin": subprocess.DEVNULL}

    def _unreachable(self, argv: list[str]) -> NoReturn:
        pytest.skip(f"{self.name} may not run {argv[0]}: a directory above it is closed to other users "
                    f"(a checkout in a private directory; clone where other users can reach the build)")

    def run_plain(self, argv: list[str], env: dict[str, str] | None = None,
                  timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        """run, where a program this user may not start raises OSError."""
        return subprocess.run(argv, capture_output=True, timeout=timeout, check=False, **self._options(env))

    def run(self, argv: list[str], env: dict[str, str] | None = None,
            timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        try:
            return self.run_plain(argv, env, timeout)
        except PermissionError:
            self._unreachable(argv)

    def popen(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        try:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **self._options(env))
        except PermissionError:
            self._unreachable(argv)
        self.started.append(process)
        return process

    def script(self, code: str, *args: str) -> subprocess.CompletedProcess[str]:
        """A Python snippet as this user (the standard library only)."""
        if self.python is None:
            pytest.skip(f"no Python interpreter that {self.name} may run")
        return self.run([self.python, "-c", code, *args])

    def threadlab(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The threadlab command line as this user, with the real build."""
        if self.python is None:
            pytest.skip(f"no Python interpreter that {self.name} may run threadlab with "
                        f"(it cannot read {sys.executable} or {REPO})")
        return self.run([self.python, "-m", "threadlab", *args], env={**threadlab_env(), **(env or {})})

    def processes(self) -> list[int]:
        """Its live processes (zombies left to an init that does not reap
        are not)."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if (entry.name.isdigit() and entry.stat().st_uid == self.uid
                        and (entry / "stat").read_text().rpartition(")")[2].split()[0] != "Z"):
                    found.append(int(entry.name))
            except (OSError, IndexError):
                continue
        return found

    def clean(self) -> None:
        """Ends its processes (by pid) and removes what it left in /tmp and
        /dev/shm."""
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=TIMEOUT_S)
        self.started.clear()
        for _ in range(50):
            pids = self.processes()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        for place in (Path("/tmp"), Path("/dev/shm")):
            for entry in place.iterdir():
                try:
                    if entry.lstat().st_uid != self.uid:
                        continue
                except OSError:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)


def threadlab_env() -> dict[str, str]:
    """What another user needs to run this checkout's threadlab: its Python
    package and libraries, the real native build."""
    site = sysconfig.get_paths()["purelib"]
    return {"PYTHONPATH": f"{REPO / 'python'}:{site}", "THREADLAB_NATIVE_DIR": str(REAL_NATIVE_DIR)}


def _python_for(user: User) -> str | None:
    """The first interpreter of this Python version that the user can run
    threadlab with: this one, else the system's."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, os.path.realpath(sys.executable), f"/usr/bin/python{version}",
                  f"/usr/local/bin/python{version}"]
    for candidate in dict.fromkeys(candidates):
        if not os.path.exists(candidate):
            continue
        try:
            done = user.run_plain([candidate, "-c", "import threadlab.cli"], env=threadlab_env(), timeout=TIMEOUT_S)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return candidate
    return None


def _create(role: str) -> User:
    name = f"tl{role[:3]}{secrets.token_hex(4)}"
    shell = "/usr/sbin/nologin" if os.path.exists("/usr/sbin/nologin") else "/bin/false"
    done = subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", shell, name],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        pytest.skip(f"useradd could not create a throw-away user: {done.stderr.strip()}")
    entry = pwd.getpwnam(name)
    user = User(name, entry.pw_uid, entry.pw_gid)
    user.clean()  # a uid used before by a user removed since may have left files
    user.python = _python_for(user)
    return user


def _remove(user: User) -> None:
    user.clean()
    subprocess.run(["userdel", user.name], capture_output=True, timeout=TIMEOUT_S, check=False)


def throwaway_user(role: str) -> Iterator[User]:
    """For a fixture: a new user, removed afterwards (skips when it cannot
    be made)."""
    why = unavailable()
    if why:
        pytest.skip(why)
    user = _create(role)
    try:
        yield user
    finally:
        _remove(user)
