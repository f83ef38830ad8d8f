"""docs/config.md, the reference of every configuration key, generated from the schema (:mod:`.schema`).

Each section's keys come from its pydantic model: the type (with its bounds), the default (or "required"),
and a description: the field's own ``description`` when the schema gives one, else :data:`DESCRIPTIONS`
(``"section.key"``). A key with neither is refused, so a key added to the schema without a description fails
``tests/test_config_reference.py``, as does a docs/config.md older than the schema::

    python -m mechcalib.config.reference              # rewrite docs/config.md
    python -m mechcalib.config.reference --check      # exit 1 when docs/config.md is not current
"""

from __future__ import annotations

import argparse
import math
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from .schema import (
    BudgetSection,
    ChannelSpec,
    CsvOutputSection,
    EvaluatorSection,
    ExternalSection,
    FileExperiment,
    ModelSection,
    ObjectiveSection,
    OptimizerSection,
    OutputSection,
    ParameterSpec,
    RunSchema,
    SyntheticExperiment,
)

#: (heading, what it is, model) of each section, in the order of a configuration file
SECTIONS: tuple[tuple[str, str, type[BaseModel]], ...] = (
    ("top level", "keys outside any table", RunSchema),
    ("[model]", "the forward model (`model = \"name\"` is short for a table with only `name`)", ModelSection),
    ("[model.external]", "a simulator driven through files (docs/add_your_model.md)", ExternalSection),
    ("[model.external.outputs.CHANNEL]", "one output channel read from a CSV file the simulator writes",
     CsvOutputSection),
    ("[parameters.NAME]", "overrides of one parameter; a key left out keeps the model's value", ParameterSpec),
    ("[[experiments]] (a file)", "a measured experiment read from a file (`kind = \"file\"`, the default)",
     FileExperiment),
    ("[experiments.channels.CHANNEL]", "one channel of a file experiment (`CHANNEL = [\"x column\", \"y column\"]` "
     "is short for a table with `x` and `y`)", ChannelSpec),
    ("[[experiments]] (synthetic)", "data simulated by the model itself (`kind = \"synthetic\"`), for recovery "
     "tests", SyntheticExperiment),
    ("[objective]", "the misfit (`objective = \"name\"` is short for a table with only `name`)", ObjectiveSection),
    ("[optimizer]", "the method (`optimizer = \"name\"` is short for a table with only `name`)", OptimizerSection),
    ("[budget]", "when the run stops: at least one of `max_evals`, `max_iters`, `target`, `patience`", BudgetSection),
    ("[evaluator]", "where simulations run", EvaluatorSection),
    ("[output]", "the run folder and what it keeps", OutputSection),
)  # fmt: skip

#: descriptions of the keys whose schema field has none, by ``"Model.key"``
DESCRIPTIONS: dict[str, str] = {
    "RunSchema.version": "the schema version of the file",
    "RunSchema.name": "the run's name in the store and the default run folder's name",
    "RunSchema.description": "free text kept with the run",
    "RunSchema.seed": "seed of the optimiser and of everything random in the run (none: drawn and recorded)",
    "RunSchema.failure_loss": 'the loss given to a failed simulation (`"inf"` or a number not below the '
    "objective's attainable minimum)",
    "RunSchema.model": "the [model] table",
    "RunSchema.parameters": "the [parameters.NAME] tables",
    "RunSchema.experiments": "the [[experiments]] tables (at least one)",
    "RunSchema.objective": "the [objective] table",
    "RunSchema.optimizer": "the [optimizer] table (default: `auto`)",
    "RunSchema.budget": "the [budget] table",
    "RunSchema.evaluator": "the [evaluator] table",
    "RunSchema.output": "the [output] table",
    "ModelSection.name": "a built-in model (`mechcalib models`), or a `package.module:Class` target",
    "ModelSection.preset": "the model's preset giving the parameters' starting values and fixed values",
    "ModelSection.options": "keyword arguments of the model's constructor",
    "ModelSection.external": "an external simulator instead of `name`",
    "ExternalSection.name": "label used in messages and working-directory names",
    "ExternalSection.command": 'the program and its arguments as a list (`["{python}", "sim.py"]`); arguments '
    "may hold `{{ name }}` placeholders",
    "ExternalSection.templates": "`{file name in the working directory: template path}`",
    "ExternalSection.files": "support files copied into each working directory",
    "ExternalSection.outputs": "`{channel: output table}`; or give `parser`",
    "ExternalSection.parser": '`"module:function"` or `"path/file.py:function"`: `parse(workdir) -> {channel: Curve}`',
    "ExternalSection.channels": "channel names a parser returns (default: the keys of `outputs`)",
    "ExternalSection.timeout": "seconds a run may take before it is killed and counted as failed",
    "ExternalSection.workdir_root": "folder for the working directories (default `<tmp>/mechcalib-external`)",
    "ExternalSection.keep": "keep the working directories of all runs, only failed ones, or none",
    "ExternalSection.max_workers": "runs of one batch executed at the same time",
    "ExternalSection.conditions": "default numeric conditions, usable as placeholders; experiments override them",
    "ExternalSection.presets": "`{preset: {parameter: value}}` (default: the bounds' midpoints)",
    "ExternalSection.env": "extra environment variables for the program",
    "ExternalSection.output_limit": "bytes of each of stdout and stderr kept in the logs (the last ones)",
    "ExternalSection.max_failed_dirs": "failed working directories kept at most (the oldest deleted first)",
    "ExternalSection.max_failed_bytes": "total size in bytes of the failed working directories kept",
    "CsvOutputSection.file": "file name relative to the working directory",
    "CsvOutputSection.x": "the x column's name (without the bracketed unit)",
    "CsvOutputSection.y": "the y column's name (without the bracketed unit)",
    "CsvOutputSection.t": "an optional progress column",
    "CsvOutputSection.x_unit": "x's unit label (default: the header's bracketed unit)",
    "CsvOutputSection.y_unit": "y's unit label (default: the header's bracketed unit)",
    "ParameterSpec.lower": "lower search bound",
    "ParameterSpec.upper": "upper search bound",
    "ParameterSpec.bounds": "`[lower, upper]` in one key (not with `lower`/`upper`)",
    "ParameterSpec.scale": "search in the parameter (`linear`) or in its logarithm (`log`)",
    "ParameterSpec.sign": "the sign the parameter must keep",
    "ParameterSpec.unit": "the parameter's unit label",
    "ParameterSpec.fixed": "hold the parameter at this value (not searched)",
    "ParameterSpec.free": "`true` searches a parameter the model fixes by default (not with `fixed`)",
    "ParameterSpec.description": "free text shown with the parameter",
    "FileExperiment.kind": '`"file"`',
    "FileExperiment.path": "the data file (relative to the configuration's folder)",
    "FileExperiment.name": "the experiment's name (default: from the file name)",
    "FileExperiment.format": "the file's format (default: from its suffix)",
    "FileExperiment.delimiter": "the column separator of a text table (default: detected)",
    "FileExperiment.decimal": '`","` for decimal commas (default: detected)',
    "FileExperiment.names": "the columns' names (with units, `\"time [s]\"`), replacing the file's header or naming a table without one",
    "FileExperiment.units": '`{column: unit}` for columns whose header gives none, or `"suffix"`: units from the names\' suffixes (`force_kN`)',
    "FileExperiment.channels": "`{model channel: columns}` (default: columns named as the model's channels)",
    "FileExperiment.conditions": "the model's conditions for this experiment (loading protocol, records...)",
    "FileExperiment.weight": "the experiment's weight in the objective",
    "ChannelSpec.x": "the x column",
    "ChannelSpec.y": "the y column",
    "ChannelSpec.t": "an optional progress (time) column",
    "ChannelSpec.x_unit": "x's unit label after scaling",
    "ChannelSpec.y_unit": "y's unit label after scaling",
    "ChannelSpec.x_scale": "factor the x column is multiplied by (a unit conversion)",
    "ChannelSpec.y_scale": "factor the y column is multiplied by (a unit conversion)",
    "ChannelSpec.t_scale": "factor the progress column is multiplied by",
    "ChannelSpec.weight": "the channel's weight in the objective",
    "SyntheticExperiment.kind": '`"synthetic"`',
    "SyntheticExperiment.name": "the experiment's name (default `synthetic<i>`)",
    "SyntheticExperiment.preset": "the preset simulated (default: the model's `preset`)",
    "SyntheticExperiment.values": "`{parameter: value}` overriding the preset (the ground truth)",
    "SyntheticExperiment.noise": "noise added, relative: `y + noise std(y) N(0, 1)`",
    "SyntheticExperiment.seed": "seed of the noise",
    "SyntheticExperiment.conditions": "the model's conditions for this experiment",
    "SyntheticExperiment.channels": "the channels kept (default: all)",
    "SyntheticExperiment.weights": "`{channel: weight}` in the objective",
    "SyntheticExperiment.weight": "the experiment's weight in the objective",
    "ObjectiveSection.name": "the objective (`overlap_rss`, `f1`, `f2`, `l2`...) or a `package.module:Class` target",
    "ObjectiveSection.options": "the objective's keyword settings (`weights`...)",
    "OptimizerSection.name": "the method (`mechcalib optimizers` lists them), or a `package.module:Class` target",
    "OptimizerSection.preset": "a named set of settings (a paper's, or `budget-scaled`)",
    "OptimizerSection.settings": "the optimiser's keyword settings, checked against its signature",
    "OptimizerSection.asynchronous": "keep one evaluation per worker in flight, telling each as it finishes "
    "(DE and CMA-ES run steady-state variants; docs/asynchronous.md)",
    "BudgetSection.max_evals": "stop after this many evaluations",
    "BudgetSection.max_iters": "stop after this many ask/tell batches",
    "BudgetSection.target": "stop once the best loss is at or below this",
    "BudgetSection.patience": "stop after this many batches without an improvement larger than `min_delta`",
    "BudgetSection.min_delta": "improvement threshold of `patience`",
    "EvaluatorSection.kind": "serial (in the process), a process pool, dask.distributed, or dask workers started "
    "as SLURM or PBS jobs (extra `mechcalib[cluster]`; docs/cluster.md)",
    "EvaluatorSection.workers": "processes of a pool or workers of a local dask cluster (default: the cores)",
    "EvaluatorSection.scheduler": "address of a running dask scheduler",
    "EvaluatorSection.timeout": "seconds a simulation may take before it is killed and counted as failed",
    "EvaluatorSection.cores": "slurm/pbs: cores each job asks for (shared by its worker `processes`)",
    "EvaluatorSection.memory": 'slurm/pbs: memory each job asks for, a number and a unit (`"4GB"`)',
    "EvaluatorSection.walltime": 'slurm/pbs: each job\'s walltime, `"HH:MM:SS"` or `"D-HH:MM:SS"`',
    "EvaluatorSection.queue": "slurm/pbs: the partition (SLURM) or queue (PBS)",
    "EvaluatorSection.account": "slurm/pbs: the account charged",
    "EvaluatorSection.job_extra_directives": 'slurm/pbs: further `#SBATCH`/`#PBS` lines (`["--qos=long"]`)',
    "EvaluatorSection.job_script_prologue": "slurm/pbs: shell lines run before the worker starts (activate an "
    "environment, `export PYTHONPATH=...`)",
    "EvaluatorSection.minimum_jobs": "slurm/pbs: the fewest jobs adaptive scaling keeps",
    "EvaluatorSection.maximum_jobs": "slurm/pbs: the most jobs the run holds (required)",
    "EvaluatorSection.adaptive": "slurm/pbs: scale between minimum_jobs and maximum_jobs with the work queued "
    "(false: maximum_jobs jobs for the whole run)",
    "EvaluatorSection.processes": "slurm/pbs: dask worker processes per job",
    "EvaluatorSection.death_timeout": "slurm/pbs: seconds after which a worker that lost its scheduler (a killed "
    "run) ends itself and its job",
    "EvaluatorSection.ship_code": "dask/slurm/pbs: upload the model's own module (a `module:Class` target) to "
    "workers that cannot import it; every worker is checked before the first batch",
    "OutputSection.directory": "folder holding the run folders (relative to the configuration's folder)",
    "OutputSection.keep_responses": "store every simulated response (for datasets and surrogates)",
    "OutputSection.n_alternatives": "distinct good parameter sets reported beside the best",
    "OutputSection.alternative_distance": "least unit-cube (max-norm) distance between reported alternatives",
    "OutputSection.plots": "write the report plots at the end of a run",
}

_BOUNDS = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))


def _constraints(metadata: Any) -> list[str]:
    out = []
    flat = []
    for m in metadata or ():  # a Field(...) inside Annotated carries its constraints in its own metadata
        flat += [m, *getattr(m, "metadata", ())]
    for m in flat:
        for attr, sym in _BOUNDS:
            v = getattr(m, attr, None)
            if v is not None:
                out.append(f"{sym} {v}")
        if getattr(m, "allow_inf_nan", None) is False:
            out.append("finite")
        if getattr(m, "min_length", None):
            out.append(f"at least {m.min_length}")
    return out


def type_text(tp: Any, metadata: Any = ()) -> str:
    """A type annotation of the schema in words: ``number (≥ 0)``, ``"a" | "b"``, ``list of text``..."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        args = typing.get_args(tp)
        return type_text(args[0], tuple(args[1:]) + tuple(metadata or ()))
    extra = _constraints(metadata)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return type_text(args[0], metadata)
        texts = list(dict.fromkeys(type_text(a) for a in args))  # a union of tables is one table
        base = " or ".join(texts)
    elif origin is Literal:
        values = [f"`{_value(v)}`" for v in typing.get_args(tp)]
        base = values[0] if len(values) == 1 else "one of " + ", ".join(values)
    elif origin is list:
        base = f"list of {_plural(type_text(typing.get_args(tp)[0]))}"
    elif origin is tuple:
        base = f"[{', '.join(type_text(a) for a in typing.get_args(tp))}]"
    elif origin is dict:
        base = f"table: name → {type_text(typing.get_args(tp)[1])}"
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        base = "table"
    else:
        base = {float: "number", int: "integer", str: "text", bool: "true/false"}.get(tp, "any")
    return base + (f" ({', '.join(extra)})" if extra else "")


def _plural(text: str) -> str:
    return {"table": "tables", "number": "numbers", "integer": "integers", "any": "values"}.get(text, text)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, float) and math.isinf(v):
        return '"inf"'
    return repr(v)


#: defaults the schema fills in a validator rather than on the field
FILLED: dict[str, str] = {"RunSchema.output": "its defaults"}


def default_text(field: Any, key: str = "") -> str:
    """A field's default as it is written in TOML, or ``required``."""
    if key in FILLED:
        return FILLED[key]
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    v = field.get_default(call_default_factory=True)
    if v is None:
        return "none"
    if isinstance(v, BaseModel):
        return "its defaults" if not v.model_fields_set else ", ".join(
            f"{k} = {_value(getattr(v, k))}" for k in sorted(v.model_fields_set)
        )  # fmt: skip
    if isinstance(v, dict | list) and not v:
        return "empty"
    return f"`{_value(v)}`"


#: this module, as `python -m` runs it (``__name__`` is "__main__" then)
_MODULE = "mechcalib.config.reference"


def description(model: type[BaseModel], key: str) -> str:
    """The key's description: the schema field's own, else :data:`DESCRIPTIONS`; refused when neither."""
    own = model.model_fields[key].description
    text = own or DESCRIPTIONS.get(f"{model.__name__}.{key}")
    if not text:
        raise KeyError(
            f"configuration key {model.__name__}.{key} has no description; give its schema field a "
            f"description= or add {model.__name__ + '.' + key!r} to DESCRIPTIONS in {_MODULE}, then run "
            f"`python -m {_MODULE}`"
        )
    return text


def render() -> str:
    """The text of docs/config.md."""
    lines = [
        "# Configuration reference",
        "",
        "Every key of a run configuration (TOML), section by section: its type, its default and what it does.",
        "Generated from the schema (`src/mechcalib/config/schema.py`) by `python -m mechcalib.config.reference`;",
        "`tests/test_config_reference.py` fails when this file is not current. The examples in `examples/` show",
        "the keys in use; `mechcalib check CONFIG` validates a file and names each wrong key with its fix.",
        "",
    ]
    for heading, what, model in SECTIONS:
        lines += [f"## {heading}", "", what[0].upper() + what[1:] + ".", "", "| key | type | default | description |"]
        lines.append("|---|---|---|---|")
        for key, field in model.model_fields.items():
            tp = type_text(field.annotation, field.metadata)
            default = default_text(field, f"{model.__name__}.{key}")
            lines.append(f"| `{key}` | {tp} | {default} | {description(model, key)} |")
        lines.append("")
    return "\n".join(lines)


DOC = Path(__file__).resolve().parents[3] / "docs" / "config.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write docs/config.md from the configuration schema.")
    ap.add_argument("--out", type=Path, default=DOC, help="the file to write (default docs/config.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 when the file is not current; write nothing")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        if not current:
            print(f"{args.out} is not current; run `python -m {_MODULE}`", file=sys.stderr)
        return 0 if current else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
