"""docs/config.md, the reference of every configuration key, is generated from the schema and current: a key
added to the schema without a description, or a schema change without regenerating the file, fails here."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from mechcalib.config import reference
from mechcalib.config.reference import DOC, SECTIONS, render


def test_docs_config_md_is_current():
    assert DOC.is_file(), f"{DOC} is missing; run `python -m mechcalib.config.reference`"
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/config.md is not current with the schema; run `python -m mechcalib.config.reference`"
    )


def _nested(tp) -> set[type[BaseModel]]:
    """Every pydantic model named inside an annotation."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {tp}
    return set().union(*(_nested(a) for a in typing.get_args(tp))) if typing.get_args(tp) else set()


def test_every_section_and_key_of_the_schema_is_listed():
    listed = {m for _, _, m in SECTIONS}
    reachable = set()
    for m in listed:
        for f in m.model_fields.values():
            reachable |= _nested(f.annotation)
    assert reachable <= listed, f"sections of the schema missing from the reference: {reachable - listed}"
    text = render()
    for heading, _, model in SECTIONS:
        section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
        for key in model.model_fields:
            assert f"| `{key}` |" in section, (heading, key)


def test_a_key_without_a_description_is_refused(monkeypatch):
    monkeypatch.delitem(reference.DESCRIPTIONS, "BudgetSection.patience")
    with pytest.raises(KeyError, match=r"BudgetSection.patience has no description.*DESCRIPTIONS"):
        render()


def test_rows_state_type_default_and_bounds():
    text = render()
    assert "| `max_evals` | integer (≥ 1) | none | stop after this many evaluations |" in text
    assert '| `kind` | one of `"serial"`, `"pool"`, `"dask"`, `"slurm"`, `"pbs"` | `"serial"` |' in text
    assert "| `walltime` | text | none | slurm/pbs: each job's walltime" in text
    assert "| `command` | list of text (at least 1) | required |" in text
    assert '| `failure_loss` | number | `"inf"` |' in text


def test_the_check_mode_reports_a_stale_file(tmp_path, capsys):
    stale = tmp_path / "config.md"
    stale.write_text("old\n")
    assert reference.main(["--out", str(stale), "--check"]) == 1
    assert "not current" in capsys.readouterr().err and stale.read_text() == "old\n"
    assert reference.main(["--out", str(stale)]) == 0
    assert reference.main(["--out", str(stale), "--check"]) == 0
