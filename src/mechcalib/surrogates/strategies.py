"""Calibration strategies of Mareš et al. (2016) (Table 2, sections 3, 6, 8, 9) as reusable objects.

Every strategy is a :class:`~mechcalib.core.identification.Method`: fitted once on a
:class:`~mechcalib.core.dataset.Dataset` of ``(p_i, y_i)`` pairs (standardised parameters, one channel's responses
on a common grid; :class:`~mechcalib.surrogates.doe.CurveDataset` is that view), it then identifies the parameters
of any new curve on that grid, answering an :class:`~mechcalib.core.identification.Identification` (unit-cube
coordinates ``p`` and physical values). Nothing here is specific to hydration: any model with curve outputs
gives such a dataset through :func:`~mechcalib.surrogates.doe.simulate_dataset`.

=====================  ===========================  ======================================================
strategy               networks                     identification
=====================  ===========================  ======================================================
ForwardComplex         1: (p, t_k) -> y_k           GRADE minimises eq. 14 over every ``step``-th step
ForwardSplit           one per step k: p -> y_k     GRADE minimises eq. 14 over the chosen steps
ErrorF                 1: p -> F1 or F2 (eqs. 3-4)  trained per target curve, GRADE minimises the output
InverseExpert          one per parameter: y_K -> p  the networks' outputs
InversePCA             one per parameter: ᾱ -> p    the networks' outputs (first PCA scores as inputs)
Direct                 none                         GRADE minimises F1 or F2 of the model itself
=====================  ===========================  ======================================================

Step indices follow the paper's 1-based subscripts (``α_300`` is grid point 300 of 1161, index 299);
:data:`MARES2016_STEPS` lists Table 2's sets. Every identification says whether the curve lies outside the
training domain (section 9): a forward or error strategy checks the curve's components against the
training bundle and flags parameters found on the unit-cube boundary; an inverse strategy flags inputs
outside the training range (the networks then extrapolate) and parameters outside ``[0, 1]``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from ..calibrate import Termination, calibrate, minimize
from ..core.data import Curve, Experiment
from ..core.dataset import Dataset
from ..core.identification import Identification, Method, Provenance
from ..core.model import Model
from ..core.parameters import ParameterSpace
from ..core.problem import FunctionProblem, Problem
from ..errors import ConfigurationError
from ..objectives import F1, F2
from ..optimizers._base import Optimizer
from ..optimizers.grade import GRADE
from .doe import CurveDataset, as_curves
from .measures import curve_on_grid, relative_errors, response_error  # noqa: F401 - importable from here too
from .mlp import MLP, CVSettings, fit_mlp_product, fit_mlps
from .sensitivity import PCA

SeedLike = int | np.random.Generator | None


def _steps(*parts: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted({k for p in parts for k in p}))


#: Table 2's response components (1-based grid subscripts).
MARES2016_STEPS: dict[str, tuple[int, ...]] = {
    "forward_split": tuple(range(300, 1101, 100)),
    "forward_split_2": tuple(range(100, 1151, 50)),
    "forward_split_3": _steps([h + o for h in range(100, 1001, 100) for o in (0, 30, 50, 70)], [1100, 1130, 1150]),
    "inverse_expert": tuple(range(300, 1101, 100)),
    "inverse_expert_2": tuple(range(200, 1101, 100)),
}


# ------------------------------------------------------------------------------------------------------
# Local polish and notes (the error measures are in .measures)
# ------------------------------------------------------------------------------------------------------
def polish_box(
    fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray, f: float, n: int, max_evals: int
) -> tuple[np.ndarray, float, int]:
    """Nelder-Mead from GRADE's best point inside the unit cube (points clipped to it), at most ``max_evals``
    evaluations (0: no polish). Beyond the paper: GRADE finds the right basin within a few thousand
    evaluations but converges slowly inside it. Returns the better of the two points."""
    if max_evals <= 0:
        return x, f, n
    from scipy.optimize import minimize as local_minimize

    res = local_minimize(
        lambda u: float(fn(np.clip(u, 0.0, 1.0)[None, :])[0]),
        x,
        method="Nelder-Mead",
        options={"maxfev": int(max_evals), "xatol": 1e-9, "fatol": 1e-16},
    )
    xp = np.clip(res.x, 0.0, 1.0)
    if res.fun < f:
        return xp, float(res.fun), n + int(res.nfev)
    return x, f, n + int(res.nfev)


def _given(networks: Sequence[MLP] | None, n: int, name: str) -> list[MLP] | None:
    """Networks passed to ``fit`` instead of training (checked for their number)."""
    if networks is None:
        return None
    if len(networks) != n:
        raise ConfigurationError(
            f"strategy {name!r} needs {n} networks, got {len(networks)}; pass the networks of "
            "a fit of the same strategy or None to train"
        )
    return list(networks)


def _boundary_notes(p: np.ndarray, names: Sequence[str], tol: float = 1e-3) -> list[str]:
    return [f"{n} at the domain boundary ({v:.3f})" for n, v in zip(names, p, strict=True) if v <= tol or v >= 1 - tol]


def _outside_notes(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, labels: Sequence[str], tol: float) -> list[str]:
    span = np.where(hi > lo, hi - lo, 0.0)
    below = values < lo - tol * span - 1e-12
    above = values > hi + tol * span + 1e-12
    out = []
    if below.any() or above.any():
        bad = [labels[i] for i in np.flatnonzero(below | above)]
        more = f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""
        out.append(f"{len(bad)} of {len(labels)} inputs outside the training range: {', '.join(bad[:5])}{more}")
    return out


# ------------------------------------------------------------------------------------------------------
# Base classes
# ------------------------------------------------------------------------------------------------------
class Strategy(Method):
    """Fit on a dataset, identify parameters from new curves (a :class:`~mechcalib.core.identification.Method`).

    Args:
        settings: cross-validation and training constants (default Table 3).
        domain_tol: a curve component (or network input) further than this fraction of the training range
            beyond the training bundle marks the curve as outside the training domain.
    """

    name: str = "strategy"

    def __init__(self, *, settings: CVSettings | None = None, domain_tol: float = 0.01) -> None:
        self.settings = settings or CVSettings.mares2016()
        self.domain_tol = float(domain_tol)
        self.networks: list[MLP] = []
        self.data: CurveDataset | None = None
        self._fingerprint: str | None = None

    @abstractmethod
    def fit(self, data: Dataset, *, seed: SeedLike = None, networks: Sequence[MLP] | None = None) -> Strategy:
        """Train the strategy's networks on ``data`` (a :class:`~mechcalib.core.dataset.Dataset` of one channel, or
        the channel in ``meta["channel"]``), or take ``networks`` trained before on the same data, e.g. restored
        with :meth:`MLP.from_dict`, instead of training."""

    @abstractmethod
    def identify(self, y: np.ndarray, *, seed: SeedLike = None) -> Identification:
        """Identify standardised parameters from one curve: ``y`` ``(m,)`` on the training grid, a
        :class:`~mechcalib.core.data.Curve` (interpolated onto the grid) or an
        :class:`~mechcalib.core.data.Experiment` holding the training channel."""

    def identify_many(self, Y: np.ndarray, *, seed: SeedLike = None) -> tuple[np.ndarray, list[Identification]]:
        """``(n, m)`` curves -> ``(n, d)`` identified parameters and the per-curve results."""
        rng = np.random.default_rng(seed)
        res = [self.identify(y, seed=rng) for y in np.atleast_2d(Y)]
        return np.vstack([r.p for r in res]), res

    def _need_fit(self) -> CurveDataset:
        if self.data is None:
            raise ConfigurationError(f"strategy {self.name!r} is not fitted: call fit(dataset) first")
        return self.data

    def _use(self, data: Dataset) -> CurveDataset:
        """Keep the training data (as curves on one grid) and its fingerprint."""
        self.data = as_curves(data)
        self._fingerprint = None
        return self.data

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"domain_tol": self.domain_tol, "cv": asdict(self.settings)}
        for k in ("steps", "step", "kind", "n_components", "max_evals", "polish", "objective", "channel"):
            if hasattr(self, k):
                out[k] = getattr(self, k)
        return out

    def _result(self, p: np.ndarray, notes: list[str], loss: float | None = None, n_evals: int = 0) -> Identification:
        """The identification of unit-cube coordinates ``p``: physical values through the training data's space."""
        data = self._need_fit()
        if self._fingerprint is None:
            self._fingerprint = data.fingerprint()
        prov = Provenance(method=self.name, settings=self.describe(), dataset=self._fingerprint, n_samples=len(data))
        return Identification(
            names=data.names,
            values=data.from_unit(p[None])[0],
            loss=loss,
            provenance=prov,
            unit=p,
            outside=bool(notes),
            notes=notes,
            n_evals=n_evals,
        )

    def _check_curve(self, y: np.ndarray | Curve | Experiment) -> np.ndarray:
        data = self._need_fit()
        if isinstance(y, Experiment):
            y = y[data.meta.get("channel", "y")]
        if isinstance(y, Curve):
            y = curve_on_grid(y.x, y.y, data.t, origin=None)
        y = np.asarray(y, dtype=float).ravel()
        if y.size != data.t.size:
            raise ConfigurationError(
                f"strategy {self.name!r} was fitted on a grid of {data.t.size} points; the curve has {y.size}. "
                "Interpolate it onto the grid first (curve_on_grid)"
            )
        return y

    def network_rows(self, test: Dataset | None = None) -> list[dict[str, Any]]:
        """One row per network: inputs, ``h``, output, ``ε^MRP`` on training and test data (Tables 9-11)."""
        return []


class _OptimisingStrategy(Strategy):
    """Shared optimisation step: GRADE (``GRADE.mares2016``) over the unit cube, ``max_evals`` evaluations,
    then optionally ``polish`` evaluations of Nelder-Mead (0, the paper's procedure, by default)."""

    def __init__(
        self,
        *,
        settings: CVSettings | None = None,
        domain_tol: float = 0.01,
        max_evals: int = 5000,
        optimizer: Callable[[np.random.Generator], Optimizer] | None = None,
        polish: int = 0,
    ) -> None:
        super().__init__(settings=settings, domain_tol=domain_tol)
        self.max_evals = int(max_evals)
        self.optimizer = optimizer
        self.polish = int(polish)

    def _optimise(
        self, fn: Callable[[np.ndarray], np.ndarray], d: int, seed: SeedLike
    ) -> tuple[np.ndarray, float, int]:
        rng = np.random.default_rng(seed)
        opt = self.optimizer(rng) if self.optimizer is not None else GRADE.mares2016(seed=rng)
        res = minimize(fn, np.zeros(d), np.ones(d), opt, Termination(max_evals=self.max_evals), n_alternatives=1)
        x, f, n = np.asarray(res.best_x, dtype=float), float(res.best_loss), int(res.n_evals)
        return polish_box(fn, x, f, n, self.polish)


# ------------------------------------------------------------------------------------------------------
# Forward strategies
# ------------------------------------------------------------------------------------------------------
class ForwardSplit(_OptimisingStrategy):
    """One network per chosen response component ``y_k`` (inputs ``p``); identification by GRADE on eq. 14.

    Args:
        steps: 1-based grid subscripts of the approximated components (Table 2: Forward Split I/II/III).
    """

    name = "forward_split"

    def __init__(self, steps: Sequence[int] = MARES2016_STEPS["forward_split"], **kw: Any) -> None:
        super().__init__(**kw)
        self.steps = tuple(int(k) for k in steps)

    @property
    def idx(self) -> np.ndarray:
        return np.asarray(self.steps) - 1

    def fit(self, data: Dataset, *, seed: SeedLike = None, networks: Sequence[MLP] | None = None) -> ForwardSplit:
        data = as_curves(data)
        if self.idx.min() < 0 or self.idx.max() >= data.t.size:
            raise ConfigurationError(f"steps must lie in 1..{data.t.size}, got {min(self.steps)}..{max(self.steps)}")
        data = self._use(data)
        self.networks = _given(networks, len(self.steps), self.name) or fit_mlps(
            data.P, data.Y[:, self.idx], self.settings, seed=seed
        )
        self._lo, self._hi = data.Y[:, self.idx].min(axis=0), data.Y[:, self.idx].max(axis=0)
        return self

    def predict(self, P: np.ndarray) -> np.ndarray:
        """``(n, d)`` standardised parameters -> ``(n, K)`` approximated components."""
        P = np.atleast_2d(P)
        return np.column_stack([net.predict(P) for net in self.networks])

    def identify(self, y: np.ndarray, *, seed: SeedLike = None) -> Identification:
        data = self._need_fit()
        a = self._check_curve(y)[self.idx]
        p, loss, n = self._optimise(
            lambda P: np.sum((self.predict(P) - a) ** 2, axis=1), data.P.shape[1], seed
        )  # eq. 14
        notes = _outside_notes(a, self._lo, self._hi, [f"y_{k}" for k in self.steps], self.domain_tol)
        notes += _boundary_notes(p, data.names)
        return self._result(p, notes, loss, n)

    def network_rows(self, test: Dataset | None = None) -> list[dict[str, Any]]:
        data = self._need_fit()
        test = as_curves(test) if test is not None else None
        rows = []
        for k, i, net in zip(self.steps, self.idx, self.networks, strict=True):
            rows.append(
                {
                    "inputs": ", ".join(data.names),
                    "h": net.h,
                    "output": f"y_{k}",
                    "train": net.error(data.P, data.Y[:, i]),
                    "test": net.error(test.P, test.Y[:, i]) if test is not None else float("nan"),
                }
            )
        return rows


class ForwardComplex(_OptimisingStrategy):
    """One network ``(p, t_k) -> y_k`` over every ``step``-th grid point (Table 2: k = 1, 11, ..., 1161);
    the time input is ``log t`` (the grid is uniform in it). Identification by GRADE on eq. 14 over the same
    steps. Cross-validation folds keep the steps of one simulation together."""

    name = "forward_complex"

    def __init__(self, step: int = 10, **kw: Any) -> None:
        super().__init__(**kw)
        self.step = int(step)

    def _inputs(self, P: np.ndarray) -> np.ndarray:
        """``(n, d)`` -> ``(n * K, d + 1)`` rows ``(p, log t_k)``, simulation-major."""
        P = np.atleast_2d(P)
        lt = np.log(self._need_fit().t[self.idx])
        return np.column_stack([np.repeat(P, lt.size, axis=0), np.tile(lt, P.shape[0])])

    @property
    def idx(self) -> np.ndarray:
        return np.arange(0, self._need_fit().t.size, self.step)

    def fit(self, data: Dataset, *, seed: SeedLike = None, networks: Sequence[MLP] | None = None) -> ForwardComplex:
        data = self._use(data)
        # the samples are the product (simulation i, step k): trained on that structure (fit_mlp_product)
        lt = np.log(data.t[self.idx])[:, None]
        self.networks = _given(networks, 1, self.name) or [
            fit_mlp_product(data.P, lt, data.Y[:, self.idx], self.settings, seed=seed)
        ]
        self._lo, self._hi = data.Y[:, self.idx].min(axis=0), data.Y[:, self.idx].max(axis=0)
        return self

    def predict(self, P: np.ndarray) -> np.ndarray:
        P = np.atleast_2d(P)
        return self.networks[0].predict(self._inputs(P)).reshape(P.shape[0], -1)

    def identify(self, y: np.ndarray, *, seed: SeedLike = None) -> Identification:
        data = self._need_fit()
        a = self._check_curve(y)[self.idx]
        p, loss, n = self._optimise(lambda P: np.sum((self.predict(P) - a) ** 2, axis=1), data.P.shape[1], seed)
        notes = _outside_notes(a, self._lo, self._hi, [f"y_{k + 1}" for k in self.idx], self.domain_tol)
        notes += _boundary_notes(p, data.names)
        return self._result(p, notes, loss, n)

    def network_rows(self, test: Dataset | None = None) -> list[dict[str, Any]]:
        data = self._need_fit()
        test = as_curves(test) if test is not None else None
        net = self.networks[0]

        def err(ds: Dataset) -> float:
            return net.error(self._inputs(ds.P), ds.Y[:, self.idx].ravel())

        return [
            {
                "inputs": ", ".join(data.names) + ", t_k",
                "h": net.h,
                "output": "y_k",
                "train": err(data),
                "test": err(test) if test is not None else float("nan"),
            }
        ]


class ErrorF(_OptimisingStrategy):
    """Approximation of an error function (Table 2: Error F1 / F2). The network ``p -> F`` depends on the
    target curve, so :meth:`identify` computes F (eq. 3 or 4 over every grid point) of each training
    simulation against the curve, trains the network (cross-validated) and minimises its output by GRADE.
    ``last_network`` keeps the network of the latest identification."""

    name = "error_f"

    def __init__(self, kind: str = "F1", **kw: Any) -> None:
        super().__init__(**kw)
        if kind not in ("F1", "F2"):
            raise ConfigurationError(f"kind must be 'F1' or 'F2', got {kind!r}")
        self.kind = kind
        self.last_network: MLP | None = None

    def fit(self, data: Dataset, *, seed: SeedLike = None, networks: Sequence[MLP] | None = None) -> ErrorF:
        """Keeps the training set; the network is trained per curve in :meth:`identify`."""
        data = self._use(data)
        self._lo, self._hi = data.Y.min(axis=0), data.Y.max(axis=0)
        return self

    def error_values(self, y: np.ndarray) -> np.ndarray:
        """``(n,)`` F1 (eq. 3) or F2 (eq. 4) of each training simulation against the curve ``y``."""
        R = self._need_fit().Y - self._check_curve(y)[None, :]
        return np.sum(R * R, axis=1) if self.kind == "F1" else np.sum(np.abs(R), axis=1)

    def identify(self, y: np.ndarray, *, seed: SeedLike = None) -> Identification:
        data = self._need_fit()
        rng = np.random.default_rng(seed)
        F = self.error_values(y)
        (net,) = fit_mlps(data.P, F, self.settings, seed=rng)
        self.last_network = net
        p, loss, n = self._optimise(lambda P: net.predict(P), data.P.shape[1], rng)
        y = self._check_curve(y)
        notes = _outside_notes(y, self._lo, self._hi, [f"y_{k + 1}" for k in range(y.size)], self.domain_tol)
        notes += _boundary_notes(p, data.names)
        return self._result(p, notes, loss, n)


# ------------------------------------------------------------------------------------------------------
# Inverse strategies
# ------------------------------------------------------------------------------------------------------
class _InverseStrategy(Strategy):
    """One network per parameter, inputs ``features(y)``; identification is the networks' outputs."""

    input_labels: list[str]

    @abstractmethod
    def features(self, Y: np.ndarray) -> np.ndarray:
        """``(n, m)`` curves -> ``(n, k)`` network inputs."""

    def _fit_inputs(self, data: Dataset) -> None:
        """Prepare feature extraction from the training data (PCA)."""

    def fit(self, data: Dataset, *, seed: SeedLike = None, networks: Sequence[MLP] | None = None) -> _InverseStrategy:
        data = self._use(data)
        self._fit_inputs(data)
        X = self.features(data.Y)
        self._lo, self._hi = X.min(axis=0), X.max(axis=0)
        self.networks = _given(networks, data.P.shape[1], self.name) or fit_mlps(X, data.P, self.settings, seed=seed)
        return self

    def predict(self, Y: np.ndarray) -> np.ndarray:
        X = self.features(np.atleast_2d(Y))
        return np.column_stack([net.predict(X) for net in self.networks])

    def identify(self, y: np.ndarray, *, seed: SeedLike = None) -> Identification:
        data = self._need_fit()
        y = self._check_curve(y)
        x = self.features(y[None, :])[0]
        p = np.array([net.predict(x[None, :])[0] for net in self.networks])
        notes = _outside_notes(x, self._lo, self._hi, self.input_labels, self.domain_tol)
        notes += [f"{n} = {v:.3f} outside [0, 1]" for n, v in zip(data.names, p, strict=True) if v < 0 or v > 1]
        return self._result(p, notes)

    def identify_many(self, Y: np.ndarray, *, seed: SeedLike = None) -> tuple[np.ndarray, list[Identification]]:
        res = [self.identify(y) for y in np.atleast_2d(Y)]
        return np.vstack([r.p for r in res]), res

    def network_rows(self, test: Dataset | None = None) -> list[dict[str, Any]]:
        data = self._need_fit()
        test = as_curves(test) if test is not None else None
        X = self.features(data.Y)
        Xt = self.features(test.Y) if test is not None else None
        label = f"{len(self.input_labels)} values: " + ", ".join(self.input_labels[:3]) + ", ..."
        return [
            {
                "inputs": label,
                "h": net.h,
                "output": name,
                "train": net.error(X, data.P[:, j]),
                "test": net.error(Xt, test.P[:, j]) if test is not None else float("nan"),
            }
            for j, (name, net) in enumerate(zip(data.names, self.networks, strict=True))
        ]


class InverseExpert(_InverseStrategy):
    """Inputs: chosen response components (Table 2: Inverse Expert I/II); outputs: each parameter."""

    name = "inverse_expert"

    def __init__(self, steps: Sequence[int] = MARES2016_STEPS["inverse_expert"], **kw: Any) -> None:
        super().__init__(**kw)
        self.steps = tuple(int(k) for k in steps)
        self.input_labels = [f"y_{k}" for k in self.steps]

    def features(self, Y: np.ndarray) -> np.ndarray:
        return np.atleast_2d(Y)[:, np.asarray(self.steps) - 1]


class InversePCA(_InverseStrategy):
    """Inputs: the first ``n_components`` principal-component scores of the response (Table 2: 9)."""

    name = "inverse_pca"

    def __init__(self, n_components: int = 9, **kw: Any) -> None:
        super().__init__(**kw)
        self.n_components = int(n_components)
        self.input_labels = [f"pc_{i + 1}" for i in range(self.n_components)]
        self.pca: PCA | None = None

    def _fit_inputs(self, data: Dataset) -> None:
        self.pca = PCA().fit(data.Y)

    def features(self, Y: np.ndarray) -> np.ndarray:
        if self.pca is None:
            raise ConfigurationError("InversePCA is not fitted: call fit(dataset) first")
        return self.pca.transform(Y)[:, : self.n_components]


# ------------------------------------------------------------------------------------------------------
# Direct calibration
# ------------------------------------------------------------------------------------------------------
class Direct(Strategy):
    """GRADE on the model itself with F1 (Direct1) or F2 (Direct2), section 9: no approximation.

    Args:
        model: the forward model.
        channel: the channel the curves measure (``"alpha"`` for hydration).
        objective: ``"F1"`` or ``"F2"``.
        space: searched space (default: the model's); identified ``p`` are its unit-cube coordinates.
        conditions: model conditions (grid, temperature).
        max_evals: GRADE budget.
        polish: evaluations of a Nelder-Mead polish after GRADE (0: none, as in the paper).
    """

    name = "direct"

    def __init__(
        self,
        model: Model,
        *,
        channel: str,
        objective: str = "F1",
        space: ParameterSpace | None = None,
        conditions: dict[str, Any] | None = None,
        max_evals: int = 5000,
        optimizer: Callable[[np.random.Generator], Optimizer] | None = None,
        polish: int = 0,
    ) -> None:
        super().__init__()
        self.polish = int(polish)
        if objective not in ("F1", "F2"):
            raise ConfigurationError(f"objective must be 'F1' or 'F2', got {objective!r}")
        self.model = model
        self.channel = channel
        self.objective = objective
        self.space = space or model.space
        self.conditions = dict(conditions or {})
        self.max_evals = int(max_evals)
        self.optimizer = optimizer
        self.last_result = None

    def fit(self, data: Dataset, *, seed: SeedLike = None, networks: Sequence[MLP] | None = None) -> Direct:
        self._use(data)  # only the grid is used
        return self

    def identify_curve(
        self, curve: Curve, *, seed: SeedLike = None, conditions: dict[str, Any] | None = None
    ) -> Identification:
        """Calibrate against a measured curve at its own abscissae (the model's grid must cover them).

        A model whose :meth:`~mechcalib.core.model.Model.channel_array` computes the channel (an ``(n, m)`` array
        at given abscissae, as :class:`~mechcalib.models.hydration.Hydration` does) is scored in one vectorised
        call per batch; any other model goes through :class:`~mechcalib.core.problem.Problem`.
        """
        cond = {**self.conditions, **(conditions or {})}
        rng = np.random.default_rng(seed)
        opt = self.optimizer(rng) if self.optimizer is not None else GRADE.mares2016(seed=rng)
        term = Termination(max_evals=self.max_evals)
        probe = self.model.channel_array(np.empty((0, len(self.space))), self.channel, curve.x, cond)
        if probe is not None:  # the model computes the channel as an array: no curves, one call per batch
            x, y = curve.x, curve.y
            space, model, channel, kind = self.space, self.model, self.channel, self.objective

            def loss(X: np.ndarray) -> np.ndarray:
                R = model.channel_array(space.to_full(X), channel, x, cond) - y
                return np.sum(R * R, axis=1) if kind == "F1" else np.sum(np.abs(R), axis=1)  # eqs. 3-4

            problem = FunctionProblem(loss, space)
        else:
            exp = Experiment({self.channel: curve}, conditions=cond, name="target")
            problem = Problem(self.model, exp, F1() if self.objective == "F1" else F2(), space=self.space)
        res = calibrate(problem, opt, term, n_alternatives=1, progress=False)
        self.last_result = res
        p = self.space.to_unit(res.best_x[None, :])[0]
        f, n = float(res.best_loss), int(res.n_evals)
        if self.polish:
            space = self.space

            def unit_loss(U: np.ndarray) -> np.ndarray:
                out = problem.evaluate(space.from_unit(U)).losses
                return np.where(np.isfinite(out), out, np.inf)

            p, f, n = polish_box(unit_loss, p, f, n, self.polish)
        notes = _boundary_notes(p, self.space.free_names)
        return self._result(p, notes, f, n)

    def _result(self, p: np.ndarray, notes: list[str], loss: float | None = None, n_evals: int = 0) -> Identification:
        """Through the searched space (``fit`` is optional: :meth:`identify_curve` needs no dataset)."""
        prov = Provenance(
            method=self.name,
            settings=self.describe(),
            dataset=self.data.fingerprint() if self.data is not None else None,
            n_samples=len(self.data) if self.data is not None else None,
        )
        return Identification(
            names=self.space.free_names,
            values=self.space.from_unit(p[None])[0],
            loss=loss,
            provenance=prov,
            unit=p,
            outside=bool(notes),
            notes=notes,
            n_evals=n_evals,
        )

    def identify(self, y: np.ndarray, *, seed: SeedLike = None) -> Identification:
        data = self._need_fit()
        y = self._check_curve(y)
        return self.identify_curve(Curve(data.t, y, x_name="time"), seed=seed)


#: Mareš et al. (2016) Table 2's strategies with the paper's settings: ``{name: factory(**kw)}``.
MARES2016_STRATEGIES: dict[str, Callable[..., Strategy]] = {
    "Forward Complex": lambda **kw: ForwardComplex(step=10, **kw),
    "Forward Split": lambda **kw: ForwardSplit(MARES2016_STEPS["forward_split"], **kw),
    "Forward Split II": lambda **kw: ForwardSplit(MARES2016_STEPS["forward_split_2"], **kw),
    "Forward Split III": lambda **kw: ForwardSplit(MARES2016_STEPS["forward_split_3"], **kw),
    "Inverse Expert": lambda **kw: InverseExpert(
        MARES2016_STEPS["inverse_expert"], **{k: v for k, v in kw.items() if k in ("settings", "domain_tol")}
    ),
    "Inverse Expert II": lambda **kw: InverseExpert(
        MARES2016_STEPS["inverse_expert_2"], **{k: v for k, v in kw.items() if k in ("settings", "domain_tol")}
    ),
    "Inverse PCA": lambda **kw: InversePCA(9, **{k: v for k, v in kw.items() if k in ("settings", "domain_tol")}),
}

#: the old names of :data:`MARES2016_STEPS` and :data:`MARES2016_STRATEGIES`
PAPER_STEPS, PAPER_STRATEGIES = MARES2016_STEPS, MARES2016_STRATEGIES
