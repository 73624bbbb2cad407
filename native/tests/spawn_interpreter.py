"""spawn.interpreter (ctest): a Python program that spawns the interpreter
running it, as mpi4py programs do (mpi4py.futures too), under
libthreadlab-spawn.  The command is the running executable, but its main is
CPython's: started again inside this process it died ("Fatal Python error:
pyinit_core_reconfigure") and the parent crashed.  The library must give
such spawns processes (docs/spawn.md, "The decision"): each child answers
with its process id and its rank, which the parent checks.  Run with
Debian's python3 and its python3-mpi4py (built for Open MPI)."""

import os
import sys

from mpi4py import MPI

CHILDREN = 2

if len(sys.argv) > 1 and sys.argv[1] == "child":
    parent = MPI.Comm.Get_parent()
    parent.send((os.getpid(), MPI.COMM_WORLD.Get_rank()), dest=0)
    parent.Disconnect()
    sys.exit(0)

children = MPI.COMM_SELF.Spawn(sys.executable, args=[os.path.abspath(__file__), "child"], maxprocs=CHILDREN)
answers = [children.recv(source=r) for r in range(CHILDREN)]
children.Disconnect()
pids = {pid for pid, _ in answers}
ranks = sorted(rank for _, rank in answers)
kind = "processes" if os.getpid() not in pids and len(pids) == CHILDREN else "threads"
print(f"interpreter: children are {kind}, ranks {ranks}", flush=True)
