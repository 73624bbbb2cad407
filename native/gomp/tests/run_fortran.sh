#!/bin/sh
# gomp.fortran: compiles a Fortran OpenMP program with gfortran -fopenmp
# (an ordinary libgomp binary, omp_lib's entries), runs it on libgomp (its
# checks are right) and with libthreadlab-gomp preloaded, and checks that
# the second run was on this runtime (OMP_DISPLAY_ENV=verbose prints
# THREADLAB_GOMP_TLS only there). ctest adds it only where gfortran exists.
#   run_fortran.sh FC SOURCE LIBTHREADLAB_GOMP
set -eu
fc=$1 src=$2 lib=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/threadlab-gomp-fortran.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
"$fc" -fopenmp -O2 -J "$dir" -o "$dir/prog" "$src"
echo "== libgomp"
timeout 60 "$dir/prog" || { echo "failed on libgomp"; exit 1; }
echo "== libthreadlab-gomp"
OMP_DISPLAY_ENV=verbose LD_PRELOAD="$lib" timeout 60 "$dir/prog" 2>"$dir/err" || { cat "$dir/err"; exit 1; }
grep -q THREADLAB_GOMP_TLS "$dir/err" || { echo "the program did not run on libthreadlab-gomp"; cat "$dir/err"; exit 1; }
echo "ran on libthreadlab-gomp"
