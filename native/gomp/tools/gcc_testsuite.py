#!/usr/bin/env python3
"""Runs GCC's own libgomp testsuite on libthreadlab-gomp, beside libgomp.

    gcc_testsuite.py [--source TARBALL_OR_DIR] [--lib LIBTHREADLAB_GOMP_SO]
                     [--suites NAMES] [--jobs N] [--timeout S] [--work DIR]
                     [--list-failures] [FILTER ...]

Every run test of the suites (libgomp.c, libgomp.c-c++-common, libgomp.c++,
libgomp.fortran: C, C++ and Fortran programs nobody here wrote) is compiled
once with the system's gcc, g++ or gfortran -fopenmp -O2 and its dg-options,
and run twice: on libgomp, then with LD_PRELOAD=LIB, each under the
variables its dg-set-target-env-var lines set. A test is

  pass         exits as libgomp's run does (0, or non-zero for a
               dg-shouldfail test);
  named        stops with "ENTRY is not implemented by threadlab-gomp": an
               entry this runtime names as unimplemented (docs/omp-ult.md,
               "Entry status"), never a wrong answer;
  FAIL         passes on libgomp and not here in any other way (a wrong
               answer, a crash, a hang past --timeout): a defect;
  libgomp-fail fails on libgomp too (the test expects a device, a newer
               compiler, ...): not counted;
  skip         not a run test, or one for offload targets; nocompile:
               the system compiler rejects it.

The sources: the gcc-N-source package of Debian (`apt-get install
gcc-12-source`: /usr/src/gcc-12/gcc-12.2.0-dfsg.tar.xz), whose version
must be the system compiler's; only libgomp/testsuite and libgomp's
headers are unpacked (into --work). Exit status: 0 when no test FAILs,
1 otherwise, 2 bad usage. Output: one line per test that is not a pass
(all of them with --verbose), then the counts per suite.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile

SUITES = ["libgomp.c", "libgomp.c-c++-common", "libgomp.c++", "libgomp.fortran"]
SOURCE_EXT = (".c", ".C", ".cc", ".f", ".f90", ".F90", ".f95", ".F")
NAMED = re.compile(r"fatal: (\S+) is not implemented by threadlab-gomp")
# effective targets that only an offload device or another machine has
UNAVAILABLE_TARGETS = ("offload", "openacc", "lto")


def die(msg):
    print(f"gcc_testsuite: {msg}", file=sys.stderr)
    sys.exit(2)


def compiler_major():
    out = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True).stdout.strip()
    return out.split(".")[0] if out else None


def unpack(source, work):
    """Returns the libgomp directory of the sources (unpacking a tarball)."""
    if os.path.isdir(source):
        root = source if os.path.isdir(os.path.join(source, "testsuite")) else os.path.join(source, "libgomp")
        if not os.path.isdir(os.path.join(root, "testsuite")):
            die(f"{source} holds no libgomp/testsuite (a GCC source tree or its libgomp directory is accepted)")
        return root
    if not os.path.isfile(source):
        die(f"{source} does not exist (install gcc-{compiler_major()}-source, or give --source)")
    with tarfile.open(source) as tar:
        top = None
        members = []
        for m in tar:
            parts = m.name.split("/")
            if len(parts) < 2 or parts[1] != "libgomp":
                continue
            if not (m.isfile() or m.isdir()) or ".." in parts:
                continue  # links and odd names: the tests need neither
            top = parts[0]
            if len(parts) > 2 and (parts[2] == "testsuite" or (len(parts) == 3 and parts[2].endswith(".h"))):
                members.append(m)
        if not members:
            die(f"{source} holds no libgomp/testsuite")
        tar.extractall(work, members=members)
    return os.path.join(work, top, "libgomp")


def directives(path):
    text = open(path, errors="replace").read()
    test = {"opts": [], "env": {}, "sources": [], "skip": None, "shouldfail": False}
    for m in re.finditer(r"\{\s*(dg-[a-z-]+)\s+(.*)$", text, re.M):
        kind, rest = m.group(1), re.sub(r"\s*\}\s*(\*/)?\s*$", "", m.group(2))
        if kind == "dg-do":
            words = rest.split()
            if words and words[0] != "run":
                test["skip"] = "dg-do " + words[0]
            elif any(t in rest for t in UNAVAILABLE_TARGETS):
                test["skip"] = "target " + rest.strip()
        elif kind in ("dg-options", "dg-additional-options"):
            if "{ target" in rest and not re.search(r"target\s+\{?\s*(x86_64|i\?86|\*-\*-linux|lp64|pthread)", rest):
                continue
            quoted = re.match(r'"([^"]*)"', rest.strip())
            if quoted:
                test["opts"] += shlex.split(quoted.group(1))
        elif kind == "dg-set-target-env-var":
            pair = re.match(r'(\S+)\s+"([^"]*)"', rest.strip())
            if pair:
                test["env"][pair.group(1)] = pair.group(2)
        elif kind == "dg-additional-sources":
            test["sources"] += rest.split()[:1]
        elif kind == "dg-require-effective-target":
            word = rest.split()[0] if rest.split() else ""
            if word.startswith(UNAVAILABLE_TARGETS):
                test["skip"] = "requires " + word
        elif kind == "dg-shouldfail":
            test["shouldfail"] = True
        elif kind == "dg-skip-if" and "*-*-*" in rest:
            test["skip"] = "dg-skip-if " + rest.strip()
    return test


def run(exe, env, timeout, cwd):
    try:
        r = subprocess.run([exe], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
        return r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def one(args, root, path):
    name = os.path.relpath(path, os.path.join(root, "testsuite"))
    test = directives(path)
    if test["skip"]:
        return name, "skip", test["skip"]
    exe = os.path.join(args.work, "bin", re.sub(r"[^A-Za-z0-9_.-]", "_", name))
    compiler = "g++" if path.endswith((".C", ".cc")) else "gfortran" if path.lower().endswith(SOURCE_EXT[3:]) else "gcc"
    extra = [os.path.join(os.path.dirname(path), s) for s in test["sources"]]
    cmd = [compiler, "-fopenmp", "-O2", "-w", "-I" + root, path] + extra + test["opts"] + ["-o", exe, "-lm"]
    if compiler == "gfortran":
        # its modules (m.mod in many tests) in a directory of its own, not the caller's
        moddir = exe + ".mod.d"
        os.makedirs(moddir, exist_ok=True)
        cmd += ["-J", moddir]
    c = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if c.returncode:
        errors = [line for line in c.stderr.splitlines() if "error" in line]
        return name, "nocompile", (errors[0] if errors else c.stderr.strip()[-160:])[:160]
    env = dict(os.environ, **test["env"])
    env["THREADLAB_RM_ARENA"] = "/threadlab-gcc-testsuite-unserved"  # never join a running manager
    env.pop("LD_PRELOAD", None)
    ok = (lambda rc: rc != 0) if test["shouldfail"] else (lambda rc: rc == 0)
    # the files a test writes (Fortran's async I/O tests: tst.dat) in a
    # directory of its own, not the caller's, nor shared by tests run at once
    rundir = exe + ".run.d"
    os.makedirs(rundir, exist_ok=True)
    g_rc, _ = run(exe, env, args.timeout, rundir)
    u_rc, u_err = run(exe, dict(env, LD_PRELOAD=args.lib), args.timeout, rundir)
    if not ok(g_rc):
        return name, "libgomp-fail", f"libgomp exit {g_rc}"
    if ok(u_rc):
        return name, "pass", ""
    named = NAMED.search(u_err)
    if named:
        return name, "named", named.group(1)
    last = [line for line in u_err.strip().splitlines() if line.strip()]
    return name, "FAIL", f"exit {u_rc}" + (f": {last[-1][:160]}" if last else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="See the module's docstring "
                                "(or docs/omp-ult.md, 'GCC's testsuite') for the classes of results.")
    major = compiler_major()
    packaged = sorted(glob.glob(f"/usr/src/gcc-{major}/gcc-{major}.*.tar.*")) if major else []
    p.add_argument("--source", default=packaged[-1] if packaged else None,
                   help="GCC's sources: a tarball or an unpacked tree (default: the gcc-N-source package's)")
    p.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "../../../build/lib/libthreadlab-gomp.so"),
                   help="the libthreadlab-gomp.so to test (default: build/lib's)")
    p.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated, of {', '.join(SUITES)}")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="tests at once (default: the CPUs)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default 60)")
    p.add_argument("--work", help="where to unpack, compile and run, kept afterwards (default: a new private "
                   "directory, removed at the end)")
    p.add_argument("--verbose", action="store_true", help="a line for every test, passes too")
    p.add_argument("filters", nargs="*", metavar="FILTER", help="only tests whose path contains one of these")
    args = p.parse_args()
    suites = [s for s in args.suites.split(",") if s]
    for s in suites:
        if s not in SUITES:
            die(f"--suites: unknown suite '{s}' (accepted: {', '.join(SUITES)})")
    if args.jobs < 1:
        die(f"--jobs {args.jobs}: at least 1")
    if args.timeout <= 0:
        die(f"--timeout {args.timeout}: a positive number of seconds")
    needs = {"libgomp.c++": "g++", "libgomp.fortran": "gfortran"}
    for s in list(suites):
        if s in needs and not shutil.which(needs[s]):
            print(f"gcc_testsuite: {s} left out: no {needs[s]} (apt-get install {needs[s]})", file=sys.stderr)
            suites.remove(s)
    args.lib = os.path.abspath(args.lib)
    if not os.path.isfile(args.lib):
        die(f"--lib {args.lib}: no such file (build it with `make build`)")
    if not args.source:
        die(f"no GCC sources: install them (apt-get install gcc-{major}-source) or give --source")
    if args.work:
        os.makedirs(os.path.join(args.work, "bin"), exist_ok=True)
        return suite_run(args, suites)
    args.work = tempfile.mkdtemp(prefix="threadlab-gcc-testsuite-")
    try:
        os.makedirs(os.path.join(args.work, "bin"))
        return suite_run(args, suites)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)


def suite_run(args, suites):
    root = unpack(args.source, args.work)
    files = sorted(f for s in suites for f in glob.glob(os.path.join(root, "testsuite", s, "*"))
                   if f.endswith(SOURCE_EXT) and (not args.filters or any(x in f for x in args.filters)))
    if not files:
        die("no test matches")
    print(f"gcc_testsuite: {len(files)} tests of {', '.join(suites)}; {args.lib}", file=sys.stderr)
    counts = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for done, (name, status, detail) in enumerate(pool.map(lambda f: one(args, root, f), files), 1):
            suite = name.split("/")[0]
            counts.setdefault(suite, {}).setdefault(status, 0)
            counts[suite][status] += 1
            if status != "pass" or args.verbose:
                print(f"{status:12s} {name} {detail}".rstrip(), flush=True)
            if done % 50 == 0:
                print(f"gcc_testsuite: {done}/{len(files)}", file=sys.stderr, flush=True)
    order = ["pass", "named", "FAIL", "libgomp-fail", "nocompile", "skip"]
    for suite in suites:
        c = counts.get(suite, {})
        print(f"{suite}: " + ", ".join(f"{c.get(k, 0)} {k}" for k in order))
    return 1 if any(c.get("FAIL") for c in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
