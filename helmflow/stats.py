"""Numbers with honest error bars, and HELM's board aggregates (mean score, mean win rate)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0
BLOCK_CELLS = 1 << 19  # resample indices drawn at once: 4 MB of int64, whatever the number of instances
BATCH_CELLS = 1 << 16  # resampled values a batched statistic gets per call: its temporaries stay in cache


def resamples(n: int, seed: int = BOOTSTRAP_SEED):
    """The bootstrap's ``BOOTSTRAP_SAMPLES`` rows of ``n`` indices, in blocks of rows. One
    ``(BOOTSTRAP_SAMPLES, n)`` array held 16 KB per instance with its gathered values (133 MB for an
    8,334-instance run, times the runs scoring at once); blocks of an even number of rows draw exactly
    the same indices (numpy's bounded integers come from 64-bit draws split in two, so an even count
    per call leaves no half draw behind), so every interval is unchanged."""
    rng = np.random.default_rng(seed)
    rows = max(2, (BLOCK_CELLS // n) // 2 * 2)
    for start in range(0, BOOTSTRAP_SAMPLES, rows):
        yield rng.integers(0, n, size=(min(rows, BOOTSTRAP_SAMPLES - start), n))


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95,
            seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """Mean and a percentile-bootstrap interval (fixed seed, so the same data gives the same bounds)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if x.size == 1:
        return mean, mean, mean
    means = np.concatenate([x[idx].mean(axis=1) for idx in resamples(x.size, seed)])
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return mean, float(low), float(high)


def mean_cis(groups: Sequence[np.ndarray], level: float = 0.95,
             seed: int = BOOTSTRAP_SEED) -> list[tuple[float, float, float]]:
    """:func:`mean_ci` of each group, equal to it group by group; groups of one size share each block of
    resample indices (drawing them was about half of a run's summaries: a Dyck run has a dozen stats of 500
    instances each, every one resampled from the same seed)."""
    out: list[tuple[float, float, float] | None] = [None] * len(groups)
    arrays = [np.asarray(g, dtype=float) for g in groups]
    by_size: dict[int, list[int]] = {}
    for i, x in enumerate(arrays):
        if x.size < 2:
            out[i] = mean_ci(x, level, seed)
        else:
            by_size.setdefault(x.size, []).append(i)
    alpha = (1 - level) / 2
    for n, members in by_size.items():
        means: list[list[np.ndarray]] = [[] for _ in members]
        for idx in resamples(n, seed):
            for drawn, i in zip(means, members, strict=True):
                drawn.append(arrays[i][idx].mean(axis=1))
        for drawn, i in zip(means, members, strict=True):
            low, high = np.quantile(np.concatenate(drawn), [alpha, 1 - alpha])
            out[i] = (float(arrays[i].mean()), float(low), float(high))
    return [o for o in out if o is not None]


def ratio_ci(
    numerators: Sequence[float], denominators: Sequence[float], level: float = 0.95, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float, float]:
    """A pooled ratio sum(numerators) / sum(denominators) and a percentile-bootstrap interval that
    resamples the (numerator, denominator) pairs together (fixed seed)."""
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if num.size == 0 or den.sum() == 0:
        return math.nan, math.nan, math.nan
    ratio = float(num.sum() / den.sum())
    if num.size == 1:
        return ratio, ratio, ratio
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.concatenate([num[idx].sum(axis=1) / den[idx].sum(axis=1) for idx in resamples(num.size, seed)])
    alpha = (1 - level) / 2
    low, high = np.nanquantile(ratios, [alpha, 1 - alpha])
    return ratio, float(low), float(high)


def pooled_ci(
    columns: dict[str, Sequence[float]], fn: Callable[[dict[str, Any], int], float], level: float = 0.95,
    seed: int = BOOTSTRAP_SEED, rows: bool = False, bootstrap: bool = True,
    batched: Callable[[dict[str, np.ndarray], int], np.ndarray] | None = None,
) -> tuple[float, float, float]:
    """``fn(sums of each column, n)`` over all rows, and a percentile-bootstrap interval that resamples
    the rows (instances) together (fixed seed). ``rows``: ``fn`` gets the columns themselves (arrays);
    ``batched`` (with ``rows``): ``fn`` of a whole block of resamples, each column as a (resamples, n)
    array, one value per resample; ``bootstrap`` False: the value alone (NaN bounds)."""
    data = {k: np.asarray(v, dtype=float) for k, v in columns.items()}
    n = len(next(iter(data.values()))) if data else 0
    if n == 0:
        return math.nan, math.nan, math.nan
    value = float(fn(data if rows else {k: float(v.sum()) for k, v in data.items()}, n))
    if not bootstrap:
        return value, math.nan, math.nan
    if n == 1:
        return value, value, value
    draws_list: list[float] = []
    for idx in resamples(n, seed):
        if rows and batched is not None:
            step = max(1, BATCH_CELLS // n)
            for part in (idx[start:start + step] for start in range(0, len(idx), step)):
                draws_list += list(batched({k: v[part] for k, v in data.items()}, n))
        elif rows:
            draws_list += [fn({k: v[row] for k, v in data.items()}, n) for row in idx]
        else:
            sums = {k: v[idx].sum(axis=1) for k, v in data.items()}
            draws_list += [fn({k: float(s[b]) for k, s in sums.items()}, n) for b in range(len(idx))]
    draws = np.array(draws_list)
    alpha = (1 - level) / 2
    low, high = np.nanquantile(draws, [alpha, 1 - alpha])
    return value, float(low), float(high)


def counted_ci(
    counts: np.ndarray, fn: Callable[[np.ndarray], float | None], level: float = 0.95, seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float, float]:
    """``fn(column sums)`` of an instances x keys count matrix, and a percentile-bootstrap interval
    that resamples the instances (rows) together (fixed seed); nan where ``fn`` is undefined (None)."""
    def value(sums: np.ndarray) -> float:
        out = fn(sums)
        return math.nan if out is None else float(out)

    n = counts.shape[0]
    if n == 0:
        return math.nan, math.nan, math.nan
    point = value(counts.sum(axis=0))
    if n == 1 or math.isnan(point):
        return point, point, point
    draws = np.array([value(sums) for idx in resamples(n, seed)
                      # how often each instance was drawn, times its counts
                      for sums in np.stack([np.bincount(row, minlength=n) for row in idx]) @ counts])
    alpha = (1 - level) / 2
    low, high = np.nanquantile(draws, [alpha, 1 - alpha])
    return point, float(low), float(high)


def win_rates(table: dict[str, dict[str, float | None]],
              lower_is_better: set[str] | None = None) -> dict[str, float | None]:
    """HELM's mean win rate. ``table[model][column]``; None = missing cell.

    Per column with at least two values, a model's win rate is (models strictly worse + (ties - 1)/2)
    over (N - 1), N counting only models with a value; the headline is the mean over the columns
    where the model has a value (None when it has none).
    """
    lower_is_better = lower_is_better or set()
    columns = sorted({c for row in table.values() for c in row})
    per_model: dict[str, list[float]] = {m: [] for m in table}
    for col in columns:
        vals: dict[str, float] = {m: v for m, row in table.items()
                                  if (v := row.get(col)) is not None and not math.isnan(v)}
        if len(vals) < 2:
            continue
        sign = -1 if col in lower_is_better else 1
        for m, v in vals.items():
            worse = sum(1 for o, w in vals.items() if o != m and sign * w < sign * v)
            ties = sum(1 for w in vals.values() if w == v)  # includes m itself
            per_model[m].append((worse + (ties - 1) / 2) / (len(vals) - 1))
    return {m: (float(np.mean(r)) if r else None) for m, r in per_model.items()}


def mean_scores(table: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    """HELM Capabilities' mean score: unweighted mean of the available cells of each model."""
    out: dict[str, float | None] = {}
    for m, row in table.items():
        vals = [v for v in row.values() if v is not None and not math.isnan(v)]
        out[m] = float(np.mean(vals)) if vals else None
    return out


# --------------------------------------------------------------------------- ranks with intervals
def ranks(values: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis (1 = best = highest; ties share the better rank);
    NaN where the value is missing."""
    v = np.asarray(values, dtype=float)
    present = ~np.isnan(v)
    better = (np.where(present, v, -np.inf)[..., None, :] > v[..., :, None]).sum(axis=-1)
    return np.where(present, 1.0 + better, np.nan)


def bootstrap_means(matrix: np.ndarray, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """``matrix``: models x instances (NaN: the model has no value there). Returns resamples x models:
    each resample draws the instances once, for every model alike (the paired bootstrap), and takes
    each model's mean over the drawn instances it has."""
    m, n = matrix.shape
    present = ~np.isnan(matrix)
    filled = np.where(present, matrix, 0.0)
    blocks = []
    for idx in resamples(n, seed):
        sums = np.stack([filled[k][idx].sum(axis=1) for k in range(m)], axis=1)
        counts = np.stack([present[k][idx].sum(axis=1) for k in range(m)], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            blocks.append(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan))
    return np.concatenate(blocks) if blocks else np.empty((0, m))


def win_rate_draws(columns: np.ndarray) -> np.ndarray:
    """:func:`win_rates` for many tables at once: ``columns`` is draws x models x columns (NaN:
    missing); returns draws x models, NaN for a model with no column that counts."""
    x = np.asarray(columns, dtype=float)
    present = ~np.isnan(x)
    count = present.sum(axis=1, keepdims=True)  # models with a value, per draw and column
    v = x[:, :, None, :]  # model m against ...
    o = x[:, None, :, :]  # ... every model o
    worse = (present[:, None, :, :] & (o < v)).sum(axis=2)
    ties = (present[:, None, :, :] & (o == v)).sum(axis=2)  # includes m itself
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = (worse + (ties - 1) / 2) / (count - 1)
    rate = np.where(present & (count >= 2), rate, np.nan)
    counted = (~np.isnan(rate)).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, np.nansum(rate, axis=2) / np.maximum(counted, 1), np.nan)


def rank_interval(point: float, draws: np.ndarray, level: float = 0.95) -> tuple[int | None, int | None, int | None]:
    """A point rank and the percentile interval of its bootstrap ranks (widened to hold the point);
    Nones when the model has no rank."""
    if math.isnan(point):
        return None, None, None
    found = draws[~np.isnan(draws)]
    if found.size == 0:
        return int(point), int(point), int(point)
    alpha = (1 - level) / 2
    low = float(np.quantile(found, alpha, method="lower"))
    high = float(np.quantile(found, 1 - alpha, method="higher"))
    return int(point), int(min(low, point)), int(max(high, point))


def tied_groups(intervals: dict[str, tuple[int | None, int | None, int | None]]) -> dict[str, int]:
    """Models whose ranks are not separable, as numbered groups (1 = the top group): in order of point
    rank, a model joins the current group when its interval's best rank is no worse than the
    group's first model's worst rank; else it starts the next group. Unranked models get none."""
    order = sorted((r for r in intervals.items() if r[1][0] is not None), key=lambda r: (r[1][0], r[0]))
    groups: dict[str, int] = {}
    group, leader_high = 0, -1
    for model, (_, low, high) in order:
        assert low is not None and high is not None
        if group == 0 or low > leader_high:
            group, leader_high = group + 1, high
        groups[model] = group
    return groups


def rank_text(row: dict[str, Any], prefix: str = "") -> str:
    """``2 (1–3)``: a leaderboard row's rank and its 95% interval (``1`` alone when the interval is
    that rank, ``—`` when there is none); ``prefix``: a column's (``"<label> "``), else the headline's."""
    rank, low, high = (row.get(f"{prefix}{k}") for k in ("rank", "rank_low", "rank_high"))
    if rank is None:
        return "—"
    return str(rank) if low == high == rank else f"{rank} ({low}–{high})"
