#!/bin/sh
# gomp.display_env: omp_display_env prints the same lines under
# libthreadlab-gomp as under GCC's libgomp, for environments a user sets
# (scripts compare the two; SOLLVE V&V's display tests print them).  The
# runtimes' own warnings (a bad value) are not compared: libgomp's come in
# both runs, since the program still loads libgomp, whose constructor
# reads the environment too.
#   display_env_same.sh PROGRAM LIBTHREADLAB_GOMP
set -u
prog=$1 lib=$2
failed=0
while IFS= read -r settings; do
    # shellcheck disable=SC2086  # the settings are words
    want=$(env -u LD_PRELOAD $settings "$prog" 2>&1 | grep -v -e '^libgomp:' -e '^threadlab-gomp\[')
    got=$(env $settings LD_PRELOAD="$lib" "$prog" 2>&1 | grep -v -e '^libgomp:' -e '^threadlab-gomp\[')
    if [ "$want" = "$got" ]; then
        echo "same: ${settings:-(no settings)}"
    else
        echo "DIFFERENT: ${settings:-(no settings)}"
        printf '%s\n' "$want" >"${TMPDIR:-/tmp}/display_env.want.$$"
        printf '%s\n' "$got" | diff "${TMPDIR:-/tmp}/display_env.want.$$" - | sed 's/^/  /'
        rm -f "${TMPDIR:-/tmp}/display_env.want.$$"
        failed=1
    fi
done <<'SETTINGS'

OMP_SCHEDULE=static
OMP_SCHEDULE=static,0
OMP_SCHEDULE=dynamic,0
OMP_SCHEDULE=monotonic:dynamic
OMP_SCHEDULE=guided,4
OMP_PLACES=cores
OMP_PLACES=threads OMP_PROC_BIND=spread
OMP_PLACES=cores OMP_PROC_BIND=false
OMP_PROC_BIND=close,spread OMP_MAX_ACTIVE_LEVELS=2
OMP_STACKSIZE=1M OMP_THREAD_LIMIT=5 OMP_NESTED=true
OMP_NUM_THREADS=3,2 OMP_DYNAMIC=true OMP_WAIT_POLICY=active
OMP_PLACES=bogus
SETTINGS
exit $failed
