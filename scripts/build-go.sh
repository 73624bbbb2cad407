#!/usr/bin/env bash
# Builds threadlab's Go suite (docs/go.md): build/bin/threadlab-bench-go
# from go/ (standard library only), which `threadlab bench --suite go` runs.
#
#   scripts/build-go.sh                 fail when Go is not installed
#   scripts/build-go.sh --if-available  say so and succeed (make test: the Go tests then skip)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
if ! command -v go >/dev/null; then
  echo "threadlab: the Go suite is not built: Go is not installed (Debian: apt-get install golang-go)" >&2
  rm -f "$bin/threadlab-bench-go"
  [[ "${1:-}" == --if-available ]] && exit 0
  exit 1
fi
mkdir -p "$bin"
cd "$root/go"
# GOFLAGS=-mod=mod would reach the network; a module without dependencies needs nothing.
GOTOOLCHAIN=local go build -trimpath -o "$bin/threadlab-bench-go" ./cmd/threadlab-bench-go
