#!/usr/bin/env bash
# Installs the Debian packages threadlab builds and runs with.  As root it
# runs apt-get; otherwise it prints the exact command to run and fails, so
# nothing is half set up.  Quiet and quick when everything is present.
set -euo pipefail

packages=(
  gcc g++ make cmake pkg-config   # the native build
  libhwloc-dev hwloc              # topology and CPU placement
  python3 python3-venv            # the front end's virtual environment
  chromium                        # headless browser: the test that renders the HTML report
  libomp-dev                      # LLVM's OpenMP runtime: the llvmomp runtime of the apps, omp and multiprog studies
  libopenblas0-openmp             # OpenBLAS on libgomp: an unmodified library tested on libthreadlab-gomp (docs/omp-ult.md)
  libblis4-openmp                 # BLIS on libgomp: the same, threads spinning in the library (docs/omp-ult.md)
  libboost-fiber-dev              # Boost.Fiber: the boost-fiber model of the models suite (docs/thread-models.md)
  openmpi-bin libopenmpi-dev      # Open MPI: the mpi suite (docs/mpi.md), its default launcher mpirun; libthreadlab-spawn (docs/spawn.md)
  mpich libmpich-dev              # MPICH beside it (Debian's alternatives): the spawn library built and tested over both
  python3-mpi4py                  # mpi4py for Debian's python3 (over Open MPI): the spawn test of an interpreter that spawns itself
)
# 32-bit builds of the study's kernels (-m32): x86-64 only.
if [[ "$(dpkg --print-architecture 2>/dev/null || true)" == amd64 ]]; then
  packages+=(gcc-multilib)
fi

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

# A python3 outside Debian's (pyenv, a distribution of its own) brings its
# own venv module; Debian's python3-venv is only needed when that fails.
if [[ " ${missing[*]} " == *" python3-venv "* ]] || [[ " ${missing[*]} " == *" python3 "* ]]; then
  if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    kept=()
    for pkg in "${missing[@]}"; do
      [[ "$pkg" == python3 || "$pkg" == python3-venv ]] || kept+=("$pkg")
    done
    missing=("${kept[@]+"${kept[@]}"}")
  fi
fi

# The JVM and Go suites (docs/jvm.md, docs/go.md): Maven and Go, unless a
# `mvn` or `go` of another origin is on PATH.  They also need a JDK 21 or
# newer, which Debian 12 does not package: scripts/build-jvm.sh finds one
# (/usr/lib/jvm, JAVA_HOME) or says what to install.
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v go >/dev/null 2>&1 || missing+=(golang-go)

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "threadlab needs these Debian packages: ${missing[*]}" >&2
  echo "install them with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
