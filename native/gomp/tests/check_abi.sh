#!/bin/sh
# gomp.abi: libthreadlab-gomp exports exactly libgomp's symbols with
# libgomp's versions (plus its own THREADLAB_GOMP_1.0 node), and nothing of
# its internals.
#   check_abi.sh LIBTHREADLAB_GOMP LIBGOMP
set -eu
mine=$1 gomp=$2
table() {
    objdump -T "$1" | awk '/ g / && $0 !~ /GLIBC/ && $0 !~ /\*UND\*/ {print $(NF-1), $NF}' | sort
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/threadlab-gomp-abi.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
table "$gomp" >"$dir/gomp"
table "$mine" | grep -v '^THREADLAB_GOMP_1.0 ' >"$dir/mine"
if ! diff "$dir/gomp" "$dir/mine" >"$dir/diff"; then
    echo "the exported symbols differ from $gomp (< libgomp, > libthreadlab-gomp):"
    cat "$dir/diff"
    exit 1
fi
n=$(wc -l <"$dir/mine")
echo "$n versioned symbols, as $gomp"
