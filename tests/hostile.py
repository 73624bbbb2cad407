"""Helpers of the tests that act as a hostile or clumsy user: threadlab in
its own process, with fewer privileges, or on a read-only or full file
system.  What needs root (dropping a capability, a mount namespace, a file
of another user) is skipped with a message otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
IS_ROOT = os.geteuid() == 0
# A user id that owns nothing here: "another user" for files and links.
OTHER_UID = 65534


def threadlab_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "threadlab", *args]


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "python"), **extra}


def run_threadlab(*args: str, prefix: tuple[str, ...] = (), timeout: float = 120, **kwargs: Any
                  ) -> subprocess.CompletedProcess[str]:
    """threadlab as its own process: (returncode, stdout, stderr)."""
    return subprocess.run([*prefix, *threadlab_argv(*args)], capture_output=True, text=True, timeout=timeout,
                          env=environment(), check=False, **kwargs)


def without_write_override() -> tuple[str, ...]:
    """A command prefix under which file modes bind this process: root
    without CAP_DAC_OVERRIDE (setpriv), anyone else as they are."""
    if not IS_ROOT:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: cannot drop CAP_DAC_OVERRIDE to make file modes bind")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


def require_root(why: str) -> None:
    if not IS_ROOT:
        pytest.skip(f"needs root: {why}")


def in_mount_namespace(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`sh -c script` in a mount namespace of its own (root only): it may
    mount a tiny or read-only file system that nobody else sees."""
    require_root("a private mount namespace")
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True, check=False, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.strip()}")
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=timeout,
                          env=environment(), check=False)


def shell_threadlab() -> str:
    """The command line starting threadlab, for a shell script."""
    return " ".join(f"'{part}'" for part in threadlab_argv())
