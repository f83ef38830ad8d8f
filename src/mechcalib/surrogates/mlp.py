"""One-hidden-layer perceptrons trained by conjugate gradients, sized by cross-validation (Mareš et al. (2016), s. 7).

Network (eqs. 1-2): inputs scaled to ``[0, 1]`` (min-max over the training data), one hidden layer of ``h``
sigmoid neurons with a bias neuron in the input and hidden layers, one output neuron. The output neuron is
linear and the target is scaled to ``[0, 1]`` by the training range; Mareš et al. (2016) only asks that data be
transformed "into the range of the activation functions", and a linear output keeps the scaled target's
ends reachable.

Training: nonlinear conjugate gradients (Polak-Ribière PR+, a line search to the strong Wolfe conditions) on
the mean squared error with analytic gradients. Every network of a cross-validation search (the ``V`` folds,
the candidate hidden sizes, the outputs) runs its own conjugate-gradient training with its own stop, and one
compiled, threaded call (:func:`_train_many`, numba) trains them all: no Python runs per iteration, and a
network that stops early costs nothing more. Networks whose inputs are the rows of a product ``(a_i, b_k)``
(Forward Complex: a simulation's parameters times its time steps) are trained on that structure: the hidden
pre-activation splits into ``u_ijk = a_ij + c_kj``, so ``sigmoid(u) = 1 / (1 + exp(-a_ij) exp(-c_kj))`` needs
exponentials only per simulation and per time step, not per sample (:func:`fit_mlp_product`). Why compiled
loops rather than a padded stack of networks in numpy or torch: the networks are tiny (100 samples, up to ~15
neurons), so array code is dominated by per-call overhead, and padding to the largest size wastes work.

``CVSettings(trainer=...)`` selects the trainer: ``"compiled"`` (the default, above), ``"numpy"`` (the same
algorithm as vectorised numpy over the batch, :func:`cg_batch`; the reference the compiled one is tested
against) or ``"scipy"`` (``scipy.optimize.minimize(method="CG")`` on the summed loss of the batch: the
gradient is block-separable but step lengths and directions are shared, which stalls networks whose curvature
differs from the rest).

Stopping (eq. 11, Table 3): each network's mean relative prediction error ``ε^MRP_k`` (eq. 10) on its own
training samples is recorded every iteration; a network stops at the first ``k >= 2J`` where
``r^PE_k = Σ_{j=k-J}^{k} ε_j / Σ_{j=k-2J}^{k-J-1} ε_j`` exceeds ``r^PE_max``, and keeps the weights it had
then, or after ``K`` iterations.

Hidden neurons (eqs. 12-13, Table 3): ``V``-fold cross-validation from ``h_min`` upward; every time
``r^CVE_h = ε^CV_h / ε^CV_{h-1}`` exceeds ``r^CVE_max`` counts, and after ``W`` counts the search stops. The
architecture with the smallest ``ε^CV_h`` is chosen, and of its ``V`` trained networks the one with the
smallest training error ``ε^MRP(D_train)`` on the whole training set. The search runs in rounds: an output
that has counted ``c`` exceedances needs at least ``W - c`` more sizes before it can stop, so that many
sizes are trained for it in one call. Every network's initial weights come from a generator seeded by
``(seed, output, h, fold)``, so the chosen networks do not depend on how the rounds batch them.
"""

from __future__ import annotations

# The implementation lives in four modules (each under 500 lines); this module keeps every name importable.
from .compiled import U_CLIP, _input_grads, _net_eval, _preactivation, _residuals, _train_many, _train_one
from .cv import (
    CVSettings,
    _cv_search,
    _net_outputs,
    _seed_words,
    _train_round,
    fit_mlp,
    fit_mlp_product,
    fit_mlps,
    folds,
    train_single,
)
from .network import (
    MLP,
    SeedLike,
    _pack,
    _scale,
    _split,
    _unpack,
    _with_bias,
    forward,
    init_weights,
    loss_and_grad,
    mrp_error,
    pe_ratio,
    sigmoid,
)
from .training import TRAINERS, _check_trainer, _train_batch_scipy, cg_batch, line_search_batch, train_batch

__all__ = [
    "MLP",
    "TRAINERS",
    "U_CLIP",
    "CVSettings",
    "SeedLike",
    "cg_batch",
    "fit_mlp",
    "fit_mlp_product",
    "fit_mlps",
    "folds",
    "forward",
    "init_weights",
    "line_search_batch",
    "loss_and_grad",
    "mrp_error",
    "pe_ratio",
    "sigmoid",
    "train_batch",
    "train_single",
    "_check_trainer",
    "_cv_search",
    "_input_grads",
    "_net_eval",
    "_net_outputs",
    "_pack",
    "_preactivation",
    "_residuals",
    "_scale",
    "_seed_words",
    "_split",
    "_train_batch_scipy",
    "_train_many",
    "_train_one",
    "_train_round",
    "_unpack",
    "_with_bias",
]
