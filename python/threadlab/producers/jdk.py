"""Finding a JDK that can run the JVM suite: Java 21 or newer (virtual
threads, JEP 444).

Order: $THREADLAB_JAVA_HOME (taken as given: an error if it is too old),
then $JAVA_HOME, `java` on $PATH, and the usual installation directories
(/usr/lib/jvm/*, /usr/java/*, /opt/java/*, /opt/jdk*, ~/.sdkman, ~/.jdks);
the newest suitable one wins.  A JDK's version comes from its `release`
file, or from `java -version` when it has none.

`python -m threadlab.producers.jdk` prints the chosen JAVA_HOME (the
Makefile builds the suite with it) or, when none fits, says what was found
and what to install, and exits 1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from threadlab.native import process
from threadlab.errors import ThreadlabError

MINIMUM_FEATURE = 21
HOME_ENV = "THREADLAB_JAVA_HOME"
# Where JDKs are installed by packages, tarballs and version managers.
SEARCH_GLOBS: tuple[str, ...] = (
    "/usr/lib/jvm/*",
    "/usr/java/*",
    "/opt/java/*",
    "/opt/jdk*",
    "~/.sdkman/candidates/java/*",
    "~/.jdks/*",
)
INSTALL_HINT = (
    "install a JDK 21 or newer: Eclipse Temurin (https://adoptium.net, e.g. the temurin-21-jdk or "
    "temurin-25-jdk package from Adoptium's apt repository), or `apt-get install openjdk-21-jdk` on "
    "Debian 13 / Ubuntu 24.04 and newer (Debian 12 has only 17); then point THREADLAB_JAVA_HOME "
    "(or JAVA_HOME) at it if it is not under /usr/lib/jvm"
)

_VERSION_LINE = re.compile(r'version "([^"]+)"')


class NoSuitableJdk(ThreadlabError):
    """No JDK 21+ was found; the message says what was seen and what to install."""


@dataclass(frozen=True)
class Jdk:
    home: Path
    version: str  # "25.0.3", "21.0.4", "17.0.15", "1.8.0_402"
    vendor: str | None = None
    runtime: str | None = None  # JAVA_RUNTIME_VERSION, e.g. "25.0.3+9-LTS"
    has_javac: bool = False

    @property
    def feature(self) -> int:
        return feature_version(self.version)

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"

    def describe(self) -> str:
        kind = "JDK" if self.has_javac else "JRE"
        vendor = f" ({self.vendor})" if self.vendor else ""
        return f"{kind} {self.version}{vendor} at {self.home}"


def feature_version(version: str) -> int:
    """21 for "21.0.4", 8 for "1.8.0_402", 25 for "25-ea"."""
    parts = re.split(r"[.+_-]", version)
    try:
        first = int(parts[0])
        return int(parts[1]) if first == 1 and len(parts) > 1 else first
    except ValueError:
        return 0


def _version_key(version: str) -> tuple[int, ...]:
    numbers = [int(p) for p in re.findall(r"\d+", version)]
    if numbers and numbers[0] == 1 and len(numbers) > 1:
        numbers = numbers[1:]
    return tuple(numbers)


def read_release(home: Path) -> dict[str, str]:
    """The KEY="value" lines of HOME/release ({} when absent)."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"')
    return values


def _version_from_java(java: Path) -> str | None:
    try:
        done = process.run([java, "-version"], timeout_s=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION_LINE.search(done.stderr + done.stdout)
    return match.group(1) if match else None


def inspect(home: Path) -> Jdk | None:
    """The Java installation at home, or None when there is none."""
    java = home / "bin" / "java"
    if not (java.is_file() and os.access(java, os.X_OK)):
        return None
    release = read_release(home)
    version = release.get("JAVA_VERSION") or _version_from_java(java)
    if not version:
        return None
    vendor = release.get("IMPLEMENTOR_VERSION") or release.get("IMPLEMENTOR")
    javac = home / "bin" / "javac"
    return Jdk(
        home=home.resolve(),
        version=version,
        vendor=vendor,
        runtime=release.get("JAVA_RUNTIME_VERSION") or release.get("FULL_VERSION"),
        has_javac=javac.is_file() and os.access(javac, os.X_OK),
    )


def _home_of(java: Path) -> Path:
    """JAVA_HOME of a java executable (symlinks followed): .../bin/java -> ..."""
    return java.resolve().parent.parent


def candidates(env: dict[str, str] | None = None, globs: Sequence[str] = SEARCH_GLOBS) -> list[Path]:
    """Every place a JDK may be, in order, without duplicates."""
    env = dict(os.environ if env is None else env)
    places: list[Path] = []
    if env.get("JAVA_HOME"):
        places.append(Path(env["JAVA_HOME"]))
    on_path = shutil.which("java", path=env.get("PATH", ""))
    if on_path:
        places.append(_home_of(Path(on_path)))
    for pattern in globs:
        expanded = Path(os.path.expanduser(pattern))
        places += sorted(expanded.parent.glob(expanded.name)) if expanded.parent.is_dir() else []
    unique: dict[Path, None] = {}
    for place in places:
        try:
            unique.setdefault(place.resolve(), None)
        except OSError:
            continue
    return list(unique)


def find_all(places: Iterable[Path]) -> list[Jdk]:
    found = []
    for place in places:
        jdk = inspect(place)
        if jdk is not None:
            found.append(jdk)
    return found


def find_jdk(
    env: dict[str, str] | None = None,
    globs: Sequence[str] = SEARCH_GLOBS,
    need_javac: bool = False,
    minimum: int = MINIMUM_FEATURE,
) -> Jdk:
    """The JDK to use; NoSuitableJdk (saying what was found and what to
    install) when none is new enough.  need_javac: a full JDK, to build."""
    env = dict(os.environ if env is None else env)
    what = "JDK" if need_javac else "Java runtime"
    forced = env.get(HOME_ENV)
    if forced:
        jdk = inspect(Path(forced))
        if jdk is None:
            raise NoSuitableJdk(f"{HOME_ENV}={forced}: no bin/java there; {INSTALL_HINT}")
        if jdk.feature < minimum:
            raise NoSuitableJdk(f"{HOME_ENV}={forced} is Java {jdk.version}; the JVM suite needs {minimum} or newer: {INSTALL_HINT}")
        if need_javac and not jdk.has_javac:
            raise NoSuitableJdk(f"{HOME_ENV}={forced} is a runtime without javac; building the JVM suite needs a JDK")
        return jdk
    found = find_all(candidates(env, globs))
    usable = [j for j in found if j.feature >= minimum and (j.has_javac or not need_javac)]
    if usable:
        return max(usable, key=lambda j: _version_key(j.version))
    seen = "; ".join(j.describe() for j in found) if found else "none"
    raise NoSuitableJdk(f"no {what} {minimum} or newer found (seen: {seen}); {INSTALL_HINT}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ["--home"], ["--describe"]):
        print("usage: python -m threadlab.producers.jdk [--home | --describe]", file=sys.stderr)
        return 2
    try:
        jdk = find_jdk(need_javac=True)
    except NoSuitableJdk as error:
        print(f"threadlab: {error}", file=sys.stderr)
        return 1
    print(jdk.describe() if args == ["--describe"] else jdk.home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
