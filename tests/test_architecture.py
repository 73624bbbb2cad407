"""The shape of the code (docs/architecture.md): no import circles in the
Python package, the command line on top of everything and its commands
independent of its root, one place that finds native programs; no include
circles among the timing core's files, native tests registered in one
place, one JSON writer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hostile import REPO

from threadlab import cli

PYTHON = REPO / "python"
PACKAGE = PYTHON / "threadlab"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PYTHON).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every threadlab module the module imports, anywhere in it (a
    function's import too: it closes a circle as well, only later)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        found |= {resolved for name in names if (resolved := _resolve(name, modules))}
    found.discard(module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {module: _imports(module, path, modules) for module, path in modules.items()}
    # The command line's root imports its commands' modules by name
    # (importlib, a command's alone): edges all the same.
    graph["threadlab.cli"] |= {f"threadlab.cli.{module}" for _, module, _ in cli.COMMANDS}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_import_graph_is_read() -> None:
    """The check below sees what it should: known edges are in the graph."""
    graph = _graph()
    assert "threadlab.cli.bench" in graph["threadlab.cli"]
    assert "threadlab.native.process" in graph["threadlab.run.runner"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles_in_python() -> None:
    assert _circles(_graph()) == []


def test_the_command_line_is_on_top() -> None:
    """Command modules share cli/options.py, never the package root that
    imports them; nothing outside the command line imports it."""
    offenders = []
    for module, imported in _graph().items():
        if module.startswith("threadlab.cli.") and "threadlab.cli" in imported:
            offenders.append(f"{module} imports threadlab.cli")
        if not module.startswith("threadlab.cli") and module != "threadlab.__main__":
            offenders += [f"{module} imports {name}" for name in imported if name.startswith("threadlab.cli")]
    assert offenders == []


def test_native_programs_are_found_in_one_place() -> None:
    """Only native/discovery.py knows where programs are (its search
    directories and $THREADLAB_NATIVE_DIR)."""
    pattern = re.compile(r"environ[^\n]*THREADLAB_NATIVE_DIR|NATIVE_DIR_ENV|search_dirs\(|\"build\" / \"bin\"")
    offenders = [f"{path.relative_to(REPO)}:{number}"
                 for path in PACKAGE.rglob("*.py") if path.name != "discovery.py"
                 for number, line in enumerate(path.read_text().splitlines(), start=1) if pattern.search(line)]
    assert offenders == []


def test_children_are_started_in_one_place() -> None:
    """Only native/process.py starts a program (Popen, run, fork, exec,
    spawn, system); the others use its functions and may name
    subprocess's constants and exceptions."""
    pattern = re.compile(r"\bsubprocess\.(Popen|run|call|check_call|check_output|getoutput|getstatusoutput)\b"
                         r"|\bos\.(fork|forkpty|exec\w*|spawn\w*|posix_spawn\w*|system|popen)\s*\(")
    offenders = [f"{path.relative_to(REPO)}:{number}"
                 for path in PACKAGE.rglob("*.py") if path != PACKAGE / "native" / "process.py"
                 for number, line in enumerate(path.read_text().splitlines(), start=1) if pattern.search(line)]
    assert offenders == []
    # the pattern sees what it should
    assert pattern.search("child = subprocess.Popen(argv)") and pattern.search("os.execvpe(path, argv, env)")
    assert not pattern.search("except subprocess.TimeoutExpired:")


# ------------------------------------------------------------------ native

CORE = REPO / "native" / "core"
PUBLIC = REPO / "native" / "include"


def _includes(path: Path) -> set[Path]:
    found = set()
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', path.read_text(), re.M):
        for base in (path.parent, PUBLIC):
            if (base / name).is_file():
                found.add((base / name).resolve())
                break
    return found


def test_no_include_circles_among_the_core_files() -> None:
    files = [*CORE.glob("*.[ch]"), *PUBLIC.glob("threadlab/*.h")]
    graph = {str(path.resolve()): {str(p) for p in _includes(path)} for path in files}
    assert _circles(graph) == []


def test_native_tests_are_registered_in_one_place() -> None:
    """Every ctest test is added in native/tests/CMakeLists.txt."""
    registered = {path.relative_to(REPO).as_posix() for path in (REPO / "native").rglob("CMakeLists.txt")
                  if re.search(r"^\s*add_test\s*\(", path.read_text(), re.M)}
    assert registered == {"native/tests/CMakeLists.txt"}


def test_no_native_program_writes_json_by_hand() -> None:
    """Every JSON object a native program prints goes through
    libthreadlab-json (threadlab/json.h): no printf of a quoted key."""
    pattern = re.compile(r'printf\([^;]*\\"[A-Za-z_]+\\"\s*:')
    offenders = [f"{path.relative_to(REPO)}:{number}"
                 for path in (REPO / "native").rglob("*.[ch]")
                 for number, line in enumerate(path.read_text().splitlines(), start=1) if pattern.search(line)]
    assert offenders == []
