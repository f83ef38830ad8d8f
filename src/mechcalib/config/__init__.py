"""Run configuration files (TOML, validated with pydantic).

One file describes a calibration completely: the model, the searched parameters, the experiments, the
objective, the optimiser, the budget, the seed, where simulations run and what a run keeps. An annotated
example::

    name = "duffing-tbpso"          # run label (default: the file's stem)
    description = "free text"
    seed = 1                        # optimiser seed (integer >= 0); omit for a fresh one
    failure_loss = inf              # loss of a failed simulation (TOML `inf` is allowed)

    [model]
    name = "duffing"                # a registered model (see `mechcalib models`), or any Model subclass by its
                                    # "package.module:Class" target; `model = "..."` at the top is short for this
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

    [[experiments]]                 # or synthetic data: the model's response plus Ding et al. (2021) eq. 36 noise
    kind = "synthetic"
    values = { c = 0.2 }            # over the model preset (`preset = ...` to choose another)
    noise = 0.02
    seed = 7
    # channels = ["displacement"]  # keep only these; weights = { displacement = 1.0 }

    [objective]
    name = "overlap_rss"            # f1, f2, l2, overlap_rss
    options = { n_points = 200 }

    [optimizer]
    name = "tbpso"                  # a registered name or a "package.module:Class" target (so is objective.name)
    preset = "kibriya2023"          # a named preset of the optimiser (optional; see `mechcalib optimizers`)
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
    max_failed_dirs = 20                                             # failed folders kept, oldest deleted first
    max_failed_bytes = 1073741824                                    # ... and their total size
    output_limit = 1048576                                           # bytes of stdout/stderr kept (the tail)
    max_workers = 1
    conditions = { w_max = 4.0 }                                     # numeric; usable as placeholders
    [model.external.outputs.force]                                   # or parser = "parse.py:parse" + channels
    file = "result.csv"
    x = "displacement"
    y = "force"

The package is split by job: :mod:`.schema` (the pydantic sections), :mod:`.build` (objects from a validated
configuration) and :mod:`.errors` (issues, and the translation of pydantic's errors and of
:class:`~mechcalib.errors.SettingError` into them).

Every error names the key path, what was expected and what was found, for example
``optimizer.settings.swarm_size: expected an integer >= 1; got -3``; :class:`ConfigFileError` (a
:class:`~mechcalib.errors.ConfigurationError`) carries them as :class:`ConfigIssue` records. Unknown keys
are errors. :meth:`RunConfig.to_dict` gives a JSON-serialisable form with absolute paths from which
:meth:`RunConfig.from_dict` rebuilds the same run.
"""

from __future__ import annotations

from .build import RunConfig, load_config, model_conditions
from .errors import ConfigFileError, ConfigIssue
from .schema import SCHEMA_VERSION, resolve_file_conditions

__all__ = [
    "ConfigFileError",
    "ConfigIssue",
    "RunConfig",
    "SCHEMA_VERSION",
    "load_config",
    "model_conditions",
    "resolve_file_conditions",
]
