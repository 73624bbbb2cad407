#!/usr/bin/env bash
# Builds threadlab's JVM suite (docs/jvm.md): jvm/target/benchmarks.jar
# (Maven, JMH from Maven Central, a JDK 21 or newer found by
# `python -m threadlab.producers.jdk`) and its two launchers,
# build/bin/threadlab-bench-jvm-platform and -virtual, which `threadlab bench
# --suite jvm` runs.  The jar is rebuilt only when jvm/ changed.
#
#   scripts/build-jvm.sh                 fail when no JDK 21+ or Maven is found
#   scripts/build-jvm.sh --if-available  say so and succeed (make test: the JVM tests then skip)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON_VENV:-$root/.venv/bin/python}
bin=$root/build/bin
jar=$root/jvm/target/benchmarks.jar
optional=0
[[ "${1:-}" == --if-available ]] && optional=1

unavailable() {
  echo "threadlab: the JVM suite is not built: $1" >&2
  rm -f "$bin"/threadlab-bench-jvm-*
  if (( optional )); then
    echo "threadlab: (its tests are skipped; \`make jvm\` builds it once this is fixed)" >&2
    exit 0
  fi
  exit 1
}

java_home=$("$python" -m threadlab.producers.jdk --home) || unavailable "no JDK 21 or newer (see above)"
command -v mvn >/dev/null || unavailable "Maven is not installed (Debian: apt-get install maven)"

if [[ ! -f "$jar" ]] || [[ -n "$(find "$root/jvm/pom.xml" "$root/jvm/src" -newer "$jar" -print -quit)" ]]; then
  echo "building $jar with $java_home"
  # Maven's own libraries warn about sun.misc.Unsafe on JDK 23+: noise, not ours.
  set +e
  (cd "$root/jvm" && JAVA_HOME="$java_home" mvn -q -B package 2>&1) \
    | grep -v -e 'sun\.misc\.Unsafe' -e 'terminally deprecated method' -e 'Please consider reporting this' \
              -e 'will be removed in a future release'
  status=${PIPESTATUS[0]}
  set -e
  (( status == 0 )) || { echo "threadlab: Maven failed (exit status $status)" >&2; exit "$status"; }
fi

mkdir -p "$bin"
for model in platform virtual; do
  launcher=$bin/threadlab-bench-jvm-$model
  cat > "$launcher.tmp" <<LAUNCHER
#!/bin/sh
# threadlab's JVM suite, model jvm-$model (docs/jvm.md); written by scripts/build-jvm.sh.
exec '$python' -m threadlab.producers.jmh --model jvm-$model "\$@"
LAUNCHER
  chmod 755 "$launcher.tmp"
  mv "$launcher.tmp" "$launcher"
done
