"""The package's layout rules (docs/design.md): every import, at module level or inside a function (only
``if TYPE_CHECKING:`` blocks are left out), points down the layer table or within its layer; no import cycle
among modules; module sizes stay readable."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mechcalib"
DESIGN = SRC.parents[1] / "docs" / "design.md"
MAX_LINES = 800
LONG_LINES = 600  # modules longer than this must be named, with the reason, in docs/design.md

#: The layer table of docs/design.md, lowest first: a module may import from its own layer and the layers
#: below it. A layer is named by the first component under ``mechcalib`` (a subpackage or a top-level module);
#: ``mechcalib`` itself is the package root.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "version", "registry"),
    ("core",),
    ("records", "objectives", "optimizers", "execution", "testing"),
    ("models", "storage"),
    ("calibrate", "reporting", "display"),
    ("surrogates", "inverse", "uncertainty"),
    ("config",),
    ("runs",),
    ("dashboard",),
    ("cli", "mechcalib"),
)


def _module_name(path: Path, src: Path) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(src: Path) -> dict[str, Path]:
    return {_module_name(p, src): p for p in src.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> dict[str, int]:
    """Modules of the package that ``name`` imports anywhere (module level, functions, methods), each with the
    line of its first import; imports under ``if TYPE_CHECKING:`` are left out (they never run)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: dict[str, int] = {}

    def add(mod: str, line: int) -> None:
        out.setdefault(mod, line)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    add(a.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known]
            for s in subs:
                add(s, node.lineno)
            if mod in known and len(subs) < len(node.names):  # names taken from the module itself
                add(mod, node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.pop(name, None)
    return out


def _graph(src: Path = SRC) -> dict[str, dict[str, int]]:
    mods = _modules(src)
    known = set(mods)
    return {m: _imports(m, p, known) for m, p in mods.items()}


def _layer_name(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _rank() -> dict[str, int]:
    return {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _layer_violations(src: Path = SRC) -> list[str]:
    """Every import that points up the layer table, and every module whose layer the table does not name."""
    rank = _rank()
    bad: list[str] = []
    for mod, deps in sorted(_graph(src).items()):
        if _layer_name(mod) not in rank:
            bad.append(f"{mod}: its layer {_layer_name(mod)!r} is not in the layer table")
            continue
        for dep, line in sorted(deps.items()):
            have, want = rank[_layer_name(mod)], rank.get(_layer_name(dep), len(LAYERS))
            if want > have:
                bad.append(
                    f"{mod} (line {line}, layer {have} {_layer_name(mod)}) imports {dep} "
                    f"(layer {want} {_layer_name(dep)})"
                )
    return bad


def _cycles(src: Path = SRC) -> list[list[str]]:
    graph = _graph(src)
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                dfs(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m)
    return cycles


def test_no_import_cycle():
    cycles = _cycles()
    assert not cycles, "import cycles (function-level imports included):\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_imports_follow_the_layer_table():
    bad = _layer_violations()
    assert not bad, (
        "imports against the layer table of docs/design.md (a module imports only from its own layer and those "
        "below; move the code, or pass the object in from above):\n" + "\n".join(bad)
    )


def test_core_depends_on_nothing_above_it():
    rank = _rank()
    bad = {
        m: sorted(n for n in deps if rank[_layer_name(n)] > rank["core"])
        for m, deps in _graph().items()
        if m.startswith("mechcalib.core")
    }
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, f"the core imports from higher layers: {bad}"


def test_design_shows_the_layer_table():
    """docs/design.md's table lists the layers of :data:`LAYERS`, in order."""
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", DESIGN.read_text(), flags=re.MULTILINE)
    shown = tuple(tuple(n.strip(" `") for n in names.split(",")) for _, names in rows)
    assert shown == LAYERS, f"docs/design.md's layer table {shown} differs from tests/test_layout.py's {LAYERS}"


def _copy_tree(tmp_path: Path) -> Path:
    src = tmp_path / "mechcalib"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns("__pycache__", "data"))
    return src


def test_layer_check_catches_a_planted_wrong_way_import(tmp_path):
    """The check is not vacuous: a core module that imports the CLI inside a function is caught; the same
    import under ``if TYPE_CHECKING:`` is not."""
    src = _copy_tree(tmp_path)
    assert _layer_violations(src) == []
    target = src / "core" / "parameters.py"
    text = target.read_text()
    target.write_text(text + "\n\ndef _planted():\n    from ..cli import app\n\n    return app\n")
    bad = _layer_violations(src)
    assert len(bad) == 1 and bad[0].startswith("mechcalib.core.parameters (line ") and "mechcalib.cli" in bad[0]
    target.write_text(text + "\n\nif TYPE_CHECKING:\n    from ..cli import app\n")
    assert _layer_violations(src) == []


def test_cycle_check_catches_a_planted_function_level_cycle(tmp_path):
    src = _copy_tree(tmp_path)
    target = src / "errors.py"
    target.write_text(
        target.read_text() + "\n\ndef _planted():\n    from .core import parameters\n\n    return parameters\n"
    )
    assert _cycles(SRC) == []
    assert any({"mechcalib.errors", "mechcalib.core.parameters"} <= set(c) for c in _cycles(src))


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_size(path: Path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(SRC)} has {n} lines; split it (limit {MAX_LINES})"
    if n > LONG_LINES:
        design = DESIGN.read_text()
        assert str(path.relative_to(SRC)) in design, (
            f"{path.relative_to(SRC)} has {n} lines (> {LONG_LINES}): split it, or say in docs/design.md why not"
        )


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


@pytest.mark.parametrize("path", sorted((SRC / "runs").rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_run_folder_package_is_readable(path: Path):
    """The run-folder package: no module over 600 lines, no function over 100 lines, and no private name
    imported from a sibling module (they talk through public names)."""
    n = len(path.read_text().splitlines())
    assert n <= LONG_LINES, f"{path.relative_to(SRC)} has {n} lines; split it (limit {LONG_LINES})"
    long = [
        f"{f.name} ({f.end_lineno - f.lineno + 1} lines)" for f in _functions(path) if f.end_lineno - f.lineno >= 100
    ]
    assert not long, f"{path.relative_to(SRC)}: functions over 100 lines: {long}"
    private = [
        f"{a.name} from {'.' * node.level}{node.module or ''}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("mechcalib"))
        for a in node.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert not private, f"{path.relative_to(SRC)} imports private names: {private}"
