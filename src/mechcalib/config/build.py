"""Turning a validated run configuration into objects: model, space, experiments, objective, optimiser.

Each section's logic appends :class:`ConfigIssue` records and returns ``None`` on failure, so that one error
lists every problem of a file.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..calibrate import Termination
from ..core.data import Experiment
from ..core.parameters import Parameter, ParameterSpace
from ..core.problem import Problem, experiment_from_model, objective_lower_bound
from ..core.tables import TableOptions, read_measured
from ..core.units import UnitError, curve_to_units
from ..errors import ConfigurationError, DataError
from ..models import MODELS, Model
from ..models.external import CsvOutput, ExternalModel, ExternalSetupError, ExternalSpec
from ..objectives import OBJECTIVES, Objective
from ..optimizers import OPTIMIZERS, presets_of
from ..optimizers._base import Optimizer
from ..registry import Registry, UnknownNameError
from .errors import ConfigFileError, ConfigIssue, _found, _key, issue_from_error
from .schema import (
    ExternalSection,
    FileExperiment,
    ParameterSpec,
    RunSchema,
    SyntheticExperiment,
    _default,
    _validate_settings,
    resolve_file_conditions,
)

__all__ = ["RunConfig", "load_config", "model_conditions"]


class RunConfig(RunSchema):
    """A validated run configuration. Build it with :func:`load_config` or :meth:`from_dict`."""

    def check(self) -> None:
        """Validate everything that can be checked without simulating; raise one error listing every issue."""
        issues: list[ConfigIssue] = []
        model = self._model(issues)
        space = self._space(model, issues) if model is not None else None
        weights = self._experiments(model, issues, simulate=False)
        self._objective(weights, issues)
        self._optimizer(issues, dim=space.dim if space is not None else None)
        self._raise(issues)

    # -- builders -------------------------------------------------------------------------------------------
    def build_model(self) -> Model:
        issues: list[ConfigIssue] = []
        model = self._model(issues)
        self._raise(issues)
        assert model is not None
        return model

    def build_space(self, model: Model | None = None) -> ParameterSpace:
        issues: list[ConfigIssue] = []
        model = model or self.build_model()
        space = self._space(model, issues)
        self._raise(issues)
        assert space is not None
        return space

    def build_experiments(self, model: Model | None = None) -> list[Experiment]:
        """The experiments; synthetic ones are simulated here."""
        model = model or self.build_model()
        issues: list[ConfigIssue] = []
        out: list[Experiment] = []
        self._experiments(model, issues, simulate=True, out=out)
        self._raise(issues)
        return out

    def build_objective(self) -> Objective:
        issues: list[ConfigIssue] = []
        weights = self._experiments(None, issues, simulate=False)
        obj = self._objective(weights, issues)
        self._raise(issues)
        assert obj is not None
        return obj

    def build_problem(self) -> Problem:
        """Model + space + experiments + objective, with the failure loss and ``output.keep_responses``."""
        model = self.build_model()
        space = self.build_space(model)
        experiments = self.build_experiments(model)
        objective = self.build_objective()
        try:
            return Problem(
                model,
                experiments,
                objective,
                space=space,
                failure_loss=self.failure_loss,
                keep_responses=self.output.keep_responses,
            )
        except ConfigurationError as exc:
            raise ConfigFileError(
                [ConfigIssue("experiments", "experiments the model can simulate", str(exc))], self.source
            ) from None

    def build_optimizer(self) -> Optimizer:
        """The optimiser, seeded with the top-level ``seed``."""
        issues: list[ConfigIssue] = []
        opt = self._optimizer(issues)
        self._raise(issues)
        assert opt is not None
        return opt

    def build_termination(self) -> Termination:
        b = self.budget
        return Termination(
            max_evals=b.max_evals, max_iters=b.max_iters, target=b.target, patience=b.patience, min_delta=b.min_delta
        )

    def calibrate_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`mechcalib.calibrate` other than problem, optimizer and termination."""
        return {
            "n_alternatives": self.output.n_alternatives,
            "alternative_distance": self.output.alternative_distance,
            "asynchronous": self.optimizer.asynchronous,
        }

    # -- section logic (append issues, return None on failure) ----------------------------------------------
    def _model(self, issues: list[ConfigIssue]) -> Model | None:
        m = self.model
        if m.external is not None:
            space = self._external_space(issues)
            if space is None:
                return None
            try:
                model = ExternalModel(space, external_spec(m.external))
            except ExternalSetupError as exc:
                issues.append(ConfigIssue(_key("model", "external", *exc.parts), exc.expected, exc.found))
                return None
            except ConfigurationError as exc:
                issues.append(ConfigIssue("model.external", "a valid external model", str(exc)))
                return None
        else:
            assert m.name is not None  # the schema asks for `name` or `external`
            cls = _resolve(MODELS, m.name, "model.name", issues)
            if cls is None:
                return None
            try:
                model = cls(**m.options)
            except TypeError as exc:
                issues.append(ConfigIssue("model.options", f"keyword arguments of model {m.name!r}", str(exc)))
                return None
            except ConfigurationError as exc:
                issues.append(issue_from_error(exc, ("model", "options"), m.options, ("model", "options")))
                return None
        if m.preset not in model.presets:
            issues.append(
                ConfigIssue(
                    "model.preset", f"a preset of model {model.name!r}: {sorted(model.presets)}", _found(m.preset)
                )
            )
        return model

    def _external_space(self, issues: list[ConfigIssue]) -> ParameterSpace | None:
        if not self.parameters:
            issues.append(
                ConfigIssue(
                    "parameters", "a table per parameter of the external model (lower, upper or fixed)", "no parameters"
                )
            )
            return None
        params, ok = [], True
        for name, s in self.parameters.items():
            if s.fixed is None:
                for k in ("lower", "upper"):
                    if getattr(s, k) is None:
                        issues.append(
                            ConfigIssue(
                                _key("parameters", name, k),
                                "a number (an external model has no default bounds)",
                                "nothing",
                            )
                        )
                        ok = False
                if s.lower is None or s.upper is None:
                    continue
            p = self._parameter(name, s, None, issues)
            ok = ok and p is not None
            params.append(p)
        if not ok:
            return None
        return ParameterSpace(params)

    def _parameter(
        self, name: str, s: ParameterSpec, base: Parameter | None, issues: list[ConfigIssue]
    ) -> Parameter | None:
        nan = math.nan
        lower = s.lower if s.lower is not None else (base.lower if base else nan)
        upper = s.upper if s.upper is not None else (base.upper if base else nan)
        if s.bounds is not None:
            lower, upper = s.bounds
        scale = s.scale or (base.scale if base else "linear")
        sign = s.sign or (base.sign if base else "any")
        fixed = s.fixed if s.fixed is not None else (base.fixed if base and not s.free else None)
        if not name.isidentifier():
            issues.append(
                ConfigIssue(
                    _key("parameters", name), "a parameter name made of letters, digits and underscores", _found(name)
                )
            )
            return None
        if not (math.isnan(lower) and math.isnan(upper) and fixed is not None):
            if not lower < upper:
                issues.append(
                    ConfigIssue(_key("parameters", name), "lower < upper", f"lower={lower!r}, upper={upper!r}")
                )
                return None
            if scale == "log" and (upper >= 0 if sign == "negative" else lower <= 0):
                issues.append(
                    ConfigIssue(
                        _key("parameters", name, "scale"),
                        'scale = "linear", or positive bounds for "log" (bounds below zero with sign = "negative")',
                        f"scale = 'log' with lower={lower!r}, upper={upper!r}, sign={sign!r}",
                    )
                )
                return None
        try:
            return Parameter(
                name,
                lower,
                upper,
                scale,
                s.unit if s.unit is not None else (base.unit if base else ""),
                fixed,
                s.description if s.description is not None else (base.description if base else ""),
                sign,
            )
        except ConfigurationError as exc:
            issues.append(ConfigIssue(_key("parameters", name), "a valid parameter", str(exc)))
            return None

    def _space(self, model: Model, issues: list[ConfigIssue]) -> ParameterSpace | None:
        if isinstance(model, ExternalModel):
            return model.space
        names = model.space.names
        bad = False
        for n in self.parameters:
            if n not in names:
                issues.append(
                    ConfigIssue(
                        _key("parameters", n),
                        f"a parameter of model {model.name!r}: {list(names)}",
                        f"unknown parameter {n!r}",
                    )
                )
                bad = True
        params = []
        for p in model.space:
            if p.name in self.parameters:
                q = self._parameter(p.name, self.parameters[p.name], p, issues)
                bad = bad or q is None
                params.append(q)
            else:
                params.append(p)
        if bad:
            return None
        space = ParameterSpace(params)
        if space.dim == 0:
            issues.append(ConfigIssue("parameters", "at least one free (not fixed) parameter", "every parameter fixed"))
            return None
        return space

    def _experiments(
        self, model: Model | None, issues: list[ConfigIssue], *, simulate: bool, out: list[Experiment] | None = None
    ) -> dict[str, float]:
        """Check (and with ``out``, build) the experiments; returns the merged channel weights."""
        weights: dict[str, tuple[float, str]] = {}
        names: dict[str, int] = {}

        def weigh(ch: str, w: float | None, key: str) -> None:
            if w is None:
                return
            if ch in weights and weights[ch][0] != w:
                issues.append(
                    ConfigIssue(
                        key,
                        f"the weight {weights[ch][0]!r} given at `{weights[ch][1]}` (the objective "
                        "weighs a channel once for all experiments)",
                        _found(w),
                    )
                )
            weights.setdefault(ch, (w, key))

        for i, spec in enumerate(self.experiments):
            base = ("experiments", i)
            if isinstance(spec, FileExperiment):
                for ch, c in (spec.channels or {}).items():
                    weigh(ch, c.weight, _key(*base, "channels", ch, "weight"))
                exp = self._file_experiment(i, spec, issues)
                channel_names = list(exp.channel_names) if exp is not None else list(spec.channels or {})
            else:
                for ch, w in spec.weights.items():
                    weigh(ch, w, _key(*base, "weights", ch))
                exp = None
                if model is not None:
                    kept = spec.channels if spec.channels is not None else list(model.channel_names)
                    for ch in spec.weights:
                        if ch not in kept:
                            issues.append(
                                ConfigIssue(
                                    _key(*base, "weights", ch),
                                    f"one of the experiment's channels {kept}",
                                    f"channel {ch!r}",
                                )
                            )
                    exp = self._synthetic_experiment(i, spec, model, issues, simulate)
                channel_names = (
                    list(spec.channels)
                    if spec.channels is not None
                    else (list(model.channel_names) if model is not None else [])
                )
            ename = exp.name if exp is not None else spec.name
            if ename is None and isinstance(spec, SyntheticExperiment):
                ename = f"synthetic{i}"
            if ename is not None:
                if ename in names:
                    issues.append(
                        ConfigIssue(
                            _key(*base, "name"),
                            f"a name no other experiment uses (experiments[{names[ename]}] has it)",
                            _found(ename),
                        )
                    )
                names.setdefault(ename, i)
            if model is not None:
                for ch in channel_names:
                    if ch not in model.channel_names:
                        issues.append(
                            ConfigIssue(
                                _key(*base, "channels", ch),
                                f"a channel of model {model.name!r}: {list(model.channel_names)}",
                                f"channel {ch!r}",
                            )
                        )
                cond = dict(exp.conditions) if exp is not None else dict(spec.conditions)
                _check_conditions(model, cond, base, issues)
            if model is not None and exp is not None and isinstance(spec, FileExperiment):
                exp = _to_model_units(exp, model, base, issues)
            if out is not None and exp is not None:
                out.append(exp)
        return {ch: w for ch, (w, _) in weights.items()}

    def _file_experiment(self, i: int, spec: FileExperiment, issues: list[ConfigIssue]) -> Experiment | None:
        base = ("experiments", i)
        path = Path(spec.path)
        if not path.is_file():
            issues.append(ConfigIssue(_key(*base, "path"), "an existing data file", f"{spec.path!r} (not found)"))
            return None
        if spec.file_format == "json":
            exp = _json_experiment(path, spec, base, issues)
        else:
            exp = _table_experiment(path, spec, base, issues)
        if exp is None or not spec.channels:
            return exp
        return _scaled_channels(exp, spec, base, issues)

    def _synthetic_experiment(
        self, i: int, spec: SyntheticExperiment, model: Model, issues: list[ConfigIssue], simulate: bool
    ) -> Experiment | None:
        base = ("experiments", i)
        n0 = len(issues)
        preset = spec.preset or self.model.preset
        if preset not in model.presets:
            if spec.preset is None:
                return None  # reported at `model.preset`
            issues.append(
                ConfigIssue(
                    _key(*base, "preset"), f"a preset of model {model.name!r}: {sorted(model.presets)}", _found(preset)
                )
            )
        for k in spec.values:
            if k not in model.space.names:
                issues.append(
                    ConfigIssue(
                        _key(*base, "values", k),
                        f"a parameter of model {model.name!r}: {list(model.space.names)}",
                        f"unknown parameter {k!r}",
                    )
                )
        if not simulate or len(issues) > n0:
            return None
        try:
            model.validate_conditions(spec.conditions)
        except ConfigurationError:
            return None  # reported with the key path by the caller
        try:
            exp = experiment_from_model(
                model,
                spec.values,
                preset=preset,
                conditions=spec.conditions,
                noise=spec.noise,
                seed=spec.seed,
                name=spec.name or f"synthetic{i}",
            )
        except (ConfigurationError, DataError) as exc:
            issues.append(ConfigIssue(_key(*base), "a model run that succeeds at the given values", str(exc)))
            return None
        if spec.channels is not None:
            exp = replace(exp, channels={c: exp.channels[c] for c in spec.channels if c in exp.channels})
        return replace(exp, weight=spec.weight)

    def _objective(self, weights: Mapping[str, float], issues: list[ConfigIssue]) -> Objective | None:
        o = self.objective
        cls = _resolve(OBJECTIVES, o.name, "objective.name", issues)
        if cls is None:
            return None
        if dataclasses.is_dataclass(cls):
            hints = typing.get_type_hints(cls)
            fields = {f.name: (hints.get(f.name, Any), _default(f)) for f in dataclasses.fields(cls) if f.init}
        else:  # a user's objective may be a plain class: its keyword arguments are its options
            fields = _keyword_fields(
                cls, kinds=(inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            )
        opts = _validate_settings(f"{cls.__name__}Options", fields, o.options, ("objective", "options"), issues)
        if opts is None:
            return None
        merged = dict(weights)
        for ch, w in (opts.get("weights") or {}).items():
            if ch in weights and weights[ch] != w:
                issues.append(
                    ConfigIssue(
                        _key("objective", "options", "weights", ch),
                        f"the weight {weights[ch]!r} the experiments give",
                        _found(w),
                    )
                )
            merged[ch] = w
        if "weights" in fields:
            opts["weights"] = merged
        elif merged:
            issues.append(
                ConfigIssue(
                    "objective.name",
                    "an objective that takes channel weights (a `weights` option)",
                    f"{o.name!r} with channel weights {merged}",
                )
            )
            return None
        if opts.get("channels") is not None:
            opts["channels"] = tuple(opts["channels"])
        try:
            obj = cls(**opts)
        except ConfigurationError as exc:
            issues.append(issue_from_error(exc, ("objective", "options"), o.options, ("objective",)))
            return None
        self._failure_loss_fits(obj, issues)
        return obj

    def _failure_loss_fits(self, objective: Objective, issues: list[ConfigIssue]) -> None:
        """Refuse a ``failure_loss`` below the lowest loss the objective declares (summed over the
        experiments' weights): a failed simulation would beat every real result."""
        weights = [1.0 if e.weight is None else e.weight for e in self.experiments]
        lower = objective_lower_bound(objective, weights)
        if self.failure_loss < lower:
            issues.append(
                ConfigIssue(
                    "failure_loss",
                    f"inf (the default) or a penalty >= {lower!r}, the lowest loss objective "
                    f"{self.objective.name!r} can give (a failed simulation must not beat a real result)",
                    _found(self.failure_loss),
                )
            )

    def _optimizer(self, issues: list[ConfigIssue], dim: int | None = None) -> Optimizer | None:
        o = self.optimizer
        cls = _resolve(OPTIMIZERS, o.name, "optimizer.name", issues)
        if cls is None:
            return None
        if o.preset is not None and o.preset not in presets_of(cls):
            valid = sorted(presets_of(cls))
            issues.append(
                ConfigIssue(
                    "optimizer.preset",
                    f"a preset of optimizer {o.name!r}: {valid}"
                    if valid
                    else f"no preset (optimizer {o.name!r} has none)",
                    _found(o.preset),
                )
            )
            return None
        if "seed" in o.settings:
            issues.append(
                ConfigIssue(
                    "optimizer.settings.seed", "the seed as the top-level key `seed`", _found(o.settings["seed"])
                )
            )
            return None
        fields = _keyword_fields(cls, kinds=(inspect.Parameter.KEYWORD_ONLY,))
        settings = _validate_settings(f"{cls.__name__}Settings", fields, o.settings, ("optimizer", "settings"), issues)
        if settings is None:
            return None
        settings = {k: v for k, v in settings.items() if k in o.settings}
        try:
            opt = getattr(cls, o.preset)(seed=self.seed, **settings) if o.preset else cls(seed=self.seed, **settings)
        except ConfigurationError as exc:
            issues.append(
                issue_from_error(
                    exc, ("optimizer", "settings"), o.settings, ("optimizer", "preset") if o.preset else ("optimizer",)
                )
            )
            return None
        except TypeError as exc:
            issues.append(ConfigIssue("optimizer.settings", f"settings of optimizer {o.name!r}", str(exc)))
            return None
        if dim is not None:
            try:
                opt.copy().setup(dim)
            except ConfigurationError as exc:
                issues.append(issue_from_error(exc, ("optimizer", "settings"), o.settings, ("optimizer",)))
                return None
        return opt


def _to_model_units(exp: Experiment, model: Model, base: tuple, issues: list[ConfigIssue]) -> Experiment | None:
    """The experiment's curves in the model's channel units (pint, :mod:`mechcalib.core.units`, the mechanism
    records use): a unit that converts does, one that does not is an issue naming the line that fixes it."""
    units = {c.name: (c.x_unit, c.y_unit) for c in model.channels}
    curves = dict(exp.channels)
    for ch, cur in exp.channels.items():
        if ch not in units:
            continue
        try:
            curves[ch] = curve_to_units(cur, *units[ch], what=f"experiment {exp.name!r}, channel {ch!r}")
        except UnitError as exc:
            place = f"under [[experiments]] number {base[1] + 1} (experiments[{base[1]}], beside its path)"
            issues.append(ConfigIssue(_key(*base, "channels", ch), "units that convert to the model's", exc.at(place)))
            return None
        except DataError as exc:
            issues.append(ConfigIssue(_key(*base, "channels", ch), "units that convert to the model's", str(exc)))
            return None
    return replace(exp, channels=curves)


def _resolve(registry: Registry, name: str, key: str, issues: list[ConfigIssue]) -> Any:
    """The class a registry name or ``"package.module:Class"`` target names, or ``None`` with an issue."""
    try:
        return registry.resolve(name)
    except UnknownNameError:
        issues.append(ConfigIssue(key, f"one of {sorted(registry)}, or a 'package.module:Class' target", _found(name)))
    except ConfigurationError as exc:  # a target or plug-in that does not import, or not the right base class
        issues.append(ConfigIssue(key, f"an importable {registry.kind} class", str(exc)))
    return None


def _keyword_fields(cls: Any, *, kinds: tuple) -> dict[str, tuple[Any, Any]]:
    """``{name: (type hint, default or ...)}`` of the constructor's keyword arguments (not ``self``, ``seed``)."""
    sig = inspect.signature(cls.__init__)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # unresolvable annotations in a user's class: validate the values untyped
        hints = {}
    return {
        n: (hints.get(n, Any), p.default if p.default is not inspect.Parameter.empty else ...)
        for n, p in sig.parameters.items()
        if n not in ("self", "seed") and p.kind in kinds
    }


# ------------------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------------------
def load_config(path: str | Path, *, check: bool = True) -> RunConfig:
    """Read and validate a TOML run configuration; relative paths resolve against its folder."""
    path = Path(path)
    if not path.is_file():
        raise ConfigFileError([ConfigIssue("(file)", "an existing TOML file", f"{str(path)!r} (not found)")])
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError([ConfigIssue("(syntax)", "valid TOML", str(exc))], path) from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError([ConfigIssue("(file)", "a UTF-8 text file", str(exc))], path) from None
    data.setdefault("name", path.stem)
    return RunConfig.from_dict(data, base_dir=path.resolve().parent, source=path, check=check)


def model_conditions(
    model: Model, conditions: Mapping[str, Any], base_dir: str | Path | None = None, *, source: str | None = None
) -> dict[str, Any]:
    """A model's conditions built as a configuration's experiment builds them (``mechcalib simulate``): the
    file conditions' paths resolved against ``base_dir`` (default: the current folder), then checked (known
    names, types, the model's own rules); a :class:`ConfigFileError` naming each bad condition otherwise."""
    cond = resolve_file_conditions(conditions, model.file_conditions, base_dir)
    issues: list[ConfigIssue] = []
    _check_conditions(model, cond, (), issues)
    if issues:
        raise ConfigFileError(issues, source)
    return cond


def _check_conditions(model: Model, cond: dict[str, Any], base: tuple, issues: list[ConfigIssue]) -> None:
    """An experiment's conditions (at ``base``): conditions of the model, of a type it takes (numbers only
    for an external model), and accepted by the model's own rules."""
    n_cond = len(issues)
    for k, v in cond.items():
        key = _key(*base, "conditions", k)
        if k not in model.default_conditions:
            issues.append(
                ConfigIssue(
                    key,
                    f"a condition of model {model.name!r}: {sorted(model.default_conditions)}",
                    f"unknown condition {k!r}",
                )
            )
        elif isinstance(model, ExternalModel):
            if isinstance(v, bool | str) or not isinstance(v, int | float) or not math.isfinite(v):
                issues.append(
                    ConfigIssue(
                        key,
                        "a finite number (an external model writes conditions into its input files)",
                        _found(v),
                    )
                )
        elif not isinstance(v, int | float | str | bool) and not (
            isinstance(v, Mapping) and k in model.file_conditions
        ):
            issues.append(ConfigIssue(key, "a number, a string or a boolean", _found(v)))
    if n_cond == len(issues) and not isinstance(model, ExternalModel):
        # the model's own rules (signs, finiteness, memory), so `run` refuses what `check` refuses
        try:
            model.validate_conditions(cond)
        except ConfigurationError as exc:
            issues.append(ConfigIssue(_key(*base, "conditions"), "conditions the model accepts", str(exc)))


def _json_experiment(path: Path, spec: FileExperiment, base: tuple, issues: list[ConfigIssue]) -> Experiment | None:
    """An experiment JSON file: it names its channels, so no delimiter nor column mapping is given."""
    n0 = len(issues)
    for key in ("delimiter", "decimal", "names", "units"):
        if getattr(spec, key) is not None:
            issues.append(
                ConfigIssue(
                    _key(*base, key),
                    f"no {key} for a JSON file (it names its channels and their units)",
                    _found(getattr(spec, key)),
                )
            )
    for ch, c in (spec.channels or {}).items():
        for role in ("x", "y", "t"):
            if getattr(c, role) is not None:
                issues.append(
                    ConfigIssue(
                        _key(*base, "channels", ch, role),
                        "no column mapping for a JSON file (it names its channels)",
                        _found(getattr(c, role)),
                    )
                )
    try:
        exp = Experiment.from_json(path)
    except (DataError, OSError, UnicodeDecodeError) as exc:
        issues.append(ConfigIssue(_key(*base, "path"), "an experiment JSON file", str(exc)))
        return None
    for ch in spec.channels or {}:
        if ch not in exp.channels:
            issues.append(
                ConfigIssue(
                    _key(*base, "channels", ch),
                    f"a channel of {path.name}: {list(exp.channels)}",
                    f"channel {ch!r}",
                )
            )
    if len(issues) > n0:
        return None
    exp = replace(
        exp,
        conditions={**exp.conditions, **spec.conditions},
        name=spec.name or exp.name,
        weight=spec.weight if spec.weight is not None else exp.weight,
    )
    return exp


def _table_experiment(path: Path, spec: FileExperiment, base: tuple, issues: list[ConfigIssue]) -> Experiment | None:
    """A measured table (text, .npz, .mat, HDF5, Parquet); ``channels`` maps each channel to its columns."""
    n0 = len(issues)
    read = {"format": spec.format, "delimiter": spec.delimiter, "decimal": spec.decimal, "names": spec.names}
    try:
        table = read_measured(
            path, TableOptions.of(read, str(path)), wanted=_spec_columns(spec), what="experiment file"
        )
    except (DataError, OSError, UnicodeDecodeError) as exc:
        issues.append(ConfigIssue(_key(*base, "path"), "a readable measured table", str(exc)))
        return None
    cols = list(table.names)
    mapping = None
    if spec.channels is not None:
        mapping = {}
        for ch, c in spec.channels.items():
            for role in ("x", "y"):
                if getattr(c, role) is None:
                    issues.append(
                        ConfigIssue(
                            _key(*base, "channels", ch, role),
                            f"a column name of {path.name}: {cols}",
                            "nothing",
                        )
                    )
            for role in ("x", "y", "t"):
                col = getattr(c, role)
                if col is not None and not _has_column(table, col):
                    issues.append(
                        ConfigIssue(
                            _key(*base, "channels", ch, role),
                            f"a column name of {path.name}: {cols}, or a position from 0 to {len(cols) - 1}",
                            _found(col),
                        )
                    )
            mapping[ch] = tuple(v for v in (c.x, c.y, c.t) if v is not None)
    for col in spec.units if isinstance(spec.units, dict) else ():
        if not _has_column(table, col):
            issues.append(ConfigIssue(_key(*base, "units", col), f"a column name of {path.name}: {cols}", _found(col)))
    if len(issues) > n0:
        return None
    try:
        exp = Experiment.from_file(path, mapping, conditions=spec.conditions, name=spec.name, units=spec.units, **read)
    except DataError as exc:
        issues.append(
            ConfigIssue(_key(*base, "path"), "usable curves (finite, |value| <= 1e200, at least two points)", str(exc))
        )
        return None
    if spec.weight is not None:
        exp = replace(exp, weight=spec.weight)
    return exp


def _spec_columns(spec: FileExperiment) -> set[str | int] | None:
    """The columns an experiment's channels name (``None``: no mapping, so every column)."""
    if spec.channels is None:
        return None
    return {v for c in spec.channels.values() for v in (c.x, c.y, c.t) if v is not None}


def _has_column(table: Any, col: str | int) -> bool:
    try:
        table.name_of(col)
    except DataError:
        return False
    return True


def _scaled_channels(
    exp: Experiment, spec: FileExperiment, base: tuple, issues: list[ConfigIssue]
) -> Experiment | None:
    """The experiment with each configured channel scaled and relabelled (``x_scale``, ``x_unit``...)."""
    curves = dict(exp.channels)
    for ch, c in spec.channels.items():
        cur = curves[ch]
        try:
            curves[ch] = replace(
                cur,
                x=cur.x * c.x_scale,
                y=cur.y * c.y_scale,
                t=None if cur.t is None else cur.t * c.t_scale,
                x_unit=c.x_unit if c.x_unit is not None else cur.x_unit,
                y_unit=c.y_unit if c.y_unit is not None else cur.y_unit,
            )
        except DataError as exc:
            issues.append(ConfigIssue(_key(*base, "channels", ch, "t_scale"), "a positive factor", str(exc)))
            return None
    exp = replace(exp, channels=curves)
    return exp


def external_spec(section: ExternalSection) -> ExternalSpec:
    """The external model's definition from the ``[model.external]`` section, whose keys are the fields of
    :class:`~mechcalib.models.external_spec.ExternalSpec` (its CSV outputs as :class:`CsvOutput`)."""
    outputs = {k: CsvOutput(**o.model_dump()) for k, o in section.outputs.items()}
    return ExternalSpec(**{**dict(section), "outputs": outputs or None, "presets": section.presets or None})
