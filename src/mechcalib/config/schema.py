"""The run configuration's schema: pydantic models of every section, and typed validation of keyword settings.

:class:`RunSchema` validates a parsed file; :class:`~mechcalib.config.build.RunConfig` adds the building.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Strict,
    Tag,
    ValidationError,
    ValidationInfo,
    create_model,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from ..models import MODELS
from ..models.external_process import DEFAULT_MAX_FAILED_BYTES, DEFAULT_MAX_FAILED_DIRS, DEFAULT_OUTPUT_LIMIT
from ..records.interp import default_interpolation
from .errors import ConfigFileError, ConfigIssue, _fail, _found, _issues_from_validation

#: the longest file name (one path component) that Linux, macOS and Windows file systems accept, in bytes
MAX_NAME_BYTES = 255
#: Unicode categories refused in a run name: control characters, line and paragraph separators, surrogates
_CONTROL_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})

SCHEMA_VERSION = 1


# ------------------------------------------------------------------------------------------------------
# Schema
# ------------------------------------------------------------------------------------------------------
def _resolve_path(value: str, info: ValidationInfo) -> str:
    return _resolve_in(value, (info.context or {}).get("base_dir"))


def _resolve_in(value: str, base: str | Path | None) -> str:
    p = Path(value).expanduser()
    if not p.is_absolute():
        p = (Path(base) if base is not None else Path.cwd()) / p
    return str(p.resolve())


def _condition_path(value: Any, base: str | Path | None) -> Any:
    """A file condition with its path resolved: a string, or the ``path`` of a table; a table also gets the
    interpolation its default rule picks, so that the run's stored configuration states the one used."""
    if isinstance(value, str):
        return _resolve_in(value, base)
    if isinstance(value, Mapping) and isinstance(value.get("path"), str):
        value = {**value, "path": _resolve_in(value["path"], base)}
        if value.get("interpolation") is None:
            value["interpolation"] = default_interpolation(value.get("period"))
    return value


def resolve_file_conditions(
    conditions: Mapping[str, Any], keys: Iterable[str], base_dir: str | Path | None = None
) -> dict[str, Any]:
    """``conditions`` with the model's file conditions (``keys``: its ``file_conditions``, a measured force's
    record) resolved as a configuration's experiments have them: a path, or a table's ``path``, against
    ``base_dir`` (a configuration file's folder; default the current folder), a table given its default
    interpolation. ``mechcalib simulate`` builds its conditions with it."""
    keys = tuple(keys)
    return {k: _condition_path(v, base_dir) if k in keys else v for k, v in conditions.items()}


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
    """Overrides of one parameter; a key left out keeps the model's value. ``bounds = [lower, upper]`` is
    ``lower`` and ``upper`` in one key; ``sign`` is ``"any"``, ``"positive"`` or ``"negative"``; ``free = true``
    searches a parameter the model fixes by default."""

    lower: Finite | None = None
    upper: Finite | None = None
    bounds: tuple[Finite, Finite] | None = None
    scale: Literal["linear", "log"] | None = None
    sign: Literal["any", "positive", "negative"] | None = None
    unit: Text | None = None
    fixed: Finite | None = None
    free: Literal[True] | None = None
    description: Text | None = None

    @model_validator(mode="after")
    def _one_way_to_bound(self) -> ParameterSpec:
        if self.bounds is not None and (self.lower is not None or self.upper is not None):
            raise _fail("bounds = [lower, upper] or lower/upper, not both", _found(self.bounds), ("bounds",))
        if self.free and self.fixed is not None:
            raise _fail("`free = true` or `fixed = value`, not both", _found(self.fixed), ("free",))
        return self


class CsvOutputSection(_Section):
    file: Text
    x: Text
    y: Text
    t: Text | None = None
    x_unit: Text | None = None
    y_unit: Text | None = None


class ExternalSection(_Section):
    name: Text = "external"
    command: list[Text] = Field(min_length=1)
    templates: dict[str, PathStr] = {}
    files: list[PathStr] = []
    outputs: dict[str, CsvOutputSection] = {}
    parser: Text | None = None
    channels: list[Text] | None = None
    timeout: Positive | None = None
    workdir_root: PathStr | None = None
    keep: Literal["all", "failed", "none"] = "failed"
    max_workers: PositiveInt = 1
    conditions: dict[str, Finite] = {}
    presets: dict[str, dict[str, Finite]] = {}
    env: dict[str, Text] = {}
    output_limit: Annotated[int, Strict(), Field(ge=1024)] = DEFAULT_OUTPUT_LIMIT
    max_failed_dirs: NonNegativeInt = DEFAULT_MAX_FAILED_DIRS
    max_failed_bytes: NonNegativeInt = DEFAULT_MAX_FAILED_BYTES

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
            raise _fail(
                'an array of arguments such as ["{python}", "sim.py"] (a shell string is not accepted)', _found(v)
            )
        return v


class ModelSection(_Section):
    name: Text | None = None
    preset: Text = "default"
    options: dict[str, Any] = {}
    external: ExternalSection | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ModelSection:
        if (self.name is None) == (self.external is None):
            found = "both `name` and `external`" if self.name is not None else "neither `name` nor `external`"
            raise _fail(
                f"either `name` (a model, one of {sorted(MODELS)}, or a 'package.module:Class' target) "
                "or an `external` table",
                found,
            )
        if self.external is not None and self.options:
            raise _fail(
                "no `options` with an external model (its settings go in `model.external`)",
                _found(self.options),
                ("options",),
            )
        return self


def _channel_shorthand(v: Any) -> Any:
    if isinstance(v, list | tuple):
        if len(v) not in (2, 3) or not all(isinstance(c, str | int) and not isinstance(c, bool) for c in v):
            raise _fail(
                "[x column, y column] or [x column, y column, t column] (names, or positions from 0), or a table",
                _found(v),
            )
        return dict(zip(("x", "y", "t"), v))
    return v


Column = Annotated[str, Strict()] | Annotated[int, Strict()]


class ChannelSpec(_Section):
    x: Column | None = None
    y: Column | None = None
    t: Column | None = None
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
    format: Literal["csv", "text", "json", "npz", "mat", "hdf5", "parquet"] | None = None
    delimiter: Text | None = None
    decimal: Literal[".", ","] | None = None
    names: list[Text] | None = None
    units: dict[str, Text] | Literal["suffix"] | None = None
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
    asynchronous: Flag = False


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


#: a job's memory as the batch schedulers write it: a number and a unit, e.g. "4GB", "500MB", "1.5 GiB"
_MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*([KMGT]i?B|[KMGT])\s*$", re.IGNORECASE)
#: a walltime: HH:MM:SS (hours may exceed 24) or D-HH:MM:SS
_WALLTIME = re.compile(r"^(\d+-)?\d{1,4}:[0-5]\d:[0-5]\d$")
#: the evaluator kinds that start their workers as batch-scheduler jobs (dask-jobqueue)
CLUSTER_KINDS = ("slurm", "pbs")
#: the keys only a cluster kind takes
CLUSTER_KEYS = (
    "cores",
    "memory",
    "walltime",
    "queue",
    "account",
    "job_extra_directives",
    "job_script_prologue",
    "minimum_jobs",
    "maximum_jobs",
    "adaptive",
    "processes",
    "death_timeout",
)


class EvaluatorSection(_Section):
    kind: Literal["serial", "pool", "dask", "slurm", "pbs"] = "serial"
    workers: PositiveInt | None = None
    scheduler: Text | None = None
    timeout: Positive | None = None
    # batch-scheduler jobs (kind = "slurm" or "pbs"), passed to dask-jobqueue
    cores: PositiveInt | None = None
    memory: Text | None = None
    walltime: Text | None = None
    queue: Text | None = None
    account: Text | None = None
    job_extra_directives: list[Text] = []
    job_script_prologue: list[Text] = []
    minimum_jobs: NonNegativeInt = 0
    maximum_jobs: PositiveInt | None = None
    adaptive: Flag = True
    processes: PositiveInt = 1
    death_timeout: Positive = 60.0
    ship_code: Flag = True

    @model_validator(mode="after")
    def _consistent(self) -> EvaluatorSection:
        if self.scheduler is not None and self.kind != "dask":
            raise _fail('`scheduler` only with kind = "dask"', f"kind = {self.kind!r}", ("scheduler",))
        if self.workers is not None and self.kind in ("serial", *CLUSTER_KINDS):
            raise _fail(
                '`workers` only with kind = "pool" or "dask" (a cluster kind sizes itself with maximum_jobs)',
                f"kind = {self.kind!r}",
                ("workers",),
            )
        if self.kind in ("serial", "pool") and "ship_code" in self.model_fields_set:
            raise _fail(
                '`ship_code` only with kind = "dask", "slurm" or "pbs"', f"kind = {self.kind!r}", ("ship_code",)
            )
        if self.kind not in CLUSTER_KINDS:
            for k in CLUSTER_KEYS:
                if k in self.model_fields_set:
                    raise _fail(f'`{k}` only with kind = "slurm" or "pbs"', f"kind = {self.kind!r}", (k,))
            return self
        return self._cluster_checks()

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        # the cluster keys are stored only with a cluster kind: the other kinds keep their stored form
        d = handler(self)
        if self.kind not in CLUSTER_KINDS and isinstance(d, dict):
            drop = (*CLUSTER_KEYS, "ship_code") if self.kind in ("serial", "pool") else CLUSTER_KEYS
            d = {k: v for k, v in d.items() if k not in drop}
        return d

    def _cluster_checks(self) -> EvaluatorSection:
        for k in ("cores", "memory", "walltime"):
            if getattr(self, k) is None:
                raise _fail(f"`{k}` with kind = {self.kind!r} (every job asks the scheduler for it)", "nothing", (k,))
        if not _MEMORY.match(self.memory or ""):
            raise _fail('a memory like "4GB" or "500MB" (a number and a unit)', _found(self.memory), ("memory",))
        if not _WALLTIME.match(self.walltime or ""):
            raise _fail('a walltime "HH:MM:SS" or "D-HH:MM:SS", e.g. "02:00:00"', _found(self.walltime), ("walltime",))
        if self.maximum_jobs is None:
            raise _fail(
                f"`maximum_jobs` (the most jobs the run may hold) with kind = {self.kind!r}",
                "nothing",
                ("maximum_jobs",),
            )
        if self.maximum_jobs < self.minimum_jobs:
            raise _fail(
                f"maximum_jobs >= minimum_jobs (= {self.minimum_jobs}); raise maximum_jobs or lower minimum_jobs",
                _found(self.maximum_jobs),
                ("maximum_jobs",),
            )
        if self.processes > self.cores:  # type: ignore[operator]
            raise _fail(
                f"processes <= cores (= {self.cores}): each worker process needs a core",
                _found(self.processes),
                ("processes",),
            )
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


def _named(v: Any) -> Any:
    # `model = "duffing"` or `model = "package.module:Class"` is short for a table with only `name`
    return {"name": v} if isinstance(v, str) else v


class RunSchema(_Section):
    """The validated sections of a run configuration; :class:`~mechcalib.config.build.RunConfig` builds
    objects from them and implements :meth:`check`."""

    version: Literal[1] = SCHEMA_VERSION
    name: Text = "run"
    description: Text = ""
    seed: NonNegativeInt | None = None
    failure_loss: Annotated[Number, BeforeValidator(_loss)] = math.inf
    model: Annotated[ModelSection, BeforeValidator(_named)]
    parameters: dict[str, ParameterSpec] = {}
    experiments: list[ExperimentSpec] = Field(min_length=1)
    objective: Annotated[ObjectiveSection, BeforeValidator(_named)] = ObjectiveSection()
    #: without an [optimizer] section, the default method ``auto``
    optimizer: Annotated[OptimizerSection, BeforeValidator(_named)] = OptimizerSection(name="auto")
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

    @model_validator(mode="before")
    @classmethod
    def _condition_paths(cls, data: Any, info: ValidationInfo) -> Any:
        # a model's file conditions (a measured force's record) resolve against the config file's folder, as
        # every other path does, so that `check` and `run` read the same file wherever they are started
        if not isinstance(data, Mapping) or not isinstance(data.get("experiments"), list):
            return data
        model = data.get("model")
        name = model if isinstance(model, str) else model.get("name") if isinstance(model, Mapping) else None
        if not isinstance(name, str):
            return data
        try:
            keys = tuple(getattr(MODELS.resolve(name), "file_conditions", ()))
        except Exception:  # an unknown model is reported at `model.name`
            return data
        if not keys:
            return data
        exps = []
        base = (info.context or {}).get("base_dir")
        for e in data["experiments"]:
            cond = e.get("conditions") if isinstance(e, Mapping) else None
            if isinstance(cond, Mapping):
                e = {**e, "conditions": resolve_file_conditions(cond, keys, base)}
            exps.append(e)
        return {**data, "experiments": exps}

    @field_validator("failure_loss")
    @classmethod
    def _not_nan(cls, v: float) -> float:
        # -inf (or nan) would rank a failed simulation above every real result
        if math.isnan(v) or v == -math.inf:
            raise _fail("a number or inf (finite, or +inf: a failed simulation must not beat a real result)", repr(v))
        return v

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        # the run folder is <output.directory>/<name>: a path in the name would write elsewhere
        if not v or v in (".", "..") or "/" in v or "\\" in v or "\0" in v or v != v.strip():
            raise _fail("a plain name (no path separators, not '.' or '..', not empty, no edge spaces)", repr(v))
        control = [c for c in v if unicodedata.category(c) in _CONTROL_CATEGORIES]
        if control:
            raise _fail(
                "a name without control characters (newlines, tabs, escapes: they end up in a folder's name)",
                f"{v!r}, which holds {', '.join(sorted({repr(c) for c in control}))}",
            )
        size = len(v.encode("utf-8"))
        if size > MAX_NAME_BYTES:
            raise _fail(
                f"a name of at most {MAX_NAME_BYTES} bytes in UTF-8 (the longest folder name file systems allow)",
                f"a name of {size} bytes ({v[:40]!r}...)",
            )
        return v

    @field_serializer("failure_loss")
    def _ser_loss(self, v: float) -> float | str:
        return "inf" if v == math.inf else v

    # -- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        base_dir: str | Path | None = None,
        source: str | Path | None = None,
        check: bool = True,
    ) -> Self:
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

    def check(self) -> None:  # pragma: no cover - implemented by RunConfig
        raise NotImplementedError


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


def _validate_settings(
    name: str,
    fields: Mapping[str, tuple[Any, Any]],
    values: Mapping[str, Any],
    prefix: tuple,
    issues: list[ConfigIssue],
) -> dict[str, Any] | None:
    defs = {k: (_strictify(tp), default) for k, (tp, default) in fields.items()}
    model = create_model(name, __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **defs)
    try:
        validated = model.model_validate(dict(values))
    except ValidationError as exc:
        issues.extend(_issues_from_validation(exc, model, prefix))
        return None
    return {k: getattr(validated, k) for k in fields}
