"""Adaptive testing as HELM's REEval runner does it (``benchmark/reeval_runner.py``), as pure functions.

The item model is Rasch (one parameter): P(correct) = sigmoid(theta + z), where theta is the model's
ability and z the item's *easiness* (HELM's ``difficulty`` column holds z with this sign). A run begins
from an initial ability (HELM's ``--model-ability``, default 0). At each step it asks the unasked item
whose predicted P(correct) is closest to 0.5, that is the one minimising abs(z + theta) (the first such
item on ties, as HELM's strict ``<``), scores it, and refits theta by maximum likelihood on every answer
so far. It stops after ``max_items`` items or when no item is left: HELM has no other stopping rule.

HELM minimises the *mean* Bernoulli negative log-likelihood with torch's LBFGS (strong Wolfe line
search, up to 100 outer steps of 20 iterations) and stops once the gradient norm is below 1e-5 (its
loss-change and ability-change tests compare a value with itself, so only the gradient test decides).
:func:`fit_ability` minimises the same mean loss from the same start with scipy's L-BFGS-B and the same
gradient tolerance, so an all-correct run ends at a large finite ability, as HELM's does.

Beyond HELM: :func:`ability_standard_error` (the inverse square root of the Fisher information) and
:func:`calibrate_items`, a Rasch fit of item easiness from a model x item score matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

GRADIENT_TOLERANCE = 1e-5  # HELM's stopping tolerance on the gradient norm
MAX_ITERATIONS = 100 * 20  # HELM's 100 outer LBFGS steps of at most 20 iterations each
CALIBRATION_RIDGE = 0.01  # keeps all-correct and all-wrong items and models finite in calibrate_items


def sigmoid(x: float) -> float:
    """1 / (1 + exp(-x)), computed without overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def p_correct(ability: float, easiness: float) -> float:
    """The Rasch model's probability that a model of this ability answers an item of this easiness."""
    return sigmoid(ability + easiness)


def pick_item(ability: float, unasked: Mapping[str, float]) -> str | None:
    """The unasked item whose P(correct) is closest to 0.5 (smallest abs(z + theta)); the first on ties."""
    best, best_gap = None, math.inf
    for item, easiness in unasked.items():
        gap = abs(easiness + ability)
        if gap < best_gap:
            best, best_gap = item, gap
    return best


def _mean_nll(theta: np.ndarray, scores: np.ndarray, easiness: np.ndarray) -> tuple[float, np.ndarray]:
    x = theta[0] + easiness
    # -[y log s(x) + (1 - y) log(1 - s(x))] = softplus(x) - y x, stable for any x
    loss = float(np.mean(np.logaddexp(0.0, x) - scores * x))
    grad = np.array([float(np.mean(1.0 / (1.0 + np.exp(-x)) - scores))])
    return loss, grad


def fit_ability(start: float, scores: Sequence[float], easiness: Sequence[float]) -> float:
    """The maximum-likelihood ability given the scores (in [0, 1]) on items of these easinesses."""
    if len(scores) != len(easiness):
        raise ValueError(f"{len(scores)} scores for {len(easiness)} items")
    if not scores:
        return float(start)
    y, z = np.asarray(scores, dtype=float), np.asarray(easiness, dtype=float)
    from scipy.optimize import minimize  # scipy on first fit only: importing it costs a command about 0.4 CPU-s

    result = minimize(_mean_nll, np.array([float(start)]), args=(y, z), jac=True, method="L-BFGS-B",
                      options={"gtol": GRADIENT_TOLERANCE, "ftol": 0.0, "maxiter": MAX_ITERATIONS})
    return float(result.x[0])


def ability_standard_error(ability: float, easiness: Sequence[float]) -> float:
    """1 / sqrt(sum of p (1 - p)) over the asked items: the ability's asymptotic standard error."""
    information = sum(p * (1.0 - p) for p in (p_correct(ability, z) for z in easiness))
    return math.inf if information <= 0 else 1.0 / math.sqrt(information)


@dataclass
class Step:
    """One asked item: the ability it was chosen with (HELM's trajectory records this one), the item,
    its easiness, its score, and the ability and standard error refit after it."""

    item: str
    easiness: float
    ability_before: float
    score: float
    ability_after: float
    standard_error: float


@dataclass
class Trajectory:
    steps: list[Step] = field(default_factory=list)
    initial_ability: float = 0.0

    @property
    def ability(self) -> float:
        return self.steps[-1].ability_after if self.steps else self.initial_ability

    @property
    def standard_error(self) -> float:
        return self.steps[-1].standard_error if self.steps else math.inf


def run_adaptive(easiness: Mapping[str, float], ask: Callable[[str], float], max_items: int,
                 initial_ability: float = 0.0) -> Trajectory:
    """Ask up to ``max_items`` items one at a time, HELM's way; ``ask(item)`` returns the item's score."""
    unasked = dict(easiness)
    trajectory = Trajectory(initial_ability=float(initial_ability))
    ability, scores, asked_easiness = float(initial_ability), [], []
    for _ in range(max_items):
        item = pick_item(ability, unasked)
        if item is None:
            break
        z = unasked.pop(item)
        score = float(ask(item))
        scores.append(score)
        asked_easiness.append(z)
        refit = fit_ability(ability, scores, asked_easiness)
        trajectory.steps.append(Step(item, z, ability, score, refit, ability_standard_error(refit, asked_easiness)))
        ability = refit
    return trajectory


def calibrate_items(scores: Mapping[str, Mapping[str, float]]) -> tuple[dict[str, float],
                                                                                 dict[str, float]]:
    """Fit Rasch item easiness z and model ability theta from ``scores[model][item]`` (missing cells allowed).

    Joint maximum likelihood of the Bernoulli likelihood with a small ridge penalty (``CALIBRATION_RIDGE``
    times the sum of squares) so that items every model answers right, or none, stay finite. The ridge
    also fixes the scale's origin. Returns (easiness per item, ability per model).
    """
    models = sorted(scores)
    items = sorted({i for row in scores.values() for i in row})
    if not models or not items:
        return {}, {}
    mi = {m: k for k, m in enumerate(models)}
    ii = {i: k for k, i in enumerate(items)}
    rows, cols, ys = [], [], []
    for m, row in scores.items():
        for i, value in row.items():
            rows.append(mi[m])
            cols.append(ii[i])
            ys.append(float(value))
    r, c, y = np.asarray(rows), np.asarray(cols), np.asarray(ys)
    n_models = len(models)

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        theta, z = params[:n_models], params[n_models:]
        x = theta[r] + z[c]
        loss = float(np.sum(np.logaddexp(0.0, x) - y * x)) + CALIBRATION_RIDGE * float(params @ params)
        residual = 1.0 / (1.0 + np.exp(-x)) - y
        grad: np.ndarray = 2.0 * CALIBRATION_RIDGE * params
        grad[:n_models] += np.bincount(r, residual, minlength=n_models)
        grad[n_models:] += np.bincount(c, residual, minlength=len(items))
        return loss, grad

    from scipy.optimize import minimize

    result = minimize(objective, np.zeros(n_models + len(items)), jac=True, method="L-BFGS-B",
                      options={"gtol": GRADIENT_TOLERANCE, "maxiter": 10_000})
    theta, z = result.x[:n_models], result.x[n_models:]
    return ({i: float(z[ii[i]]) for i in items}, {m: float(theta[mi[m]]) for m in models})
