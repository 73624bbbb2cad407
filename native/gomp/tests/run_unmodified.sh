#!/bin/sh
# gomp.unmodified: compiles an unmodified OpenMP program with the system's
# `gcc -fopenmp` (an ordinary libgomp binary), then runs it with
# libthreadlab-gomp preloaded and checks that the results are right and
# that it ran on this runtime (OMP_DISPLAY_ENV=verbose prints
# THREADLAB_GOMP_TLS only there).
#   run_unmodified.sh CC SOURCE LIBTHREADLAB_GOMP
set -eu
cc=$1 src=$2 lib=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/threadlab-gomp-test.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
"$cc" -fopenmp -O2 -o "$dir/prog" "$src"
ldd "$dir/prog" | grep -q 'libgomp\.so\.1' || { echo "the program is not linked with libgomp"; exit 1; }
OMP_DISPLAY_ENV=verbose LD_PRELOAD="$lib" timeout 60 "$dir/prog" >"$dir/out" 2>"$dir/err"
cat "$dir/out"
grep -q '^unmodified: ok' "$dir/out" || { cat "$dir/err"; exit 1; }
grep -q THREADLAB_GOMP_TLS "$dir/err" || { echo "the program did not run on libthreadlab-gomp"; cat "$dir/err"; exit 1; }
echo "ran on libthreadlab-gomp"
