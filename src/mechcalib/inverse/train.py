"""Training, prediction and persistence of inverse networks (Hu et al. (2024), sections 2.4 and 3.3).

:class:`InverseCalibrator` learns sequence -> parameters from a :class:`~mechcalib.inverse.data.SequenceDataset`
and then calibrates from a measured sequence in one forward pass::

    from mechcalib.inverse import InverseCalibrator, from_model
    from mechcalib.models import get_model
    data = from_model(get_model("sdof_boucwen"), 200, features=["restoring_force"], seed=0)   # 200 x 99 x 2
    train, val = data.split(0.2, seed=0)
    cal = InverseCalibrator.hu2024("PartsNet").fit(train, val)      # Table 1: 600 epochs, batch 40, Adam 5.6e-4
    cal.evaluate(val)                                               # Appendix A metrics on [0, 1]-scaled parameters
    cal.predict(val.X[0])                                           # (99, 2) -> (4,) physical parameters
    cal.identify(val.X[0]).parameters                               # an Identification: {name: value}
    cal.save("partsnet.pt"); InverseCalibrator.load("partsnet.pt")

Inputs are standardised per feature and the parameters scaled to ``[0, 1]`` by their search bounds (by the
training range when the dataset has no bounds); the loss (MSE, Table 1) and the metrics are computed on the
scaled parameters, as the paper's figures are. A validation part (``val_fraction`` of the data unless a
validation set is given) is scored after every epoch; ``patience`` stops training when the validation loss has
not improved by ``min_delta`` for that many epochs, and ``restore_best`` then keeps the best epoch's weights.

Reproducibility: the seed fixes the weight initialisation (through a forked torch generator, so the global
torch state is untouched), the split and the minibatch order; on the CPU with the same thread count two fits
with one seed give identical weights.
"""

from __future__ import annotations

import copy
import io
import math
import os
import pickle
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..core.data import Curve, Experiment
from ..core.dataset import Dataset, sequence_from_curves, train_val_split
from ..core.identification import Identification, Method, Provenance
from ..core.presets import Preset, deprecated_preset, presets_by_name
from ..errors import ConfigurationError, DataError
from .metrics import METRIC_NAMES, r2_per_output, regression_metrics
from .network import HU2024_NET, VARIANTS, InverseNet, NetConfig
from .scalers import ParameterScaler, SequenceScaler
from .sequences import PAPER_LENGTH, SequenceDataset

FORMAT = "mechcalib.inverse/1"

#: the validation R² (scaled parameters) below which :meth:`InverseCalibrator.identify` warns by default
MIN_R2 = 0.9


class InverseAccuracyWarning(UserWarning):
    """An identification by a network whose stored validation score says its answers are poor (or unknown)."""


#: Table 1 of Hu et al. (2024) (triaxial test).
PAPER_001: dict[str, Any] = {
    "batch_size": 40,
    "hidden": 72,
    "heads": 4,
    "num_layers": 1,
    "sparsity": 0.49,
    "lr": 5.6e-4,
    "optimizer": "adam",
    "loss": "mse",
    "quantile": 0.75,
    "epochs": 600,
    "length": PAPER_LENGTH,
    "gdr_latent_dim": 3,
    "gdr_epochs": 1000,
}


#: Hu et al. (2024)'s training settings
HU2024_TRAINING = Preset(
    name="hu2024",
    source="Hu et al. (2024), Table 1",
    settings=dict(batch_size=40, lr=5.6e-4, epochs=600, loss="mse", quantile=0.75),
    aliases=("paper_001",),
)


@dataclass(frozen=True)
class TrainConfig:
    """Training settings (defaults: Table 1).

    Attributes:
        batch_size: minibatch size (40).
        lr: Adam's learning rate (5.6e-4).
        epochs: maximum training epochs (600).
        loss: ``"mse"`` (Table 1) or ``"mae"``.
        val_fraction: share of the data held out for validation when no validation set is given.
        patience: early stopping after this many epochs without improvement (``None``: train every epoch).
        min_delta: improvement of the validation loss that counts.
        restore_best: end with the weights of the best validation epoch.
        quantile: ``q`` of the quantile loss reported (0.75).
        seed: seed of initialisation, split and minibatch order.
        x_scaling: how the input sequences are standardised: ``"feature"`` (mean and standard deviation of each
            feature over samples and time) or ``"step"`` (per time step and feature, over samples; see
            :class:`~mechcalib.inverse.data.SequenceScaler`). Table 1 does not say; ``"feature"`` is the default.
        threads: torch CPU threads during training (``None``: leave torch's setting). A model's parallel numba
            kernel run in the same process (building a dataset) can change the OpenMP thread count torch reads;
            set ``threads`` to pin it.
    """

    batch_size: int = 40
    lr: float = 5.6e-4
    epochs: int = 600
    loss: str = "mse"
    val_fraction: float = 0.2
    patience: int | None = None
    min_delta: float = 0.0
    restore_best: bool = False
    quantile: float = 0.75
    seed: int = 0
    threads: int | None = None
    x_scaling: str = "feature"

    def __post_init__(self) -> None:
        for k in ("batch_size", "epochs"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigurationError(f"TrainConfig.{k} must be a positive integer, got {v!r}")
        for k in ("patience", "threads"):
            v = getattr(self, k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigurationError(f"TrainConfig.{k} must be None or a positive integer, got {v!r}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigurationError(f"TrainConfig.lr must be a positive number, got {self.lr!r}")
        if self.loss not in ("mse", "mae"):
            raise ConfigurationError(f"TrainConfig.loss must be 'mse' or 'mae', got {self.loss!r}")
        if not 0.0 <= self.val_fraction < 1.0:
            raise ConfigurationError(f"TrainConfig.val_fraction must lie in [0, 1), got {self.val_fraction!r}")
        if not 0.0 < self.quantile < 1.0:
            raise ConfigurationError(f"TrainConfig.quantile must lie in (0, 1), got {self.quantile!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigurationError(f"TrainConfig.seed must be an integer >= 0, got {self.seed!r}")
        if self.x_scaling not in ("feature", "step"):
            raise ConfigurationError(
                f"TrainConfig.x_scaling must be 'feature' (per feature over samples and time) or 'step' (per time "
                f"step over samples), got {self.x_scaling!r}"
            )

    @classmethod
    def hu2024(cls, **overrides: Any) -> TrainConfig:
        """Hu et al. (2024) Table 1 (:data:`HU2024_TRAINING`): batch 40, Adam at 5.6e-4, MSE, 600 epochs,
        quantile 0.75."""
        return cls(**HU2024_TRAINING.merged(overrides))

    paper_001 = deprecated_preset("paper_001")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


class InverseCalibrator(Method):
    """An inverse network with its scalers: fit on (sequence, parameters) pairs, predict parameters (a
    :class:`~mechcalib.core.identification.Method`: :meth:`identify` answers an
    :class:`~mechcalib.core.identification.Identification`).

    Args:
        net: a :class:`NetConfig` or a variant name of Table 4 (``"PartsNet"``, ``"GRU+TransE"``...; see
            :data:`~mechcalib.inverse.network.VARIANTS`). ``n_features`` and ``n_outputs`` are taken from the data.
        train: training settings (default: Table 1).
        **net_overrides: changes to the network configuration (``hidden=16``, ``sparsity=0.3``...).

    After :meth:`fit`: ``net`` (the torch module), ``names``, ``features``, ``length``, ``x_scaler``,
    ``y_scaler``, ``history`` (per epoch: ``train_loss``; with validation ``val_loss`` and the metrics of
    :data:`~mechcalib.inverse.metrics.METRIC_NAMES` as ``val_<name>``), ``train_seconds`` (wall time of the
    epoch loop), ``epochs_run``, ``best_epoch``.
    """

    setting_presets = presets_by_name(
        Preset(
            name="hu2024",
            source=f"{HU2024_NET.source}: network sizes and training settings",
            settings={"net": HU2024_NET.settings, "train": HU2024_TRAINING.settings},
            aliases=("paper_001",),
        )
    )

    def __init__(
        self, net: NetConfig | str = "PartsNet", train: TrainConfig | None = None, **net_overrides: Any
    ) -> None:
        if isinstance(net, str):
            net = NetConfig.variant(net, **net_overrides)
        elif net_overrides:
            net = net.with_(**net_overrides)
        self.net_config: NetConfig = net
        self.train_config: TrainConfig = train or TrainConfig()
        self.net: InverseNet | None = None
        self.names: tuple[str, ...] = ()
        self.features: tuple[str, ...] = ()
        self.length = 0
        self.x_scaler: SequenceScaler | None = None
        self.y_scaler: ParameterScaler | None = None
        self.history: dict[str, list[float]] = {}
        self.train_seconds = 0.0
        self.epochs_run = 0
        self.best_epoch: int | None = None
        self.dataset_fingerprint: str | None = None
        self.n_samples: int | None = None
        #: :meth:`identify` warns when the stored validation R² is below this (``None``: never)
        self.min_r2: float | None = MIN_R2

    @classmethod
    def hu2024(cls, variant: str = "PartsNet", **train_overrides: Any) -> InverseCalibrator:
        """Hu et al. (2024) Table 1's network sizes and training settings for one of Table 4's networks."""
        return cls(NetConfig.variant(variant), TrainConfig.hu2024(**train_overrides))

    paper_001 = deprecated_preset("paper_001")

    @property
    def variant(self) -> str:
        return self.net_config.name

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.net_config.name

    def describe(self) -> dict[str, Any]:
        return {"net": self.net_config.to_dict(), "train": self.train_config.to_dict()}

    # -- training ------------------------------------------------------------------------------------
    def fit(
        self,
        data: Dataset,
        val: Dataset | None = None,
        *,
        seed: int | np.random.Generator | None = None,
        on_epoch: Callable[[int, int, dict[str, float]], Any] | None = None,
    ) -> InverseCalibrator:
        """Train on ``data`` (split off ``val_fraction`` for validation unless ``val`` is given). A dataset that is
        not a :class:`SequenceDataset` is read as one (:meth:`SequenceDataset.of`: every response key a feature).
        ``seed`` replaces the training configuration's seed. ``on_epoch(epoch, epochs, scores)`` is called after
        every epoch (``epoch`` from 1, ``epochs`` the maximum) with that epoch's entries of :attr:`history`
        (``train_loss``; with validation ``val_loss``, ``val_R2``, ...)."""
        if seed is not None:
            if isinstance(seed, np.random.Generator):
                seed = int(seed.integers(0, 2**31 - 1))
            self.train_config = replace(self.train_config, seed=int(seed))
        self.dataset_fingerprint, self.n_samples = data.fingerprint(), len(data)  # what was given, before any split
        data = SequenceDataset.of(data)
        val = SequenceDataset.of(val) if val is not None else None
        tc = self.train_config
        if val is None and tc.val_fraction > 0 and len(data) >= 2:
            tr, va = train_val_split(len(data), tc.val_fraction, tc.seed)
            data, val = data.subset(tr), data.subset(va)
        if val is not None and (val.features != data.features or val.names != data.names or val.length != data.length):
            raise DataError("the validation set must have the training set's features, parameters and length")
        self.names, self.features, self.length = data.names, data.features, data.length
        self.x_scaler = SequenceScaler.fit(data.X, per_step=tc.x_scaling == "step")
        self.y_scaler = ParameterScaler.fit(data.Y, data.lower, data.upper)
        self.net_config = self.net_config.with_(n_features=len(data.features), n_outputs=len(data.names))
        Xtr, Ytr = self._x(data.X), self._y(data.Y)
        Xva = self._x(val.X) if val is not None and len(val) else None
        Yva_np = self.y_scaler.transform(val.Y) if Xva is not None else None
        rng = np.random.default_rng(tc.seed)
        old_threads = torch.get_num_threads()
        if tc.threads is not None:
            torch.set_num_threads(tc.threads)
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(tc.seed)
                self.net = net = InverseNet(self.net_config)
            opt = torch.optim.Adam(net.parameters(), lr=tc.lr)
            loss_fn = torch.nn.MSELoss() if tc.loss == "mse" else torch.nn.L1Loss()
            self.history = {"train_loss": []}
            if Xva is not None:
                self.history["val_loss"] = []
                for m in METRIC_NAMES:
                    self.history["val_" + m] = []
            best, best_state, wait = math.inf, None, 0
            self.best_epoch = None
            n = Xtr.shape[0]
            t0 = time.perf_counter()
            for epoch in range(tc.epochs):
                net.train()
                perm = torch.as_tensor(rng.permutation(n))
                total = 0.0
                for s in range(0, n, tc.batch_size):
                    idx = perm[s : s + tc.batch_size]
                    loss = loss_fn(net(Xtr[idx]), Ytr[idx])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                self.history["train_loss"].append(total / n)
                self.epochs_run = epoch + 1
                if Xva is None:
                    if on_epoch is not None:
                        on_epoch(epoch + 1, tc.epochs, {"train_loss": total / n})
                    continue
                P = self._forward(Xva)
                vloss = float(np.mean((P - Yva_np) ** 2)) if tc.loss == "mse" else float(np.mean(np.abs(P - Yva_np)))
                self.history["val_loss"].append(vloss)
                for k, v in regression_metrics(Yva_np, P, tc.quantile).items():
                    self.history["val_" + k].append(v)
                if on_epoch is not None:
                    on_epoch(epoch + 1, tc.epochs, {k: v[-1] for k, v in self.history.items()})
                if vloss < best - tc.min_delta:
                    best, wait, self.best_epoch = vloss, 0, epoch + 1
                    if tc.restore_best:
                        best_state = copy.deepcopy(net.state_dict())
                else:
                    wait += 1
                    if tc.patience is not None and wait >= tc.patience:
                        break
            self.train_seconds = time.perf_counter() - t0
            if tc.restore_best and best_state is not None:
                net.load_state_dict(best_state)
            net.eval()
        finally:
            torch.set_num_threads(old_threads)
        return self

    # -- prediction ----------------------------------------------------------------------------------
    def _need_fit(self) -> InverseNet:
        if self.net is None:
            raise ConfigurationError("the network is not trained: call fit(dataset) or load(path) first")
        return self.net

    def _x(self, X: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(self.x_scaler.transform(X), dtype=torch.float32)

    def _y(self, Y: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(self.y_scaler.transform(Y), dtype=torch.float32)

    def _forward(self, Xt: torch.Tensor) -> np.ndarray:
        net = self._need_fit()
        was = net.training
        net.eval()
        with torch.no_grad():
            out = net(Xt).double().numpy()
        net.train(was)
        return out

    def _check(self, X: np.ndarray) -> tuple[np.ndarray, bool]:
        self._need_fit()
        X = np.asarray(X, dtype=float)
        one = X.ndim == 2
        if one:
            X = X[None]
        if X.ndim != 3 or X.shape[1:] != (self.length, len(self.features)):
            raise DataError(
                f"the network takes sequences of shape ({self.length}, {len(self.features)}) "
                f"(features {list(self.features)}), got {X.shape[1:] if X.ndim == 3 else X.shape}; "
                "resample the measurement to the training length"
            )
        if not np.all(np.isfinite(X)):
            raise DataError("the sequence holds NaN or inf values")
        return X, one

    def predict_scaled(self, X: np.ndarray) -> np.ndarray:
        """Parameters in ``[0, 1]`` coordinates: ``(n, L, C) -> (n, d)`` (``(L, C) -> (d,)``)."""
        X, one = self._check(X)
        P = self._forward(self._x(X))
        return P[0] if one else P

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Physical parameters: ``(n, L, C) -> (n, d)`` (``(L, C) -> (d,)``)."""
        X, one = self._check(X)
        P = self.y_scaler.inverse_transform(self._forward(self._x(X)))
        return P[0] if one else P

    @property
    def validation_r2(self) -> float | None:
        """The validation R² (scaled parameters) of the weights the network holds: the best epoch's when training
        restored it, else the last epoch's; ``None`` when it was trained without a validation set."""
        r2 = self.history.get("val_R2") or []
        if not r2:
            return None
        kept = self.best_epoch if self.train_config.restore_best and self.best_epoch else len(r2)
        return float(r2[kept - 1])

    def accuracy_warning(self) -> str | None:
        """Why an identification by this network should not be trusted, in words, or ``None``: its stored
        validation R² below :attr:`min_r2`, or no validation score stored."""
        if self.min_r2 is None:
            return None
        r2 = self.validation_r2
        if r2 is None:
            return (
                f"network {self.variant!r} was trained without a validation set: its accuracy is unknown (train it "
                "with a validation share, e.g. --val-fraction 0.2)"
            )
        if r2 < self.min_r2:
            return (
                f"network {self.variant!r} has a validation R² of {r2:.3g}, below the threshold {self.min_r2:g}: "
                "its parameters may be far off; train it longer or on more sequences, or check them by a "
                "calibration"
            )
        return None

    def identify(self, target: Any, *, seed: Any = None) -> Identification:
        """The parameters of one measurement in one forward pass: an ``(L, C)`` sequence in the network's feature
        order (``(L,)`` for a one-feature network), or an :class:`~mechcalib.core.data.Experiment` (or
        ``{channel: Curve}``) whose channels are resampled like the training data. ``.parameters`` is the
        ``{parameter: value}`` dict. ``seed`` is unused (the pass is deterministic). Warns
        (:class:`InverseAccuracyWarning`, :meth:`accuracy_warning`) when the network's stored validation R² is
        below :attr:`min_r2` (default :data:`MIN_R2`)."""
        msg = self.accuracy_warning()
        if msg is not None:
            warnings.warn(msg, InverseAccuracyWarning, stacklevel=2)
        if isinstance(target, Experiment):
            target = target.channels
        if isinstance(target, Mapping):
            self._need_fit()
            curves = {k: (c.x, c.y, c.t) for k, c in target.items() if isinstance(c, Curve)}
            missing = sorted({f[:-2] for f in self.features} - set(curves))
            if missing:
                raise DataError(
                    f"the network reads the channels {sorted({f[:-2] for f in self.features})}; the "
                    f"measurement lacks {missing}"
                )
            target = sequence_from_curves(curves, self.features, self.length)
        seq = np.asarray(target, dtype=float)
        if seq.ndim == 1 and len(self.features) == 1:  # one feature: a plain curve of length L
            seq = seq[:, None]
        values = self.predict(seq)
        prov = Provenance(
            method=self.name, settings=self.describe(), dataset=self.dataset_fingerprint, n_samples=self.n_samples
        )
        return Identification(names=self.names, values=values, loss=None, provenance=prov)

    def evaluate(self, data: Dataset) -> dict[str, Any]:
        """Appendix A's metrics on ``data`` in scaled (``[0, 1]``) parameter units, ``R2_<name>`` per parameter and
        the training time ``Time`` [s]."""
        data = SequenceDataset.of(data)
        if data.names != self.names or data.features != self.features:
            raise DataError(
                f"the dataset has parameters {list(data.names)} and features {list(data.features)}; "
                f"the network {list(self.names)} and {list(self.features)}"
            )
        T = self.y_scaler.transform(data.Y)
        P = self.predict_scaled(data.X)
        out: dict[str, Any] = regression_metrics(T, P, self.train_config.quantile)
        out.update({f"R2_{n}": float(v) for n, v in zip(self.names, r2_per_output(T, P), strict=True)})
        out["Time"] = self.train_seconds
        return out

    # -- persistence ---------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Everything :meth:`load` needs, as tensors and plain Python values."""
        net = self._need_fit()
        return {
            "format": FORMAT,
            "net_config": self.net_config.to_dict(),
            "train_config": self.train_config.to_dict(),
            "state_dict": {k: v.detach().clone() for k, v in net.state_dict().items()},
            "names": list(self.names),
            "features": list(self.features),
            "length": int(self.length),
            "x_scaler": self.x_scaler.to_dict(),
            "y_scaler": self.y_scaler.to_dict(),
            "history": {k: [float(x) for x in v] for k, v in self.history.items()},
            "train_seconds": float(self.train_seconds),
            "epochs_run": int(self.epochs_run),
            "best_epoch": self.best_epoch,
            "dataset": self.dataset_fingerprint,
            "n_samples": self.n_samples,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the network, its configuration and scalers to ``path`` (a torch file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        torch.save(self.state(), buf)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, path)
        return path

    @classmethod
    def from_state(cls, st: Mapping[str, Any]) -> InverseCalibrator:
        if st.get("format") != FORMAT:
            raise DataError(f"not a mechcalib inverse network (format {st.get('format')!r}, expected {FORMAT!r})")
        cal = cls(NetConfig.from_dict(st["net_config"]), TrainConfig.from_dict(st["train_config"]))
        cal.net = InverseNet(cal.net_config)
        cal.net.load_state_dict(st["state_dict"])
        cal.net.eval()
        cal.names, cal.features, cal.length = tuple(st["names"]), tuple(st["features"]), int(st["length"])
        cal.x_scaler = SequenceScaler.from_dict(st["x_scaler"])
        cal.y_scaler = ParameterScaler.from_dict(st["y_scaler"])
        cal.history = {k: list(v) for k, v in st.get("history", {}).items()}
        cal.train_seconds = float(st.get("train_seconds", 0.0))
        cal.epochs_run = int(st.get("epochs_run", 0))
        cal.best_epoch = st.get("best_epoch")
        cal.dataset_fingerprint, cal.n_samples = st.get("dataset"), st.get("n_samples")
        return cal

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> InverseCalibrator:
        """Read a file written by :meth:`save` (tensors and plain values only: ``weights_only`` loading)."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"network file {str(path)!r} does not exist")
        try:
            st = torch.load(path, map_location="cpu", weights_only=True)
        except (RuntimeError, ValueError, EOFError, pickle.UnpicklingError) as exc:
            raise DataError(f"{path}: cannot read a saved network ({type(exc).__name__}: {exc})") from None
        return cls.from_state(st)


def train_variants(
    data: SequenceDataset,
    val: SequenceDataset,
    variants: list[str] | None = None,
    train: TrainConfig | None = None,
    **net_overrides: Any,
) -> dict[str, InverseCalibrator]:
    """Fit several of Table 4's networks with shared hyper-parameters on the same split."""
    out = {}
    for name in variants or list(VARIANTS):
        out[name] = InverseCalibrator(name, train, **net_overrides).fit(data, val)
    return out
