#!/usr/bin/env bash
# threadlab-spawn-mpirun - runs an MPI program under mpirun with what this
# machine needs, with libthreadlab-spawn or without it, under a time limit
# (docs/spawn.md, docs/commands/spawn.md).  Installed beside the native
# programs (build/bin); the library is found in ../lib.  `threadlab spawn
# run` and the spawn tests and study run programs through it.
#
#   threadlab-spawn-mpirun [options] -- PROGRAM [ARGS...]
#
#   --mpi openmpi|mpich   the MPI the program was built with (default openmpi)
#   --max-threads N|auto  thread limit of libthreadlab-spawn (default auto)
#   --limit-counts running|runnable
#                         THREADLAB_SPAWN_LIMIT_COUNTS: what the limit
#                         counts (default runnable, docs/spawn.md)
#   --no-library          plain MPI: every spawn is a process
#   --linked              the program is linked with the library already
#                         (sanitizer builds): no LD_PRELOAD
#   --timeout SECONDS     the whole run's limit (default 600); past it the
#                         run ends with status 124
#   --spawn-timeout S     THREADLAB_SPAWN_TIMEOUT: the limit of one call of
#                         the real MPI that may hang (default 60)
#   --singleton           start the program without mpirun (an MPI singleton)
#   -n N                  processes mpirun starts (default 1)
#
# Open MPI here: run as root needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM);
# 2 CPUs need oversubscription, also for spawned jobs and singletons; no
# binding (thread tasks use the CPUs of their process);
# spawned jobs need the TCP transport, on loopback (shared memory alone
# cannot connect two jobs).  Existing settings of the caller are kept.
set -euo pipefail

die() {
    echo "threadlab-spawn-mpirun: error: $*" >&2
    exit 2
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mpi=openmpi
max_threads=auto
library=1
linked=0
timeout_s=600
spawn_timeout=""
limit_counts=""
singleton=0
np=1

while [[ $# -gt 0 ]]; do
    case "$1" in
        --mpi) [[ $# -ge 2 ]] || die "--mpi needs a value"; mpi="$2"; shift 2 ;;
        --max-threads) [[ $# -ge 2 ]] || die "--max-threads needs a value"; max_threads="$2"; shift 2 ;;
        --limit-counts) [[ $# -ge 2 ]] || die "--limit-counts needs a value"; limit_counts="$2"; shift 2 ;;
        --no-library) library=0; shift ;;
        --linked) linked=1; shift ;;
        --timeout) [[ $# -ge 2 ]] || die "--timeout needs a value"; timeout_s="$2"; shift 2 ;;
        --spawn-timeout) [[ $# -ge 2 ]] || die "--spawn-timeout needs a value"; spawn_timeout="$2"; shift 2 ;;
        --singleton) singleton=1; shift ;;
        -n) [[ $# -ge 2 ]] || die "-n needs a value"; np="$2"; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
[[ $# -ge 1 ]] || die "no program given (usage: threadlab-spawn-mpirun [options] -- PROGRAM [ARGS...])"

case "$mpi" in
    openmpi) lib="$here/../lib/libthreadlab-spawn.so"; mpirun_cmd=(mpirun) ;;
    mpich) lib="$here/../lib/libthreadlab-spawn-mpich.so"; mpirun_cmd=(mpiexec.hydra) ;;
    *) die "--mpi $mpi: expected openmpi or mpich" ;;
esac
[[ "$max_threads" == auto || "$max_threads" =~ ^[0-9]+$ ]] || die "--max-threads $max_threads: expected a number or 'auto'"
[[ -z "$limit_counts" || "$limit_counts" == running || "$limit_counts" == runnable ]] || die "--limit-counts $limit_counts: expected running or runnable"
[[ "$timeout_s" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--timeout $timeout_s: expected seconds"
[[ -z "$spawn_timeout" || "$spawn_timeout" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--spawn-timeout $spawn_timeout: expected seconds"
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "-n $np: expected a positive number of processes"

if [[ "$mpi" == openmpi ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
    export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
    export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader,tcp}"
    export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-lo}"
    export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-lo}"
    # Open MPI binds a job of 1 or 2 processes to one core each by default,
    # and a process's thread tasks inherit its mask: every thread task
    # would share one CPU, and auto would mean 1.  Unbound, the default
    # here for mpirun's job and for the jobs it spawns; a binding the caller
    # set is kept.
    export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy:-none}"
fi

if [[ $library -eq 1 ]]; then
    export THREADLAB_SPAWN_MAX_THREADS="$max_threads"
    [[ -z "$spawn_timeout" ]] || export THREADLAB_SPAWN_TIMEOUT="$spawn_timeout"
    [[ -z "$limit_counts" ]] || export THREADLAB_SPAWN_LIMIT_COUNTS="$limit_counts"
    if [[ $linked -eq 0 ]]; then
        [[ -f "$lib" ]] || die "$lib is not built (an MPI and 'make build' are needed)"
        export LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}"
    fi
else
    unset THREADLAB_SPAWN_MAX_THREADS
fi

if [[ $singleton -eq 1 ]]; then
    exec timeout -k 5 "$timeout_s" "$@"
fi
exec timeout -k 5 "$timeout_s" "${mpirun_cmd[@]}" -n "$np" "$@"
