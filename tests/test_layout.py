"""The package's layout rules (docs/design.md): no import cycle among modules, the core depends on nothing
above it, and module sizes stay readable."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mechcalib"
MAX_LINES = 800
LONG_LINES = 600  # modules longer than this must be named, with the reason, in docs/design.md


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of the package that ``name`` imports at module level (not inside functions, not under
    ``TYPE_CHECKING``): those are the imports that can form a cycle at import time."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                subs = {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known}
                out.update(subs)
                if mod in known and len(subs) < len(node.names):  # names taken from the module itself
                    out.add(mod)

    visit(tree.body)
    out.discard(name)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(m, p, known) for m, p in mods.items()}


def test_no_import_cycle():
    graph = _graph()
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
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_core_depends_on_nothing_above_it():
    graph = _graph()
    allowed = ("mechcalib.core", "mechcalib.errors")
    bad = {
        m: sorted(n for n in deps if not n.startswith(allowed))
        for m, deps in graph.items()
        if m.startswith("mechcalib.core")
    }
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, f"the core imports from higher layers: {bad}"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_size(path: Path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(SRC)} has {n} lines; split it (limit {MAX_LINES})"
    if n > LONG_LINES:
        design = (SRC.parents[1] / "docs" / "design.md").read_text()
        assert str(path.relative_to(SRC)) in design, (
            f"{path.relative_to(SRC)} has {n} lines (> {LONG_LINES}): split it, or say in docs/design.md why not"
        )
