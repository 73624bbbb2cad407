"""libthreadlab-gomp under the resource manager with real programs: two
NAS-like kernels (threadlab-npb) on OpenMP's ABI over user-level threads,
sharing the CPUs through a manager while their allocations change, and a
manager that stops while a kernel runs (docs/omp-ult.md, "Following the
resource manager inside regions").  Every kernel must verify; nothing
here asserts a timing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import REAL_NATIVE_DIR
from rmtools import NCPUS, RM, Lab, Program, lab, native_env, poll  # noqa: F401
from threadlab.native import rm

NPB = REAL_NATIVE_DIR / "threadlab-npb"
ULT = REAL_NATIVE_DIR.parent / "lib" / "libthreadlab-gomp.so"
pytestmark = [
    pytest.mark.skipif(not (os.access(NPB, os.X_OK) and os.access(RM, os.X_OK) and ULT.is_file()),
                       reason=f"threadlab-npb, threadlab-rm or libthreadlab-gomp.so is not built in {REAL_NATIVE_DIR}"),
    pytest.mark.skipif(NCPUS < 2, reason="allocations can only change from 2 CPUs up"),
]


def _kernel(lab: Lab, manager: rm.Manager, kernel: str, size: str) -> Program:
    """threadlab-npb on libthreadlab-gomp (preloaded over libgomp, as an
    unmodified program runs), asking for 2 threads, under the manager."""
    env = {**os.environ, "LD_PRELOAD": str(ULT), "OMP_NUM_THREADS": "2", rm.DIR_ENV: str(manager.directory),
           rm.ARENA_ENV: manager.arena}
    program = Program([str(NPB), "--run", f"study.multiprog.{kernel}", "--param", f"size={size}"], env)
    lab.programs.append(program)
    return program


def _result(program: Program) -> tuple[int, dict[str, Any], list[str]]:
    """The exit status, the record's extras with `verified` (its check) and
    `teams` as a set of team sizes, and standard error."""
    code, out, err = program.finish(timeout=120)
    lines = [line for line in out if line.startswith("{")]
    assert lines, f"no record; stdout {out[-5:]}, stderr {err[-5:]}"
    record = json.loads(lines[-1])
    data = dict(record["extra"])
    data["verified"] = [c["ok"] for c in record["checks"] if c["name"] == "verified"] == [True]
    data["teams"] = {entry.split(":")[0] for entry in data["teams"].split(",") if entry}
    return code, data, err


TWO_CPUS = sorted(os.sched_getaffinity(0))[:2]


def test_two_kernels_verify_while_their_allocations_change(lab: Lab) -> None:
    # two CPUs managed: a kernel alone gets both, two get one each
    manager = lab.start_manager(policy="equipartition", cpus=TWO_CPUS)
    # SP: a region per time step, so its teams show every allocation it had
    first = _kernel(lab, manager, "sp", "A")
    poll("sp registered, with 2 CPUs", lambda: (a := lab.app(manager.status(), first.pid)) and a["team"] == 2)
    second = _kernel(lab, manager, "cg", "W")
    # its first allocation, then the share (a count: a poll cannot miss it)
    poll("sp's allocation changed when cg arrived",
         lambda: (a := lab.app(manager.status(), first.pid)) and a["changes"] >= 2)
    results = {}
    for name, program in (("cg", second), ("sp", first)):
        code, data, err = _result(program)
        assert code == 0 and data["verified"] is True, (name, data, err)
        # the ULT runtime served it, under the manager to the end
        assert "libthreadlab-gomp" in data["runtime"] and data["managed"] == "yes", (name, data)
        assert not [line for line in err if "threadlab-gomp" in line], err  # nothing to report
        results[name] = data
    # each followed its allocation at its region boundaries: sp ran teams
    # of 2 alone and of 1 beside cg; cg arrived to a share of 1
    assert {"1", "2"} <= set(results["sp"]["teams"]), results["sp"]["teams"]
    assert "1" in results["cg"]["teams"], results["cg"]["teams"]
    assert lab.app(manager.status(), first.pid) is None  # the slots are freed at exit


def test_a_manager_stopped_mid_run_leaves_the_kernel_unmanaged_and_right(lab: Lab) -> None:
    manager = lab.start_manager(policy="equipartition", cpus=TWO_CPUS)
    program = _kernel(lab, manager, "sp", "A")
    poll("sp registered", lambda: (a := lab.app(manager.status(), program.pid)) and a["regions"] > 0)
    manager.stop()
    code, data, err = _result(program)
    assert code == 0 and data["verified"] is True, (data, err)
    assert data["managed"] == "no"  # every VP active again, teams cooperative, until a manager comes back
    notices = [line for line in err if line.startswith("threadlab-gomp[")]
    assert notices == [f"threadlab-gomp[{program.pid}]: the resource manager stopped; running unmanaged "
                       "but cooperative (every VP active, teams sized by the idle CPUs)"], err


# BLIS built on libgomp (Debian's libblis4-openmp): its team threads wait
# for each other at barriers of its own, spinning in the library's code.
BLIS = Path("/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4")
BLAS_GEMM = Path(__file__).resolve().parents[1] / "native" / "gomp" / "tests" / "blas_gemm.c"


@pytest.mark.skipif(not BLIS.is_file(), reason=f"BLIS for OpenMP is not installed ({BLIS}: libblis4-openmp)")
def test_two_programs_spinning_inside_a_library_finish_under_the_manager(lab: Lab, tmp_path: Path) -> None:
    # Two programs of two threads on two CPUs: an allocation of one CPU
    # each puts each program's threads on one VP, where the one spinning in
    # BLIS's barrier cannot be made to yield (a library's code) and held
    # the other back for good; the ticker now lends a stopped VP.
    program = tmp_path / "blas_gemm"
    built = subprocess.run(["gcc", "-O2", "-fopenmp", str(BLAS_GEMM), str(BLIS), f"-Wl,-rpath,{BLIS.parent}", "-lm",
                            "-o", str(program)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    manager = lab.start_manager(policy="equipartition", cpus=TWO_CPUS)
    env = {**os.environ, "LD_PRELOAD": str(ULT), "OMP_NUM_THREADS": "2", "BLIS_NUM_THREADS": "2",
           rm.DIR_ENV: str(manager.directory), rm.ARENA_ENV: manager.arena}
    programs = [Program([str(program), "1000"], env) for _ in range(2)]
    lab.programs.extend(programs)
    for started in programs:
        code, out, err = started.finish(timeout=120)
        assert code == 0 and "blas_gemm: PASSED" in out, (out[-3:], err[-3:])
