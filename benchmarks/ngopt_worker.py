"""nevergrad's NGOpt over the unit cube, driven line by line through stdin/stdout (no mechcalib import).

The efficiency benchmark starts this script with the Python of an environment that holds nevergrad, which may
be another one than the project's: nevergrad 1.0.12's MetaModel (chosen by NGOpt in 6-D and more) fails under
numpy 2.4, so NGOpt runs in a virtual environment of its own with an older numpy, e.g.::

    python -m venv .venv-nevergrad && .venv-nevergrad/bin/pip install nevergrad==1.0.12 "numpy<2.4"
    python benchmarks/efficiency.py --problems frame --methods ngopt --peer-python .venv-nevergrad/bin/python

Protocol, one JSON document per line: the worker first writes ``{"nevergrad": v, "numpy": v}``, then for each
of ``--budget`` evaluations a point (a list of ``--dim`` floats in [0, 1]) and reads back its loss (a number);
it ends with ``"done"``. Anything it cannot go on with ends it with a non-zero status and a message on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dim", type=int, required=True)
    p.add_argument("--budget", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    a = p.parse_args()
    warnings.filterwarnings("ignore")  # NGOpt's inner CMA-ES warns about injected points; stderr is for errors
    import nevergrad as ng
    import numpy as np

    out = sys.stdout
    out.write(json.dumps({"nevergrad": ng.__version__, "numpy": np.__version__}) + "\n")
    out.flush()
    param = ng.p.Array(shape=(a.dim,), lower=0.0, upper=1.0)
    param.random_state = np.random.RandomState(a.seed)
    opt = ng.optimizers.NGOpt(parametrization=param, budget=a.budget, num_workers=1)
    for _ in range(a.budget):
        cand = opt.ask()
        out.write(json.dumps([float(v) for v in np.asarray(cand.value, float)]) + "\n")
        out.flush()
        line = sys.stdin.readline()
        if not line:  # the caller stopped the run
            return 0
        opt.tell(cand, float(json.loads(line)))
    out.write('"done"\n')
    out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
