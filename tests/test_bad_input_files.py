"""Files that are not data (issue 31, items 4 and 5): each is refused with a message that names the file, the
rule and the fix; none is blamed on the run store, none prints a traceback."""

from __future__ import annotations

import os

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.core.data import Experiment, read_table
from mechcalib.errors import DataError
from mechcalib.records import read_record


def test_random_bytes_npz(tmp_path):
    p = tmp_path / "rand.npz"
    p.write_bytes(os.urandom(2000))
    with pytest.raises(DataError, match=r"rand\.npz: not a NumPy \.npz archive") as e:
        read_record(p, "F")
    assert "allow_pickle" not in str(e.value)  # no advice to unpickle


def test_object_array_npz_is_never_unpickled(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, t=np.array([0.0, 1.0, 2.0]), F=np.array([1, "a", None], dtype=object))
    with pytest.raises(DataError, match=r"obj\.npz: array 'F' holds Python objects"):
        read_record(p, "F")


def test_oversized_file_refused_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.csv"
    with p.open("wb") as f:  # a sparse 3 GiB file: over the default 2 GiB limit, no disk used
        f.truncate(3 * 1024**3)
    with pytest.raises(DataError, match=r"big\.csv: 3\.0 GiB, larger than the 2\.0 GiB.*MECHCALIB_MAX_DATA_BYTES"):
        read_record(p, "F")
    small = tmp_path / "small.csv"
    small.write_text("t,F\n" + "".join(f"{i},{i}\n" for i in range(200)))
    monkeypatch.setenv("MECHCALIB_MAX_DATA_BYTES", "100")
    with pytest.raises(DataError, match=r"small\.csv: .*larger than the 100 bytes"):
        read_table(small)


def test_huge_field_refused_quickly(tmp_path, monkeypatch):
    p = tmp_path / "field.csv"
    p.write_text("t,F\n0," + "9" * 3_000_000 + "\n1,2\n")
    with pytest.raises(DataError, match=r"field\.csv: line 2 is longer than 1048576 characters"):
        read_record(p, "F")
    monkeypatch.setenv("MECHCALIB_MAX_LINE_CHARS", "50")
    p.write_text("t,F\n0," + "9" * 100 + "\n")
    with pytest.raises(DataError, match=r"line 2 is longer than 50 characters"):
        Experiment.from_csv(p)


def test_garbage_hdf5_names_the_file(tmp_path):
    pytest.importorskip("h5py", reason="h5py (the extra 'hdf5') is not installed")
    p = tmp_path / "garb.h5"
    p.write_bytes(os.urandom(2000))
    with pytest.raises(DataError, match=r"garb\.h5: not a readable HDF5 file"):
        read_record(p, "F")


def test_one_row_record_and_experiment_need_two_samples(tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("t,F\n0,1\n")
    with pytest.raises(DataError, match=r"one\.csv, column 'F': a record needs at least 2 samples"):
        read_record(p, "F")
    np.savez(tmp_path / "one.npz", t=np.array([0.0]), F=np.array([1.0]))
    with pytest.raises(DataError, match=r"one\.npz, column 'F': a record needs at least 2 samples"):
        read_record(tmp_path / "one.npz", "F")
    with pytest.raises(DataError, match=r"one\.csv: curve 'F' vs 't': at least 2 points"):
        Experiment.from_csv(p)


def test_binary_csv_is_not_a_table(tmp_path):
    p = tmp_path / "bin.csv"
    p.write_bytes(b"\x98\xff" + os.urandom(2000))
    with pytest.raises(DataError, match=r"bin\.csv: not a text table"):
        read_record(p, "F")


def test_absurd_magnitudes_refused_at_load(tmp_path):
    p = tmp_path / "huge.csv"
    p.write_text("t,F\n0,1\n1,1e308\n2,-1e308\n")
    with pytest.raises(DataError, match=r"huge\.csv, column 'F': 2 value\(s\) beyond \+-1e\+200"):
        read_record(p, "F")
    with pytest.raises(DataError, match=r"huge\.csv, column 'F': .*data row 2"):
        Experiment.from_csv(p)


LINEAR = """\
[model]
name = "linear"
[[experiments]]
path = "exp.csv"
name = "linear"
[experiments.channels]
y = ["x", "y"]
[optimizer]
name = "random"
[budget]
max_evals = 4
"""


@pytest.mark.parametrize("content", [b"\x98\xff" + b"\x00garbage" * 100, b"x,y\n0,5\n1,1e308\n2,5.4\n"])
def test_check_blames_the_experiment_file_not_the_store(tmp_path, content):
    from mechcalib.cli import app

    (tmp_path / "exp.csv").write_bytes(content)
    (tmp_path / "lin.toml").write_text(LINEAR)
    res = CliRunner().invoke(app, ["check", str(tmp_path / "lin.toml")])
    out = res.output
    assert res.exit_code == 2, out
    assert "exp.csv" in out and "repair" not in out and "Traceback" not in out


# -- the same cases through the one reader of measured tables, as experiments ---------------------------------
def _check(tmp_path, data_name: str, content: bytes | None = None):
    """`mechcalib check` on a config whose experiment is ``data_name``: (exit code, output)."""
    from mechcalib.cli import app

    if content is not None:
        (tmp_path / data_name).write_bytes(content)
    (tmp_path / "lin.toml").write_text(LINEAR.replace("exp.csv", data_name))
    res = CliRunner().invoke(app, ["check", str(tmp_path / "lin.toml")])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("garb.h5", r"garb\.h5: not a readable HDF5 file"),
        ("rand.npz", r"rand\.npz: not a NumPy \.npz archive"),
        ("garb.parquet", r"garb\.parquet: not a readable Parquet file"),
        ("garb.mat", r"garb\.mat: not a readable MATLAB"),
    ],
)
def test_garbage_binary_experiment_named_without_a_decode_error(tmp_path, name, needle):
    if name.endswith(".h5"):
        pytest.importorskip("h5py", reason="h5py (the extra 'hdf5') is not installed")
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow", reason="pyarrow (the extra 'parquet') is not installed")
    code, out = _check(tmp_path, name, os.urandom(3000))
    assert code == 2, out
    flat = " ".join(out.split())
    import re

    assert re.search(needle, flat), out
    assert "experiments[0].path" in flat and "UTF-8" not in flat and "utf-8" not in flat
    assert "Traceback" not in out and "repair" not in out


def test_object_array_and_one_row_experiments(tmp_path):
    np.savez(tmp_path / "obj.npz", x=np.array([0.0, 1.0, 2.0]), y=np.array([1, "a", None], dtype=object))
    with pytest.raises(DataError, match=r"obj\.npz: array 'y' holds Python objects"):
        Experiment.from_file(tmp_path / "obj.npz", {"y": ("x", "y")})
    code, out = _check(tmp_path, "obj.npz")
    assert code == 2 and "obj.npz" in out and "Traceback" not in out
    np.savez(tmp_path / "one.npz", x=np.array([0.0]), y=np.array([1.0]))
    with pytest.raises(DataError, match=r"one\.npz: curve 'y' vs 'x': at least 2 points"):
        Experiment.from_file(tmp_path / "one.npz", {"y": ("x", "y")})
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="pyarrow (the extra 'parquet') is not installed")
    pd.DataFrame({"x": [0.0], "y": [1.0]}).to_parquet(tmp_path / "one.parquet")
    with pytest.raises(DataError, match=r"one\.parquet, column 'y': a record needs at least 2 samples"):
        read_record(tmp_path / "one.parquet", "y", time="x")


def test_huge_field_in_a_whitespace_export_with_metadata(tmp_path):
    p = tmp_path / "export.txt"
    p.write_text("Instrument: X\n\n t  F\n0 1\n1 " + "9" * 2_000_000 + "\n")
    with pytest.raises(DataError, match=r"export\.txt: line 5 is longer than 1048576 characters"):
        Experiment.from_file(p)
    with pytest.raises(DataError, match=r"export\.txt: line 5 is longer"):
        read_record(p, "F", time="t")
