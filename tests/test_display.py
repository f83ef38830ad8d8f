"""What `mc.calibrate` shows from Python: a progress display (on in a terminal or a notebook, off with
``progress=False`` and where output is redirected), log lines of the run's start and end, the evaluations as a
pandas DataFrame and the result as an HTML table."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.display import LiveProgress, _Bar, interactive
from mechcalib.optimizers import make_optimizer


def sphere(X):
    return np.sum((np.atleast_2d(X) - 0.3) ** 2, axis=1)


def _run(**kw):
    return mc.minimize(sphere, [-1, -1], [1, 1], make_optimizer("de", seed=1, pop_size=10), max_evals=60, **kw)


def test_progress_is_off_where_output_is_redirected_and_on_when_asked(capsys):
    assert interactive() is None  # pytest captures stderr: not a terminal, not a notebook
    _run()
    assert capsys.readouterr().err == ""
    seen = []
    res = _run(progress=True, on_evaluation=lambda i, b, o: seen.append(i))
    err = capsys.readouterr().err
    assert "calibrate" in err and "60/60" in err and f"{res.best_loss:.6g}" in err
    assert seen == list(range(60))  # the caller's hook still sees every evaluation
    _run(progress=False)
    assert capsys.readouterr().err == ""


def test_the_notebook_bar_is_html_and_text():
    bar = _Bar({"label": "calibrate", "total": 60, "done": 30, "failed": 2, "best": 0.125, "seconds": 1.0, "end": None})
    assert '<progress value="30" max="60">' in bar._repr_html_()
    assert repr(bar) == "calibrate: 30/60 evaluations, best loss 0.125, 2 failed, 1.0 s"


def test_live_progress_counts_failures_and_the_best_loss():
    class Handle:  # IPython's display handle, recording what it is updated with
        bars: list = []

        def update(self, bar):
            self.bars.append(repr(bar))

    live = LiveProgress(None, "notebook", every=1e9)
    live.handle = Handle()
    ok = type("O", (), {"ok": True, "loss": 2.0})
    bad = type("O", (), {"ok": False, "loss": np.inf})
    for i, o in enumerate([ok, bad, type("O", (), {"ok": True, "loss": 0.5})]):
        live(i, 0, o)
    assert live.state["done"] == 3 and live.state["failed"] == 1 and live.state["best"] == 0.5
    assert len(Handle.bars) == 1  # the first evaluation drew; the next ones came within `every`
    live.close("stopped: max_evals")
    assert Handle.bars[-1].startswith("calibrate: 3 evaluations, best loss 0.5, 1 failed")
    assert Handle.bars[-1].endswith("; stopped: max_evals")


def test_calibrate_logs_its_start_and_end(caplog):
    with caplog.at_level(logging.INFO, logger="mechcalib.calibrate.run"):
        res = _run()
    text = caplog.text
    assert "calibrating 2 parameters with de (max_evals 60)" in text
    assert f"60 evaluations (0 failed), best loss {res.best_loss:.6g}, stopped on budget" in text


def test_result_to_dataframe_holds_every_evaluation():
    pytest.importorskip("pandas", reason="Result.to_dataframe needs pandas (the dataframe extra)")
    res = _run()
    df = res.to_dataframe()
    assert list(df.columns) == ["evaluation", "batch", "x0", "x1", "loss", "status", "error", "told"]
    assert len(df) == res.n_evals == 60
    np.testing.assert_array_equal(df[["x0", "x1"]].to_numpy(), np.array(res.history.X))
    np.testing.assert_allclose(df["loss"], sphere(np.array(res.history.X)))
    assert df["loss"].min() == res.best_loss and set(df["status"]) == {"ok"}


def test_result_repr_html_is_a_table_of_the_best_point():
    res = _run()
    h = res._repr_html_()
    assert h.count("<table>") == 2
    for name, v in res.best_params.items():
        assert f"<td>{name}</td><td>{v:.6g}</td>" in h
    assert f"{res.best_loss:.6g}" in h and "budget" in h and "60 (0 failed)" in h
