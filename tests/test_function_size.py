"""The house's size rules (docs/design.md): few long parameter lists, short functions where the loop, the store,
the run folders, the optimisers and the config builder live. Measured by ``benchmarks/house_metrics.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _metrics():
    spec = importlib.util.spec_from_file_location("house_metrics", ROOT / "benchmarks" / "house_metrics.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["house_metrics"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_few_functions_take_ten_or_more_parameters():
    m = _metrics()
    counted, _ = m.long_parameter_lists(m.functions())
    assert len(counted) <= m.MAX_MANY, (
        f"{len(counted)} functions take {m.MANY} or more parameters (limit {m.MAX_MANY}); group arguments into a "
        "record: " + ", ".join(map(str, counted))
    )


def test_no_long_function_in_the_loop_store_runs_optimizers_and_config():
    m = _metrics()
    long = m.long_functions(m.functions())
    assert not long, f"functions over {m.LONG} lines; split them: " + ", ".join(f"{f} ({f.n_lines})" for f in long)


def test_the_metrics_see_a_planted_long_parameter_list(tmp_path):
    m = _metrics()
    (tmp_path / "storage").mkdir()
    args = ", ".join(f"a{i}" for i in range(12))
    body = "\n".join(f"    x = {i}" for i in range(101))
    (tmp_path / "storage" / "planted.py").write_text(f"def wide({args}):\n    pass\n\n\ndef long():\n{body}\n")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "cmd.py").write_text(f"def command({args}):\n    pass\n")
    fs = m.functions(tmp_path)
    counted, excepted = m.long_parameter_lists(fs)
    assert [f.name for f in counted] == ["wide"] and [f.name for f in excepted] == ["command"]
    assert [f.name for f in m.long_functions(fs)] == ["long"]
