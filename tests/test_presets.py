"""Presets as data: each a record with its source, named after it; the old ``paper_00x`` names still select the
same settings and warn once per name per process."""

from __future__ import annotations

import re
import warnings

import pytest

from mechcalib.core import presets as preset_module
from mechcalib.core.presets import OLD_NAMES, Preset
from mechcalib.optimizers import OPTIMIZERS, get_optimizer, make_optimizer, presets_of
from mechcalib.surrogates import MARES2016_STRATEGIES, PAPER_STRATEGIES, CVSettings

WITH_OLD_NAMES = {"ga": "paper_000", "pso": "paper_000", "tbpso": "paper_000", "abc": "paper_002"}
WITH_OLD_NAMES |= {"iabc": "paper_002", "grade": "paper_003"}


@pytest.fixture
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(preset_module, "_WARNED", set())


def test_every_preset_is_a_record_with_its_source():
    for name in OPTIMIZERS:
        cls = get_optimizer(name)
        for key, p in cls.setting_presets.items():
            assert isinstance(p, Preset) and p.name == key and p.source
            assert callable(getattr(cls, key)), (name, key)
            for old in p.aliases:
                assert OLD_NAMES[old] == key
            if p.aliases:  # a published preset names its paper: authors and year
                assert re.search(r"et al\. \(\d{4}\)", p.source), p.source
                assert key[-4:] in p.source


@pytest.mark.parametrize("name", sorted(WITH_OLD_NAMES))
def test_old_name_warns_once_and_gives_the_same_settings(name, fresh_warnings):
    old = WITH_OLD_NAMES[name]
    new = OLD_NAMES[old]
    cls = get_optimizer(name)
    assert old in presets_of(cls) and new in presets_of(cls)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        via_old = getattr(cls, old)(seed=3)
        again = make_optimizer(name, old, seed=3)  # the config's and the CLI's path
    assert [type(w.message) for w in caught] == [FutureWarning]
    assert new in str(caught[0].message) and old in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        via_new = getattr(cls, new)(seed=3)
    assert via_old.settings() == via_new.settings() == again.settings()


def test_overrides_go_over_the_preset(fresh_warnings):
    pso = get_optimizer("pso")
    with pytest.warns(FutureWarning):
        old = pso.paper_000(seed=1, max_iter=7)
    assert old.settings() == pso.kibriya2023(seed=1, max_iter=7).settings()
    assert old.max_iter == 7 and old.w_max == 0.8


def test_learning_methods_presets_and_their_old_names(fresh_warnings):
    with pytest.warns(FutureWarning, match="mares2016"):
        old = CVSettings.paper_003()
    assert old == CVSettings.mares2016() and old.K == 5000
    assert PAPER_STRATEGIES is MARES2016_STRATEGIES


def test_the_settings_of_a_preset_cannot_be_changed():
    p = get_optimizer("ga").setting_presets["kibriya2023"]
    with pytest.raises(TypeError):
        p.settings["pop_size"] = 3  # type: ignore[index]


def test_optimizers_command_prints_each_presets_source():
    from typer.testing import CliRunner

    from mechcalib.cli import app

    r = CliRunner().invoke(app, ["optimizers"], env={"COLUMNS": "240"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    for words in ("kibriya2023 (Kibriya et al. (2023)", "ding2021 (Ding et al. (2021)", "mares2016 (Mareš et al."):
        assert words in text, words
    assert "formerly paper_000" in text
