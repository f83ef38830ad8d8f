"""Run configuration files (TOML, validated with pydantic).

One file describes a calibration completely: the model, the searched parameters, the experiments, the
objective, the optimiser, the budget, the seed, where simulations run and what a run keeps. An annotated
example::

    name = "duffing-tbpso"          # run label (default: the file's stem)
    description = "free text"
    seed = 1                        # optimiser seed (integer >= 0); omit for a fresh one
    failure_loss = inf              # loss of a failed simulation (TOML `inf` is allowed)

    [model]
    name = "duffing"                # built-in model (see `mechcalib models`) ...
    preset = "default"              # its reference values: synthetic experiments and `simulate` use them
    # options = {}                  # keyword arguments of the model's constructor
    # [model.external]              # ... or an external simulator instead of `name` (see below)

    [parameters.k]                  # override what the model's space says; unnamed keys keep its defaults
    lower = 0.5
    upper = 2.0
    scale = "linear"                # or "log" (positive bounds)
    unit = "N/m"
    [parameters.k3]
    fixed = 0.5                     # hold at a value: not searched

    [[experiments]]                 # measured data from a file (CSV, or JSON as written by Experiment.to_json)
    path = "data/test1.csv"         # relative paths resolve against this file's folder
    name = "test1"                  # default: the file's stem
    weight = 1.0                    # factor on this experiment's loss
    conditions = { F0 = 1.0 }       # model inputs that are not calibrated
    [experiments.channels.restoring_force]
    x = "displacement"              # column names (the bracketed unit in the header is not part of it)
    y = "force"
    t = "time"                      # optional progress column
    y_unit = "N"                    # label override; x_scale / y_scale / t_scale multiply the columns
    weight = 2.0                    # channel weight in the objective
    # short form: channels = { restoring_force = ["displacement", "force", "time"] }

    [[experiments]]                 # or synthetic data: the model's response plus seed 002 eq. 36 noise
    kind = "synthetic"
    values = { c = 0.2 }            # over the model preset (`preset = ...` to choose another)
    noise = 0.02
    seed = 7
    # channels = ["displacement"]  # keep only these; weights = { displacement = 1.0 }

    [objective]
    name = "overlap_rss"            # f1, f2, l2, overlap_rss
    options = { n_points = 200 }

    [optimizer]
    name = "tbpso"
    preset = "paper_000"            # a named preset of the optimiser (optional)
    settings = { swarm_size = 10 }  # constructor settings (override the preset's)

    [budget]                        # at least one of max_evals, max_iters, target, patience
    max_evals = 400
    # max_iters = 40
    # target = 1e-3
    # patience = 10                 # batches without improvement larger than min_delta
    # min_delta = 0.0

    [evaluator]                     # where simulations run (used by the run commands)
    kind = "serial"                 # serial | pool | dask
    # workers = 4                   # pool and dask
    # scheduler = "tcp://host:8786" # dask only; default: a local cluster
    # timeout = 600                 # seconds per evaluation

    [output]
    directory = "runs"              # where run stores and reports go
    keep_responses = false          # keep simulated curves of every evaluation
    n_alternatives = 5              # distinct good parameter sets reported
    alternative_distance = 0.02
    plots = true

External simulators replace ``[model] name`` by a ``[model.external]`` table (see
:class:`~mechcalib.models.external.ExternalModel`); their parameters have no defaults, so every entry of
``[parameters]`` gives ``lower`` and ``upper`` (or ``fixed``), in the order the model lists them::

    [model.external]
    command = ["{python}", "arch_sim.py", "params.txt", "result.csv"]   # argument list, no shell
    files = ["arch_sim.py"]                                          # copied into each working directory
    templates = { "params.txt" = "params.template" }                 # {{ name }} placeholders
    timeout = 60
    workdir_root = "work"
    keep = "failed"                                                  # all | failed | none
    max_workers = 1
    conditions = { w_max = 4.0 }                                     # numeric; usable as placeholders
    [model.external.outputs.force]                                   # or parser = "parse.py:parse" + channels
    file = "result.csv"
    x = "displacement"
    y = "force"

Every error names the key path, what was expected and what was found, for example
``optimizer.settings.swarm_size: expected an integer >= 1; got -3``; :class:`ConfigFileError` (a
:class:`~mechcalib.errors.ConfigurationError`) carries them as :class:`ConfigIssue` records. Unknown keys
are errors. :meth:`RunConfig.to_dict` gives a JSON-serialisable form with absolute paths from which
:meth:`RunConfig.from_dict` rebuilds the same run.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Strict,
    Tag,
    ValidationError,
    ValidationInfo,
    create_model,
    field_serializer,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .calibrate import Termination
from .core.data import Experiment, read_table
from .errors import ConfigurationError, DataError
from .models import MODELS, Model, get_model
from .models.external import CsvOutput, ExternalModel, ExternalSetupError
from .objectives import OBJECTIVES, Objective
from .optimizers import OPTIMIZERS, get_optimizer, presets_of
from .optimizers._base import Optimizer
from .core.parameters import Parameter, ParameterSpace
from .core.problem import Problem, experiment_from_model

SCHEMA_VERSION = 1

__all__ = ["ConfigFileError", "ConfigIssue", "RunConfig", "SCHEMA_VERSION", "load_config"]


# ------------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a configuration: the key path, what was expected and what was found."""

    key: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"`{self.key}`: expected {self.expected}; got {self.found}"


class ConfigFileError(ConfigurationError):
    """A configuration breaks one or more rules; ``issues`` lists them, ``source`` names the file."""

    def __init__(self, issues: list[ConfigIssue], source: str | Path | None = None):
        self.issues = list(issues)
        self.source = None if source is None else str(source)
        head = f"invalid configuration {self.source}" if self.source else "invalid configuration"
        super().__init__(head + ":\n" + "\n".join(f"  - {i}" for i in self.issues))


def _found(value: Any) -> str:
    """A TOML-worded description of a value."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
        return f"{value!r} (a float)"
    if isinstance(value, str):
        return f"{value!r} (a string)"
    if isinstance(value, Mapping):
        return f"a table with keys {sorted(map(str, value))}"
    if isinstance(value, list | tuple):
        text = repr(list(value))
        return f"an array {text if len(text) <= 80 else text[:77] + '...'}"
    return f"{value!r} (a {type(value).__name__})"


def _key(*parts: Any) -> str:
    """``("experiments", 0, "channels", "force")`` -> ``experiments[0].channels.force``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            p = str(p)
            seg = p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"'
            out += seg if not out else "." + seg
    return out


_MSG_RE = re.compile(r"(?:^|: )(?P<name>\w+) must (?P<verb>be|lie in) (?P<exp>.+?), got (?P<got>.+?)(?:; .*)?$", re.S)


def _issue_from_message(msg: str, prefix: tuple, names: Mapping[str, Any], fallback_key: tuple) -> ConfigIssue:
    """Turn a package error ("owner: name must be X, got Y") into an issue on the named setting."""
    m = _MSG_RE.search(msg)
    if m and m.group("name") in names:
        exp = m.group("exp") if m.group("verb") == "be" else f"a value in {m.group('exp')}"
        return ConfigIssue(_key(*prefix, m.group("name")), exp, m.group("got"))
    for n in names:
        if re.search(rf"\b{re.escape(n)}\b", msg):
            return ConfigIssue(_key(*prefix, n), "a valid value", f"{_found(names[n])}: {msg}")
    return ConfigIssue(_key(*fallback_key), "a valid setting", msg)


_EXPECTED = {
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "list_type": "an array",
    "tuple_type": "an array",
    "missing": "a value (the key is required)",
    "greater_than": "a value > {gt}",
    "greater_than_equal": "a value >= {ge}",
    "less_than": "a value < {lt}",
    "less_than_equal": "a value <= {le}",
    "literal_error": "one of {expected}",
    "too_short": "at least {min_length} item(s)",
    "too_long": "at most {max_length} item(s)",
    "union_tag_invalid": "`kind` one of {expected_tags}",
    "union_tag_not_found": "a `kind` key",
}


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional; a discriminated union becomes ``{tag: model}``."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tagged = {}
            for a in args:
                if typing.get_origin(a) is Annotated:
                    for meta in typing.get_args(a)[1:]:
                        if isinstance(meta, Tag):
                            tagged[meta.tag] = typing.get_args(a)[0]
            if tagged:
                return tagged
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _walk(root: type[BaseModel], loc: tuple) -> tuple[tuple, type[BaseModel] | None]:
    """Clean a pydantic ``loc`` (drop union tags) and find the model holding its last key."""
    tp: Any = root
    parts: list[Any] = []
    parent = None
    for item in loc:
        tp = _unwrap(tp)
        if isinstance(tp, dict):
            if item in tp:
                tp = tp[item]
                continue
            tp = None
        if isinstance(item, int):
            parts.append(item)
            args = typing.get_args(tp) if tp is not None else ()
            tp = args[0] if args else None
            continue
        parts.append(item)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            parent = tp
            f = tp.model_fields.get(item)
            tp = f.annotation if f is not None else None
        elif typing.get_origin(tp) in (dict, Mapping):
            parent = None
            tp = typing.get_args(tp)[1]
        else:
            parent = None
            tp = None
    return tuple(parts), parent


def _issues_from_validation(exc: ValidationError, root: type[BaseModel], prefix: tuple = ()) -> list[ConfigIssue]:
    out = []
    for e in exc.errors():
        loc, parent = _walk(root, tuple(e["loc"]))
        ctx = e.get("ctx") or {}
        if e["type"] == "config":
            key = _key(*prefix, *loc, *ctx.get("key", ()))
            out.append(ConfigIssue(key, ctx["expected"], ctx["found"]))
            continue
        if e["type"] == "extra_forbidden":
            valid = sorted(parent.model_fields) if parent is not None else []
            out.append(ConfigIssue(_key(*prefix, *loc), f"one of the known keys {valid}", f"unknown key {loc[-1]!r}"))
            continue
        if e["type"] in ("value_error", "assertion_error"):
            expected = str(ctx.get("error", e["msg"]))
        else:
            template = _EXPECTED.get(e["type"])
            try:
                expected = template.format(**ctx) if template else e["msg"]
            except (KeyError, IndexError):
                expected = e["msg"]
        found = "nothing" if e["type"] == "missing" else _found(e.get("input"))
        if e["type"] in ("union_tag_invalid", "union_tag_not_found") and isinstance(e.get("input"), Mapping):
            found = _found(e["input"].get("kind"))
        out.append(ConfigIssue(_key(*prefix, *loc), expected, found))
    return out


def _fail(expected: str, found: str, key: tuple = ()) -> PydanticCustomError:
    return PydanticCustomError("config", "expected {expected}; got {found}", {"expected": expected, "found": found, "key": key})


# ------------------------------------------------------------------------------------------------------
# Schema
# ------------------------------------------------------------------------------------------------------
def _resolve_path(value: str, info: ValidationInfo) -> str:
    base = (info.context or {}).get("base_dir")
    p = Path(value).expanduser()
    if not p.is_absolute():
        p = (Path(base) if base is not None else Path.cwd()) / p
    return str(p.resolve())


Number = Annotated[float, Strict()]
Finite = Annotated[float, Strict(), Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Strict(), Field(ge=1)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
Text = Annotated[str, Strict()]
Flag = Annotated[bool, Strict()]
PathStr = Annotated[str, Strict(), AfterValidator(_resolve_path)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParameterSpec(_Section):
    """Overrides of one parameter; a key left out keeps the model's value."""

    lower: Finite | None = None
    upper: Finite | None = None
    scale: Literal["linear", "log"] | None = None
    unit: Text | None = None
    fixed: Finite | None = None
    description: Text | None = None


class CsvOutputSpec(_Section):
    file: Text
    x: Text
    y: Text
    t: Text | None = None
    x_unit: Text | None = None
    y_unit: Text | None = None


class ExternalSpec(_Section):
    name: Text = "external"
    command: list[Text] = Field(min_length=1)
    templates: dict[str, PathStr] = {}
    files: list[PathStr] = []
    outputs: dict[str, CsvOutputSpec] = {}
    parser: Text | None = None
    channels: list[Text] | None = None
    timeout: Positive | None = None
    workdir_root: PathStr | None = None
    keep: Literal["all", "failed", "none"] = "failed"
    max_workers: PositiveInt = 1
    conditions: dict[str, Finite] = {}
    presets: dict[str, dict[str, Finite]] = {}
    env: dict[str, Text] = {}

    @field_validator("parser")
    @classmethod
    def _resolve_parser(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        target, sep, func = v.rpartition(":")
        if not sep or not func or not target:
            raise _fail("'package.module:function' or 'path/to/file.py:function'", _found(v))
        if target.endswith(".py"):
            target = _resolve_path(target, info)
        return f"{target}:{func}"

    @field_validator("command", mode="before")
    @classmethod
    def _no_shell_string(cls, v: Any) -> Any:
        if isinstance(v, str):
            raise _fail("an array of arguments such as [\"{python}\", \"sim.py\"] (a shell string is not accepted)", _found(v))
        return v


class ModelSection(_Section):
    name: Text | None = None
    preset: Text = "default"
    options: dict[str, Any] = {}
    external: ExternalSpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ModelSection:
        if (self.name is None) == (self.external is None):
            found = "both `name` and `external`" if self.name is not None else "neither `name` nor `external`"
            raise _fail(f"either `name` (a built-in model, one of {sorted(MODELS)}) or an `external` table", found)
        if self.external is not None and self.options:
            raise _fail("no `options` with an external model (its settings go in `model.external`)",
                        _found(self.options), ("options",))
        return self


def _channel_shorthand(v: Any) -> Any:
    if isinstance(v, list | tuple):
        if len(v) not in (2, 3) or not all(isinstance(c, str) for c in v):
            raise _fail("[x column, y column] or [x column, y column, t column], or a table", _found(v))
        return dict(zip(("x", "y", "t"), v))
    return v


class ChannelSpec(_Section):
    x: Text | None = None
    y: Text | None = None
    t: Text | None = None
    x_unit: Text | None = None
    y_unit: Text | None = None
    x_scale: Finite = 1.0
    y_scale: Finite = 1.0
    t_scale: Finite = 1.0
    weight: NonNegative | None = None


ChannelEntry = Annotated[ChannelSpec, BeforeValidator(_channel_shorthand)]


class FileExperiment(_Section):
    kind: Literal["file"] = "file"
    path: PathStr
    name: Text | None = None
    format: Literal["csv", "json"] | None = None
    delimiter: Text | None = None
    channels: dict[str, ChannelEntry] | None = None
    conditions: dict[str, Any] = {}
    weight: NonNegative | None = None

    @property
    def file_format(self) -> str:
        return self.format or ("json" if self.path.lower().endswith(".json") else "csv")


class SyntheticExperiment(_Section):
    kind: Literal["synthetic"]
    name: Text | None = None
    preset: Text | None = None
    values: dict[str, Finite] = {}
    noise: NonNegative = 0.0
    seed: NonNegativeInt | None = 0
    conditions: dict[str, Any] = {}
    channels: list[Text] | None = None
    weights: dict[str, NonNegative] = {}
    weight: NonNegative = 1.0


def _experiment_kind(v: Any) -> str | None:
    if isinstance(v, Mapping):
        return v.get("kind", "file")
    return getattr(v, "kind", None)


ExperimentSpec = Annotated[
    Union[Annotated[FileExperiment, Tag("file")], Annotated[SyntheticExperiment, Tag("synthetic")]],  # noqa: UP007
    Discriminator(_experiment_kind),
]


class ObjectiveSection(_Section):
    name: Text = "overlap_rss"
    options: dict[str, Any] = {}


class OptimizerSection(_Section):
    name: Text
    preset: Text | None = None
    settings: dict[str, Any] = {}


class BudgetSection(_Section):
    max_evals: PositiveInt | None = None
    max_iters: PositiveInt | None = None
    target: Finite | None = None
    patience: PositiveInt | None = None
    min_delta: NonNegative = 0.0

    @model_validator(mode="after")
    def _one_rule(self) -> BudgetSection:
        if all(getattr(self, k) is None for k in ("max_evals", "max_iters", "target", "patience")):
            raise _fail("at least one of max_evals, max_iters, target, patience", "none of them")
        return self


class EvaluatorSection(_Section):
    kind: Literal["serial", "pool", "dask"] = "serial"
    workers: PositiveInt | None = None
    scheduler: Text | None = None
    timeout: Positive | None = None

    @model_validator(mode="after")
    def _consistent(self) -> EvaluatorSection:
        if self.scheduler is not None and self.kind != "dask":
            raise _fail("`scheduler` only with kind = \"dask\"", f"kind = {self.kind!r}", ("scheduler",))
        if self.workers is not None and self.kind == "serial":
            raise _fail("`workers` only with kind = \"pool\" or \"dask\"", "kind = 'serial'", ("workers",))
        return self


class OutputSection(_Section):
    directory: PathStr = Field("runs", validate_default=True)
    keep_responses: Flag = False
    n_alternatives: NonNegativeInt = 5
    alternative_distance: Annotated[float, Strict(), Field(ge=0, le=1)] = 0.02
    plots: Flag = True


def _loss(v: Any) -> Any:
    if v == "inf":
        return math.inf
    return v


class RunConfig(_Section):
    """A validated run configuration. Build it with :func:`load_config` or :meth:`from_dict`."""

    version: Literal[1] = SCHEMA_VERSION
    name: Text = "run"
    description: Text = ""
    seed: NonNegativeInt | None = None
    failure_loss: Annotated[Number, BeforeValidator(_loss)] = math.inf
    model: ModelSection
    parameters: dict[str, ParameterSpec] = {}
    experiments: list[ExperimentSpec] = Field(min_length=1)
    objective: ObjectiveSection = ObjectiveSection()
    optimizer: OptimizerSection
    budget: BudgetSection
    evaluator: EvaluatorSection = EvaluatorSection()
    output: OutputSection
    _source: str | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _default_output(cls, data: Any) -> Any:
        # validated (not defaulted) so that its folder resolves against the config file's folder
        if isinstance(data, Mapping) and "output" not in data:
            data = {**data, "output": {}}
        return data

    @field_validator("failure_loss")
    @classmethod
    def _not_nan(cls, v: float) -> float:
        if math.isnan(v):
            raise _fail("a number or inf", "nan")
        return v

    @field_serializer("failure_loss")
    def _ser_loss(self, v: float) -> float | str:
        return "inf" if v == math.inf else v

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base_dir: str | Path | None = None, source: str | Path | None = None,
                  check: bool = True) -> RunConfig:
        """Validate a mapping (a parsed TOML file, or :meth:`to_dict` output); relative paths resolve
        against ``base_dir`` (default: the current folder). ``check`` also validates names, bounds,
        files and columns against the model and the registries."""
        if not isinstance(data, Mapping):
            raise ConfigFileError([ConfigIssue("(top level)", "a table", _found(data))], source)
        try:
            cfg = cls.model_validate(dict(data), context={"base_dir": None if base_dir is None else str(base_dir)})
        except ValidationError as exc:
            raise ConfigFileError(_issues_from_validation(exc, cls), source) from None
        cfg._source = None if source is None else str(source)
        if check:
            cfg.check()
        return cfg

    @property
    def source(self) -> str | None:
        """The file this configuration was read from, if any."""
        return self._source

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form (absolute paths) that :meth:`from_dict` turns back into this config."""
        return self.model_dump(mode="json")

    def _raise(self, issues: list[ConfigIssue]) -> None:
        if issues:
            raise ConfigFileError(issues, self.source)

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
            return Problem(model, experiments, objective, space=space, failure_loss=self.failure_loss,
                           keep_responses=self.output.keep_responses)
        except ConfigurationError as exc:
            raise ConfigFileError([ConfigIssue("experiments", "experiments the model can simulate", str(exc))],
                                  self.source) from None

    def build_optimizer(self) -> Optimizer:
        """The optimiser, seeded with the top-level ``seed``."""
        issues: list[ConfigIssue] = []
        opt = self._optimizer(issues)
        self._raise(issues)
        assert opt is not None
        return opt

    def build_termination(self) -> Termination:
        b = self.budget
        return Termination(max_evals=b.max_evals, max_iters=b.max_iters, target=b.target, patience=b.patience,
                           min_delta=b.min_delta)

    def calibrate_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`mechcalib.calibrate` other than problem, optimizer and termination."""
        return {"n_alternatives": self.output.n_alternatives, "alternative_distance": self.output.alternative_distance}

    # -- section logic (append issues, return None on failure) ----------------------------------------------
    def _model(self, issues: list[ConfigIssue]) -> Model | None:
        m = self.model
        if m.external is not None:
            space = self._external_space(issues)
            if space is None:
                return None
            e = m.external
            try:
                model = ExternalModel(
                    space, e.command, templates=e.templates, files=e.files,
                    outputs={k: CsvOutput(**o.model_dump()) for k, o in e.outputs.items()} or None,
                    parser=e.parser, channels=e.channels, timeout=e.timeout, workdir_root=e.workdir_root,
                    keep=e.keep, max_workers=e.max_workers, conditions=e.conditions, presets=e.presets or None,
                    name=e.name, env=e.env,
                )
            except ExternalSetupError as exc:
                issues.append(ConfigIssue(_key("model", "external", *exc.parts), exc.expected, exc.found))
                return None
            except ConfigurationError as exc:
                issues.append(ConfigIssue("model.external", "a valid external model", str(exc)))
                return None
        else:
            if m.name not in MODELS:
                issues.append(ConfigIssue("model.name", f"one of {sorted(MODELS)}", _found(m.name)))
                return None
            try:
                model = get_model(m.name, **m.options)
            except TypeError as exc:
                issues.append(ConfigIssue("model.options", f"keyword arguments of model {m.name!r}", str(exc)))
                return None
            except ConfigurationError as exc:
                issues.append(_issue_from_message(str(exc), ("model", "options"), m.options, ("model", "options")))
                return None
        if m.preset not in model.presets:
            issues.append(ConfigIssue("model.preset", f"a preset of model {model.name!r}: {sorted(model.presets)}",
                                      _found(m.preset)))
        return model

    def _external_space(self, issues: list[ConfigIssue]) -> ParameterSpace | None:
        if not self.parameters:
            issues.append(ConfigIssue("parameters", "a table per parameter of the external model (lower, upper or fixed)",
                                      "no parameters"))
            return None
        params, ok = [], True
        for name, s in self.parameters.items():
            if s.fixed is None:
                for k in ("lower", "upper"):
                    if getattr(s, k) is None:
                        issues.append(ConfigIssue(_key("parameters", name, k),
                                                  "a number (an external model has no default bounds)", "nothing"))
                        ok = False
                if s.lower is None or s.upper is None:
                    continue
            p = self._parameter(name, s, None, issues)
            ok = ok and p is not None
            params.append(p)
        if not ok:
            return None
        return ParameterSpace(params)

    def _parameter(self, name: str, s: ParameterSpec, base: Parameter | None, issues: list[ConfigIssue]) -> Parameter | None:
        nan = math.nan
        lower = s.lower if s.lower is not None else (base.lower if base else nan)
        upper = s.upper if s.upper is not None else (base.upper if base else nan)
        scale = s.scale or (base.scale if base else "linear")
        fixed = s.fixed if s.fixed is not None else (base.fixed if base else None)
        if not name.isidentifier():
            issues.append(ConfigIssue(_key("parameters", name), "a parameter name made of letters, digits and underscores",
                                      _found(name)))
            return None
        if not (math.isnan(lower) and math.isnan(upper) and fixed is not None):
            if not lower < upper:
                issues.append(ConfigIssue(_key("parameters", name), "lower < upper",
                                          f"lower={lower!r}, upper={upper!r}"))
                return None
            if scale == "log" and lower <= 0:
                issues.append(ConfigIssue(_key("parameters", name, "scale"), "scale = \"linear\", or positive bounds for \"log\"",
                                          f"scale = 'log' with lower={lower!r}"))
                return None
        try:
            return Parameter(name, lower, upper, scale, s.unit if s.unit is not None else (base.unit if base else ""),
                             fixed, s.description if s.description is not None else (base.description if base else ""))
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
                issues.append(ConfigIssue(_key("parameters", n), f"a parameter of model {model.name!r}: {list(names)}",
                                          f"unknown parameter {n!r}"))
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

    def _experiments(self, model: Model | None, issues: list[ConfigIssue], *, simulate: bool,
                     out: list[Experiment] | None = None) -> dict[str, float]:
        """Check (and with ``out``, build) the experiments; returns the merged channel weights."""
        weights: dict[str, tuple[float, str]] = {}
        names: dict[str, int] = {}

        def weigh(ch: str, w: float | None, key: str) -> None:
            if w is None:
                return
            if ch in weights and weights[ch][0] != w:
                issues.append(ConfigIssue(key, f"the weight {weights[ch][0]!r} given at `{weights[ch][1]}` (the objective "
                                               "weighs a channel once for all experiments)", _found(w)))
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
                            issues.append(ConfigIssue(_key(*base, "weights", ch), f"one of the experiment's channels {kept}",
                                                      f"channel {ch!r}"))
                    exp = self._synthetic_experiment(i, spec, model, issues, simulate)
                channel_names = list(spec.channels) if spec.channels is not None else (
                    list(model.channel_names) if model is not None else [])
            ename = exp.name if exp is not None else spec.name
            if ename is None and isinstance(spec, SyntheticExperiment):
                ename = f"synthetic{i}"
            if ename is not None:
                if ename in names:
                    issues.append(ConfigIssue(_key(*base, "name"), f"a name no other experiment uses (experiments[{names[ename]}] "
                                                                  "has it)", _found(ename)))
                names.setdefault(ename, i)
            if model is not None:
                for ch in channel_names:
                    if ch not in model.channel_names:
                        issues.append(ConfigIssue(_key(*base, "channels", ch), f"a channel of model {model.name!r}: "
                                                  f"{list(model.channel_names)}", f"channel {ch!r}"))
                cond = dict(exp.conditions) if exp is not None else dict(spec.conditions)
                for k, v in cond.items():
                    key = _key(*base, "conditions", k)
                    if k not in model.default_conditions:
                        issues.append(ConfigIssue(key, f"a condition of model {model.name!r}: "
                                                  f"{sorted(model.default_conditions)}", f"unknown condition {k!r}"))
                    elif isinstance(model, ExternalModel):
                        if isinstance(v, bool | str) or not isinstance(v, int | float) or not math.isfinite(v):
                            issues.append(ConfigIssue(key, "a finite number (an external model writes conditions "
                                                      "into its input files)", _found(v)))
                    elif not isinstance(v, int | float | str | bool):
                        issues.append(ConfigIssue(key, "a number, a string or a boolean", _found(v)))
            if out is not None and exp is not None:
                out.append(exp)
        return {ch: w for ch, (w, _) in weights.items()}

    def _file_experiment(self, i: int, spec: FileExperiment, issues: list[ConfigIssue]) -> Experiment | None:
        base = ("experiments", i)
        path = Path(spec.path)
        if not path.is_file():
            issues.append(ConfigIssue(_key(*base, "path"), "an existing data file", f"{spec.path!r} (not found)"))
            return None
        n0 = len(issues)
        if spec.file_format == "json":
            if spec.delimiter is not None:
                issues.append(ConfigIssue(_key(*base, "delimiter"), "no delimiter for a JSON file", _found(spec.delimiter)))
            for ch, c in (spec.channels or {}).items():
                for role in ("x", "y", "t"):
                    if getattr(c, role) is not None:
                        issues.append(ConfigIssue(_key(*base, "channels", ch, role),
                                                  "no column mapping for a JSON file (it names its channels)",
                                                  _found(getattr(c, role))))
            try:
                exp = Experiment.from_json(path)
            except (DataError, OSError, UnicodeDecodeError) as exc:
                issues.append(ConfigIssue(_key(*base, "path"), "an experiment JSON file", str(exc)))
                return None
            for ch in spec.channels or {}:
                if ch not in exp.channels:
                    issues.append(ConfigIssue(_key(*base, "channels", ch), f"a channel of {path.name}: {list(exp.channels)}",
                                              f"channel {ch!r}"))
            if len(issues) > n0:
                return None
            exp = replace(exp, conditions={**exp.conditions, **spec.conditions}, name=spec.name or exp.name,
                          weight=spec.weight if spec.weight is not None else exp.weight)
        else:
            try:
                table, _ = read_table(path, delimiter=spec.delimiter)
            except (DataError, OSError, UnicodeDecodeError) as exc:
                issues.append(ConfigIssue(_key(*base, "path"), "a readable table with a header row", str(exc)))
                return None
            cols = list(table)
            mapping = None
            if spec.channels is not None:
                mapping = {}
                for ch, c in spec.channels.items():
                    for role in ("x", "y"):
                        if getattr(c, role) is None:
                            issues.append(ConfigIssue(_key(*base, "channels", ch, role), f"a column name of {path.name}: {cols}",
                                                      "nothing"))
                    for role in ("x", "y", "t"):
                        col = getattr(c, role)
                        if col is not None and col not in table:
                            issues.append(ConfigIssue(_key(*base, "channels", ch, role), f"a column name of {path.name}: {cols}",
                                                      _found(col)))
                    mapping[ch] = tuple(v for v in (c.x, c.y, c.t) if v is not None)
            if len(issues) > n0:
                return None
            try:
                exp = Experiment.from_csv(path, mapping, conditions=spec.conditions, name=spec.name,
                                          delimiter=spec.delimiter)
            except DataError as exc:
                issues.append(ConfigIssue(_key(*base, "path"), "usable curves (finite, at least two points)", str(exc)))
                return None
            if spec.weight is not None:
                exp = replace(exp, weight=spec.weight)
        if spec.channels:
            curves = dict(exp.channels)
            for ch, c in spec.channels.items():
                cur = curves[ch]
                try:
                    curves[ch] = replace(cur, x=cur.x * c.x_scale, y=cur.y * c.y_scale,
                                         t=None if cur.t is None else cur.t * c.t_scale,
                                         x_unit=c.x_unit if c.x_unit is not None else cur.x_unit,
                                         y_unit=c.y_unit if c.y_unit is not None else cur.y_unit)
                except DataError as exc:
                    issues.append(ConfigIssue(_key(*base, "channels", ch, "t_scale"), "a positive factor", str(exc)))
                    return None
            exp = replace(exp, channels=curves)
        return exp

    def _synthetic_experiment(self, i: int, spec: SyntheticExperiment, model: Model, issues: list[ConfigIssue],
                              simulate: bool) -> Experiment | None:
        base = ("experiments", i)
        n0 = len(issues)
        preset = spec.preset or self.model.preset
        if preset not in model.presets:
            if spec.preset is None:
                return None  # reported at `model.preset`
            issues.append(ConfigIssue(_key(*base, "preset"), f"a preset of model {model.name!r}: {sorted(model.presets)}",
                                      _found(preset)))
        for k in spec.values:
            if k not in model.space.names:
                issues.append(ConfigIssue(_key(*base, "values", k), f"a parameter of model {model.name!r}: "
                                          f"{list(model.space.names)}", f"unknown parameter {k!r}"))
        if not simulate or len(issues) > n0:
            return None
        try:
            model.conditions(spec.conditions)
        except ConfigurationError:
            return None  # reported with the key path by the caller
        try:
            exp = experiment_from_model(model, spec.values, preset=preset, conditions=spec.conditions, noise=spec.noise,
                                        seed=spec.seed, name=spec.name or f"synthetic{i}")
        except (ConfigurationError, DataError) as exc:
            issues.append(ConfigIssue(_key(*base), "a model run that succeeds at the given values", str(exc)))
            return None
        if spec.channels is not None:
            exp = replace(exp, channels={c: exp.channels[c] for c in spec.channels if c in exp.channels})
        return replace(exp, weight=spec.weight)

    def _objective(self, weights: Mapping[str, float], issues: list[ConfigIssue]) -> Objective | None:
        o = self.objective
        if o.name not in OBJECTIVES:
            issues.append(ConfigIssue("objective.name", f"one of {sorted(OBJECTIVES)}", _found(o.name)))
            return None
        cls = OBJECTIVES[o.name]
        hints = typing.get_type_hints(cls)
        fields = {f.name: (hints.get(f.name, Any), f) for f in dataclasses.fields(cls) if f.init}
        opts = _validate_settings(f"{cls.__name__}Options", {k: (tp, _default(f)) for k, (tp, f) in fields.items()},
                                  o.options, ("objective", "options"), issues)
        if opts is None:
            return None
        merged = dict(weights)
        for ch, w in (opts.get("weights") or {}).items():
            if ch in weights and weights[ch] != w:
                issues.append(ConfigIssue(_key("objective", "options", "weights", ch),
                                          f"the weight {weights[ch]!r} the experiments give", _found(w)))
            merged[ch] = w
        opts["weights"] = merged
        if opts.get("channels") is not None:
            opts["channels"] = tuple(opts["channels"])
        try:
            return cls(**opts)
        except ConfigurationError as exc:
            issues.append(_issue_from_message(str(exc), ("objective", "options"), o.options, ("objective",)))
            return None

    def _optimizer(self, issues: list[ConfigIssue], dim: int | None = None) -> Optimizer | None:
        o = self.optimizer
        try:
            cls = get_optimizer(o.name)
        except ConfigurationError:
            issues.append(ConfigIssue("optimizer.name", f"one of {sorted(OPTIMIZERS)}", _found(o.name)))
            return None
        if o.preset is not None and o.preset not in presets_of(cls):
            valid = sorted(presets_of(cls))
            issues.append(ConfigIssue("optimizer.preset", f"a preset of optimizer {o.name!r}: {valid}" if valid else
                                      f"no preset (optimizer {o.name!r} has none)", _found(o.preset)))
            return None
        if "seed" in o.settings:
            issues.append(ConfigIssue("optimizer.settings.seed", "the seed as the top-level key `seed`",
                                      _found(o.settings["seed"])))
            return None
        sig = inspect.signature(cls.__init__)
        hints = typing.get_type_hints(cls.__init__)
        fields = {
            n: (hints.get(n, Any), p.default if p.default is not inspect.Parameter.empty else ...)
            for n, p in sig.parameters.items()
            if n not in ("self", "seed") and p.kind is inspect.Parameter.KEYWORD_ONLY
        }
        settings = _validate_settings(f"{cls.__name__}Settings", fields, o.settings, ("optimizer", "settings"), issues)
        if settings is None:
            return None
        settings = {k: v for k, v in settings.items() if k in o.settings}
        try:
            opt = getattr(cls, o.preset)(seed=self.seed, **settings) if o.preset else cls(seed=self.seed, **settings)
        except ConfigurationError as exc:
            issues.append(_issue_from_message(str(exc), ("optimizer", "settings"), o.settings,
                                              ("optimizer", "preset") if o.preset else ("optimizer",)))
            return None
        except TypeError as exc:
            issues.append(ConfigIssue("optimizer.settings", f"settings of optimizer {o.name!r}", str(exc)))
            return None
        if dim is not None:
            try:
                opt.copy().setup(dim)
            except ConfigurationError as exc:
                issues.append(_issue_from_message(str(exc), ("optimizer", "settings"), o.settings, ("optimizer",)))
                return None
        return opt


# ------------------------------------------------------------------------------------------------------
# Typed validation of keyword settings (optimiser constructors, objective options)
# ------------------------------------------------------------------------------------------------------
def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return ...


_STRICT = {float: Number, int: Annotated[int, Strict()], bool: Flag, str: Text}


def _strictify(tp: Any) -> Any:
    """``float``/``int``/``bool``/``str`` made strict (no "0.5" -> 0.5), containers rebuilt around them."""
    if tp in _STRICT:
        return _STRICT[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return Union[tuple(_strictify(a) for a in args)]  # noqa: UP007
    if origin is Literal:
        return tp
    if origin in (Mapping, dict) and len(args) == 2:
        return dict[_strictify(args[0]), _strictify(args[1])]
    if origin is tuple:
        return tuple[tuple(_strictify(a) if a is not Ellipsis else a for a in args)]
    if origin in (list,) and args:
        return list[_strictify(args[0])]
    if isinstance(tp, type) and tp.__module__ == "builtins":
        return tp
    if origin is not None:
        return tp
    return Any


def _validate_settings(name: str, fields: Mapping[str, tuple[Any, Any]], values: Mapping[str, Any], prefix: tuple,
                       issues: list[ConfigIssue]) -> dict[str, Any] | None:
    defs = {k: (_strictify(tp), default) for k, (tp, default) in fields.items()}
    model = create_model(name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **defs)
    try:
        validated = model.model_validate(dict(values))
    except ValidationError as exc:
        issues.extend(_issues_from_validation(exc, model, prefix))
        return None
    return {k: getattr(validated, k) for k in fields}


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
