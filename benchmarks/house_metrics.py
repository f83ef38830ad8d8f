"""The house's size rules (issue: "records at the boundaries"), measured over ``src/mechcalib``: functions with 10 or
more parameters, and functions over 100 lines in the packages that must stay readable.

    python benchmarks/house_metrics.py            # prints the tables and writes results/house_metrics.md
    python benchmarks/house_metrics.py --rev 28e799b   # the counts at an earlier commit (printed only)

Parameters are counted without ``self``/``cls``, with ``*args``/``**kwargs`` one each. Excepted, as the rules say:
compiled numba kernels (decorated with ``njit``/``jit``), the CLI's commands (``cli/``) and the optimisers'
constructors (``optimizers/*.__init__``), which keep explicit keyword settings. ``tests/test_function_size.py``
enforces the same limits.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mechcalib"
OUT = Path(__file__).resolve().parent / "results" / "house_metrics.md"
MANY = 10  # parameters
LONG = 100  # lines
MAX_MANY = 10  # functions with MANY or more parameters allowed outside the exceptions
# where no function may run over LONG lines (numba kernels excepted)
SHORT_PLACES = ("calibrate/", "storage/", "runs/", "optimizers/", "config/build.py")


@dataclass(frozen=True)
class Function:
    path: str  # relative to src/mechcalib
    name: str
    line: int
    n_params: int
    n_lines: int
    kernel: bool

    @property
    def excepted(self) -> bool:
        """Outside the count of long parameter lists: a kernel, a CLI command, an optimiser's constructor."""
        return (
            self.kernel
            or self.path.startswith("cli/")
            or (self.path.startswith("optimizers/") and self.name == "__init__")
        )

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name}"


def functions(src: Path = SRC) -> list[Function]:
    out = []
    for p in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            a = node.args
            names = [x.arg for x in a.posonlyargs + a.args]
            n = len(names) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
            if names and names[0] in ("self", "cls"):
                n -= 1
            kernel = any("jit" in ast.unparse(d) for d in node.decorator_list)
            assert node.end_lineno is not None
            rel = p.relative_to(src).as_posix()
            out.append(Function(rel, node.name, node.lineno, n, node.end_lineno - node.lineno + 1, kernel))
    return out


def long_parameter_lists(fs: list[Function]) -> tuple[list[Function], list[Function]]:
    """Functions with ``MANY`` or more parameters: (counted, excepted)."""
    many = [f for f in fs if f.n_params >= MANY]
    return [f for f in many if not f.excepted], [f for f in many if f.excepted]


def long_functions(fs: list[Function]) -> list[Function]:
    """Functions over ``LONG`` lines in :data:`SHORT_PLACES` (kernels excepted)."""
    return [f for f in fs if f.n_lines > LONG and not f.kernel and f.path.startswith(SHORT_PLACES)]


def report(fs: list[Function]) -> str:
    counted, excepted = long_parameter_lists(fs)
    long = long_functions(fs)
    lines = [
        "# The house's size rules",
        "",
        "Written by `python benchmarks/house_metrics.py` (enforced by `tests/test_function_size.py`).",
        "",
        f"- Functions with {MANY} or more parameters, outside kernels, CLI commands and optimisers' constructors: "
        f"**{len(counted)}** (limit {MAX_MANY}); excepted ones: {len(excepted)}.",
        f"- Functions over {LONG} lines in {', '.join(SHORT_PLACES)} (kernels excepted): **{len(long)}** (limit 0).",
        "",
        "| function | parameters | lines |",
        "|---|---|---|",
        *(f"| `{f}` | {f.n_params} | {f.n_lines} |" for f in counted),
        "",
        "Excepted (kernels, CLI commands, optimisers' constructors):",
        "",
        "| function | parameters | why |",
        "|---|---|---|",
        *(
            f"| `{f}` | {f.n_params} | {'kernel' if f.kernel else 'CLI command' if f.path.startswith('cli/') else 'constructor'} |"
            for f in excepted
        ),
    ]
    if long:
        lines += ["", "Over the line limit:", "", *(f"- `{f}`: {f.n_lines} lines" for f in long)]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", help="measure this git revision instead of the working tree (printed, not written)")
    args = ap.parse_args()
    if args.rev:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(
                ["git", "archive", args.rev, "src/mechcalib"], cwd=SRC.parents[1], capture_output=True, check=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            print(report(functions(Path(tmp) / "src" / "mechcalib")).replace("Written by", f"At {args.rev}, by"))
        return 0
    text = report(functions())
    print(text)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
