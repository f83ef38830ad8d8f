"""The one Registry: lazy entries, direct registration, unknown names, targets and entry-point plug-ins."""

from __future__ import annotations

import pickle
import sys
import textwrap
from pathlib import Path

import pytest

from mechcalib.errors import ConfigurationError, SettingError
from mechcalib.execution import EVALUATORS, PoolEvaluator, SerialEvaluator, make_evaluator
from mechcalib.inverse import NETWORKS
from mechcalib.models import MODELS, Model, get_model
from mechcalib.models.analytic import Linear
from mechcalib.objectives import F1, OBJECTIVES, Objective, make_objective
from mechcalib.optimizers import OPTIMIZERS, PSO, Optimizer, get_optimizer, make_optimizer
from mechcalib.registry import Registry, UnknownNameError, import_target


class Base:
    pass


class Child(Base):
    pass


class Other:
    pass


def _module(tmp_path: Path, monkeypatch, name: str, body: str) -> str:
    """Write ``name.py`` into a folder on ``sys.path``; returns the module name."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _distribution(root: Path, monkeypatch, dist: str, group: str, entries: dict[str, str]) -> None:
    """A fake installed distribution: ``dist-0.1.dist-info`` with METADATA and entry_points.txt on ``sys.path``."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    monkeypatch.syspath_prepend(str(root))


# -- lazy entries and direct registration --------------------------------------------------------------------
def test_lazy_entry_is_imported_on_first_lookup_only(tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "reg_lazy_mod", f"from {__name__} import Base\nclass Thing(Base):\n    pass\n")
    reg = Registry("thing", base=Base, entries={"child": Child, "thing": f"{mod}:Thing"})
    assert reg.names() == ("child", "thing") and len(reg) == 2 and list(reg) == ["child", "thing"]
    assert "thing" in reg and "nothing" not in reg and 3 not in reg
    assert mod not in sys.modules  # listing and membership import nothing
    cls = reg.get("thing")
    assert mod in sys.modules and cls.__name__ == "Thing" and issubclass(cls, Base)
    assert reg["thing"] is cls and reg.names() == ("child", "thing")  # resolving does not duplicate


def test_register_class_decorator_and_mapping_syntax():
    reg: Registry[type[Base]] = Registry("thing", base=Base, case_insensitive=True)

    @reg.register("Decorated")
    class Decorated(Base):
        pass

    reg["child"] = Child
    assert reg.get("DECORATED") is Decorated and reg["CHILD"] is Child and reg.names() == ("decorated", "child")
    del reg["child"]
    assert reg.names() == ("decorated",)
    with pytest.raises(KeyError):
        del reg["child"]
    with pytest.raises(ConfigurationError, match=r"must be a subclass of .*Base, got class .*Other"):
        reg.register("other", Other)
    with pytest.raises(ConfigurationError, match="must read 'package.module:Class'"):
        reg.register("bad", "no_colon_here")


def test_unknown_name_lists_the_valid_names_and_is_a_key_error():
    reg = Registry("thing", entries={"b": Child, "a": Base})
    with pytest.raises(UnknownNameError) as ei:
        reg.get("c")
    assert str(ei.value) == "unknown thing 'c'; valid names are ['a', 'b']"
    assert isinstance(ei.value, ConfigurationError) and isinstance(ei.value, KeyError)
    with pytest.raises(KeyError):
        reg["c"]


# -- resolve: targets and their failure modes ---------------------------------------------------------------
def test_resolve_accepts_names_targets_and_classes(tmp_path, monkeypatch):
    mod = _module(
        tmp_path,
        monkeypatch,
        "reg_target_mod",
        f"from {__name__} import Base\nclass Outer:\n    class Inner(Base):\n        pass\n",
    )
    reg = Registry("thing", base=Base, entries={"child": Child})
    assert reg.resolve("child") is Child and reg.resolve(Child) is Child
    assert reg.resolve(f"{__name__}:Child") is Child
    inner = reg.resolve(f"{mod}:Outer.Inner")
    assert inner.__qualname__ == "Outer.Inner"
    assert "reg_target_mod:Outer.Inner" not in reg  # a target is not registered by resolving it


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("reg_no_such_module_xyz:Thing", "no module named 'reg_no_such_module_xyz'; install the package"),
        (f"{__name__}:Missing", f"module '{__name__}' has no attribute 'Missing'; it defines"),
        (f"{__name__}:Other", r"must be a subclass of .*Base, got class .*Other"),
        (f"{__name__}:_module", r"must be a subclass of .*Base, got <function"),
        ("unknown_plain_name", r"unknown thing 'unknown_plain_name'; valid names are \['child'\]"),
    ],
)
def test_resolve_failure_modes(target, message):
    reg = Registry("thing", base=Base, entries={"child": Child})
    with pytest.raises(ConfigurationError, match=message):
        reg.resolve(target)


def test_target_whose_own_import_fails_reports_that_import(tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "reg_broken_mod", "import reg_dependency_that_is_missing\n")
    with pytest.raises(
        ConfigurationError,
        match=r"importing module 'reg_broken_mod' failed: No module named "
        r"'reg_dependency_that_is_missing'",
    ):
        import_target(f"{mod}:Thing", kind="thing")
    mod2 = _module(tmp_path, monkeypatch, "reg_raising_mod", "raise RuntimeError('boom')\n")
    with pytest.raises(ConfigurationError, match="importing module 'reg_raising_mod' failed: RuntimeError: boom"):
        import_target(f"{mod2}:Thing")
    with pytest.raises(ConfigurationError, match="must read 'package.module:Class'"):
        import_target("module_only:")


# -- entry points -------------------------------------------------------------------------------------------
GROUP = "mechcalib_tests.things"


def test_entry_points_are_listed_and_imported_lazily(tmp_path, monkeypatch):
    mod = _module(
        tmp_path / "code",
        monkeypatch,
        "reg_plugin_mod",
        f"from {__name__} import Base\nclass Plugged(Base):\n    pass\n",
    )
    _distribution(tmp_path / "site", monkeypatch, "reg-plugin", GROUP, {"plugged": f"{mod}:Plugged"})
    reg = Registry("thing", base=Base, group=GROUP, entries={"child": Child})
    assert reg.get("child") is Child and reg._plugins is None  # a built-in lookup does not read entry points
    assert reg.names() == ("child", "plugged") and "plugged" in reg
    assert mod not in sys.modules
    cls = reg.get("plugged")
    assert cls.__name__ == "Plugged" and mod in sys.modules and reg.resolve("plugged") is cls
    # refresh forgets what was read: a distribution removed from the path is gone
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path / "site")])
    reg.refresh()
    assert reg.names() == ("child",)


def test_broken_entry_point_names_distribution_and_entry_point(tmp_path, monkeypatch):
    _distribution(
        tmp_path,
        monkeypatch,
        "reg-broken",
        GROUP,
        {"gone": "reg_module_never_written:Thing", "wrong": f"{__name__}:Other", "child": f"{__name__}:Child"},
    )
    reg = Registry("thing", base=Base, group=GROUP, entries={"child": Child})
    with pytest.warns(UserWarning, match=r"declares the thing 'child', which is already a built-in name"):
        names = reg.names()
    assert names == ("child", "gone", "wrong")
    with pytest.raises(ConfigurationError) as ei:
        reg.get("gone")
    msg = str(ei.value)
    assert "the thing 'gone' declared by distribution 'reg-broken' 0.1" in msg
    assert f"entry point gone = 'reg_module_never_written:Thing' in group '{GROUP}'" in msg
    assert "ModuleNotFoundError" in msg and "fix that distribution or uninstall it" in msg
    with pytest.raises(
        ConfigurationError,
        match=r"the thing 'wrong' declared by distribution 'reg-broken' .* must be "
        r"a subclass of .*Base",
    ):
        reg.get("wrong")


# -- the package's registries --------------------------------------------------------------------------------
def test_package_registries_keep_their_public_functions():
    assert "duffing" in MODELS and len(MODELS) >= 11 and MODELS.base is Model and MODELS.group == "mechcalib.models"
    assert isinstance(get_model("linear"), Linear)
    assert isinstance(get_model("mechcalib.models.analytic:Linear"), Linear)
    assert get_optimizer("PSO") is PSO and OPTIMIZERS.base is Optimizer and OPTIMIZERS.group == "mechcalib.optimizers"
    assert isinstance(make_optimizer("pso", preset="kibriya2023", seed=1), PSO)
    assert get_optimizer("mechcalib.optimizers.pso:PSO") is PSO
    assert OBJECTIVES.base is Objective and OBJECTIVES.group == "mechcalib.objectives"
    assert isinstance(make_objective("mechcalib.objectives.curves:F1"), F1)
    assert EVALUATORS.names() == ("serial", "pool", "dask") and EVALUATORS.get("POOL") is PoolEvaluator
    assert isinstance(make_evaluator("serial"), SerialEvaluator)
    assert NETWORKS.names() == ("partsnet", "gdr") and NETWORKS.get("gdr").__name__ == "GDRNet"
    for reg, bad in ((MODELS, "lineer"), (OPTIMIZERS, "pso2"), (OBJECTIVES, "rss"), (EVALUATORS, "slurm")):
        with pytest.raises(ConfigurationError, match=f"unknown {reg.kind} '{bad}'; valid names are"):
            reg.resolve(bad)
    with pytest.raises(ConfigurationError, match=r"must be a subclass of mechcalib.core.model.Model"):
        get_model("mechcalib.optimizers.pso:PSO")


def test_setting_error_fields_message_and_pickling():
    e = SettingError("PSO", "swarm_size", "an integer >= 1", -3)
    assert str(e) == "PSO: swarm_size must be an integer >= 1, got -3" and isinstance(e, ConfigurationError)
    f = pickle.loads(pickle.dumps(SettingError("", "mode", "one of ['a']", "b", message="custom text")))
    assert (f.owner, f.name, f.expected, f.got, str(f)) == ("", "mode", "one of ['a']", "b", "custom text")
    with pytest.raises(SettingError) as ei:
        make_optimizer("pso", swarm_size=0)
    assert (ei.value.owner, ei.value.name, ei.value.got) == ("pso", "swarm_size", 0)
