"""The reliability audit's sixteen failed trials, each through the command line as a user meets it: the message
names the right file (or setting), suggests `mechcalib repair` only for the store's own errors, and prints no
traceback.

Where each case is tested:
- 1-3, the write-ahead log lost after a kill (with and without a reader holding a snapshot) or left behind by
  a copy: ``test_no_silent_loss.py::test_deleted_wal_after_a_kill_is_named_with_its_count_before_anything_is_simulated``
  (both readers), and the ``walcopy`` scenario of ``benchmarks/reliability.py``;
- 4, an emptied store: ``test_no_silent_loss.py::test_emptied_store_under_a_finished_run_is_refused_with_the_count``;
- 5, ``failure_loss = -1``: :func:`test_negative_failure_loss_is_refused_by_check`;
- 6-10, record files that are not records (random bytes named ``.npz``, an object array, a huge field, a garbage
  HDF5 file, one row): :func:`test_a_record_that_is_not_a_record_is_named_by_check`;
- 11, a garbage CSV experiment: :func:`test_a_garbage_experiment_is_named_not_the_store`;
- 12, a garbled ``result.json`` under ``uncertainty``: :func:`test_garbled_result_json_under_uncertainty_is_named`;
- 13, a full disk from the start: :func:`test_disk_full_names_the_file_and_its_own_disk`;
- 14-15, a run name with a newline, and one longer than a file name may be:
  :func:`test_run_names_a_folder_cannot_hold_are_refused_by_check`;
- 16, data of +-1e308: :func:`test_absurd_data_is_refused_by_check_naming_the_file`.
"""

from __future__ import annotations

import errno
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.runs import RESULT_FILE, UNCERTAINTY_FILE

runner = CliRunner()

DUFFING = """\
name = {name}
seed = 3
failure_loss = {failure_loss}
[model]
name = "duffing"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "synth"
noise = 0.02
seed = 7
conditions = {{ t_end = 5.0, fs = 20.0 }}
[objective]
name = "overlap_rss"
options = {{ n_points = 50 }}
[optimizer]
name = "random"
[budget]
max_evals = 12
[evaluator]
kind = "serial"
[output]
plots = false
"""

# a measured displacement record drives the hysteretic model: the record file is the one under test
PROTOCOL = """\
[model]
name = "hysteresis_protocol"
options = {{ law = "boucwen_opensees" }}
[[experiments]]
path = "force.csv"
name = "sine"
channels = {{ force = ["time", "force"] }}
conditions = {{ displacement = "{record}", column = "displacement", time_column = "time" }}
[optimizer]
name = "random"
[budget]
max_evals = 4
"""


def _cli(*args: object) -> tuple[int, str]:
    r = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, " ".join(r.output.split())


def _duffing(tmp_path: Path, name: str = '"duff"', failure_loss: str = "inf") -> Path:
    cfg = tmp_path / "duff.toml"
    cfg.write_text(DUFFING.format(name=name, failure_loss=failure_loss))
    return cfg


def test_negative_failure_loss_is_refused_by_check(tmp_path):
    code, out = _cli("check", _duffing(tmp_path, failure_loss="-1.0"))
    assert code == 2, out
    assert "failure_loss" in out and "-1" in out and "repair" not in out


def _write_record(path: Path, kind: str) -> None:
    t = np.linspace(0.0, 2.0, 41)
    if kind == "random.npz":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "object.npz":
        np.savez(path, time=t, displacement=np.array([{"a": 1}] * t.size, dtype=object))
    elif kind == "huge_field.csv":
        path.write_text("time,displacement\n0," + "9" * 5000 + "\n1,2\n")
    elif kind == "garbage.h5":
        path.write_bytes(b"\x89HDF\r\n\x1a\n" + np.random.default_rng(1).bytes(2048))
    elif kind == "one_row.csv":
        path.write_text("time,displacement\n0.0,0.1\n")
    else:  # pragma: no cover - the parametrisation below names every kind
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["random.npz", "object.npz", "huge_field.csv", "garbage.h5", "one_row.csv"])
def test_a_record_that_is_not_a_record_is_named_by_check(tmp_path, monkeypatch, kind):
    if kind == "garbage.h5":
        pytest.importorskip("h5py", reason="HDF5 records need the hdf5 extra (h5py)")
    monkeypatch.setenv("MECHCALIB_MAX_LINE_CHARS", "1000")  # the huge field: a lowered limit, same rule
    t = np.linspace(0.0, 2.0, 41)
    np.savetxt(tmp_path / "force.csv", np.c_[t, np.sin(t)], delimiter=",", header="time,force", comments="")
    _write_record(tmp_path / kind, kind)
    (tmp_path / "c.toml").write_text(PROTOCOL.format(record=kind))
    code, out = _cli("check", tmp_path / "c.toml")
    assert code == 2, out
    assert kind in out and "repair" not in out and "store" not in out, out


@pytest.mark.parametrize("content", [b"\x98\xff\x00garbage" * 50, b"time;;;\n\x00\x00\n"], ids=["binary", "nul-bytes"])
def test_a_garbage_experiment_is_named_not_the_store(tmp_path, content):
    (tmp_path / "force.csv").write_bytes(content)
    np.savetxt(
        tmp_path / "disp.csv",
        np.c_[np.arange(5.0), np.arange(5.0)],
        delimiter=",",
        header="time,displacement",
        comments="",
    )
    (tmp_path / "c.toml").write_text(PROTOCOL.format(record="disp.csv"))
    code, out = _cli("check", tmp_path / "c.toml")
    assert code == 2, out
    assert "force.csv" in out and "repair" not in out, out


def test_absurd_data_is_refused_by_check_naming_the_file(tmp_path):
    t = np.linspace(0.0, 2.0, 41)
    force = np.sin(t)
    force[[5, 9]] = [1e308, -1e308]
    np.savetxt(tmp_path / "force.csv", np.c_[t, force], delimiter=",", header="time,force", comments="")
    np.savetxt(tmp_path / "disp.csv", np.c_[t, t], delimiter=",", header="time,displacement", comments="")
    (tmp_path / "c.toml").write_text(PROTOCOL.format(record="disp.csv"))
    code, out = _cli("check", tmp_path / "c.toml")
    assert code == 2, out
    assert "force.csv" in out and "1e+200" in out and "bounds" not in out, out


@pytest.mark.parametrize(
    ("name", "said"),
    [('"a\\nb"', "control characters"), ('"a\\u2028b"', "control characters"), ('"' + "x" * 300 + '"', "255 bytes")],
    ids=["newline", "line-separator", "300-characters"],
)
def test_run_names_a_folder_cannot_hold_are_refused_by_check(tmp_path, name, said):
    cfg = _duffing(tmp_path, name=name)
    code, out = _cli("check", cfg)
    assert code == 2 and "`name`" in out and said in out, out
    code, out = _cli("run", cfg, "-q")
    assert code == 2 and said in out, out
    assert not list(tmp_path.glob("runs/*")), "a refused run made no folder"


def test_a_long_name_of_few_bytes_and_a_non_ascii_name_are_accepted(tmp_path):
    code, out = _cli("check", _duffing(tmp_path, name='"' + "é" * 127 + '"'))  # 254 bytes
    assert code == 0, out


def test_disk_full_names_the_file_and_its_own_disk(tmp_path, monkeypatch):
    """A failed ``write`` carries no file name; the message must name the file and the free space of the disk
    that holds it, not of the current folder's."""
    original = Path.write_text

    def full(self: Path, *args, **kwargs):
        if ".tmp" in self.name:  # the run folder's JSON files are written through a temporary file
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    free = shutil.disk_usage(tmp_path).free / 2**20
    code, out = _cli("run", _duffing(tmp_path), "--out", tmp_path / "run", "-q")
    assert code == 1, out
    assert f"writing {tmp_path / 'run' / 'run.json'}" in out, out
    said = re.search(r"\(([0-9.]+) MiB free on its disk\)", out)
    assert said is not None and abs(float(said.group(1)) - free) < 64, out  # tmp_path's disk, read just before
    assert "run the command again" in out and "mechcalib resume" not in out, out


@pytest.fixture()
def finished_run(tmp_path) -> Path:
    code, out = _cli("run", _duffing(tmp_path), "--out", tmp_path / "run", "-q")
    assert code == 0, out
    return tmp_path / "run"


def test_garbled_result_json_under_uncertainty_is_named(finished_run, caplog):
    (finished_run / RESULT_FILE).write_text('{"best": garbage')
    with caplog.at_level("WARNING"):
        code, out = _cli("uncertainty", finished_run)
    said = out + " ".join(r.getMessage() for r in caplog.records)
    assert code == 0, out
    assert RESULT_FILE in said and "repair" not in said and "could not be decoded" not in said, said
    data = json.loads((finished_run / UNCERTAINTY_FILE).read_text())  # the analysis is kept
    assert data["source"]["run_name"] == "duff"
    assert (finished_run / RESULT_FILE).read_text() == '{"best": garbage'  # left as it was


def test_garbled_run_json_resumes_the_run_not_an_analysis_run(finished_run, caplog):
    code, out = _cli("uncertainty", finished_run)
    assert code == 0, out
    (finished_run / "run.json").write_text("{")
    with caplog.at_level("WARNING"):
        code, out = _cli("resume", finished_run, "-q")
    assert code == 0, out
    assert "run 'duff' finished" in out and "duff.jacobian" not in out and "duff.polish" not in out, out
    assert any("run.json" in r.getMessage() for r in caplog.records)
