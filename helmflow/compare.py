"""Comparative statistics from the per-instance stats every run stores (``runs/<id>/stats.parquet``),
never a new query: two models on the same instances (a paired bootstrap interval of the difference,
McNemar's exact test for 0/1 metrics), and one cell across two releases (:func:`release_diff`).

Runs of one scenario on one release share their instances (the same prompts), so the comparison is
paired: each bootstrap resample draws instances once and takes both models' values on them, which
is the bootstrap of the per-instance differences. The seed and the number of resamples are the
board's (:mod:`helmflow.stats`), so the same data always gives the same bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.releases import latest_release_id
from helmflow.stats import mean_ci
from helmflow.storage import Store, safe_key

CORRECT_AT = 0.5  # an instance counts as correct when its main metric is at least this (the report's threshold)
LEVEL = 0.95

COMPARISON_SCHEMA = pa.schema(
    [
        ("scenario", pa.string()),
        ("metric", pa.string()),
        ("deployment_a", pa.string()),
        ("deployment_b", pa.string()),
        ("run_a", pa.string()),
        ("run_b", pa.string()),
        ("n", pa.int64()),  # instances both runs scored
        ("mean_a", pa.float64()),
        ("mean_b", pa.float64()),
        ("delta", pa.float64()),  # mean_a - mean_b over those instances
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("binary", pa.bool_()),  # every value 0 or 1: McNemar applies
        ("a_only", pa.int64()),  # instances A got right and B wrong
        ("b_only", pa.int64()),
        ("p_value", pa.float64()),  # McNemar's exact test (binary metrics only)
        ("significant", pa.bool_()),  # the interval excludes 0
        ("note", pa.string()),  # why a cell has no comparison
    ]
)


class NoSuchName(HelmflowError):
    """A board, release or deployment the storage does not have."""


# --------------------------------------------------------------------------- per-instance values
def instance_values(store: Store, run_id: str, metric: str) -> dict[str, float]:
    """A run's per-instance values of one stat (its test split, else its only split), by instance id;
    NaN values (an instance the metric could not score) are left out."""
    import pyarrow.compute as pc

    table = store.read_parquet(layout.run_file(run_id, "stats.parquet"))
    table = table.filter(pc.equal(table["name"], metric))
    test = pc.equal(table["split"], "test")
    if pc.any(test).as_py():
        table = table.filter(test)
    values = table["value"].to_numpy(zero_copy_only=False)
    return {iid: float(v) for iid, v in zip(table["instance_id"].to_pylist(), values, strict=True)
            if v is not None and not math.isnan(v)}


def is_binary(values: np.ndarray) -> bool:
    return bool(values.size) and bool(np.isin(values, (0.0, 1.0)).all())


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """McNemar's exact test: the two-sided binomial test of the discordant pairs against 1/2
    (``scipy.stats.binomtest``); 1.0 when there are none."""
    if a_only + b_only == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(a_only, a_only + b_only, 0.5).pvalue)


@dataclass(frozen=True)
class Paired:
    """Model A against model B on the instances both have (``delta`` = mean A - mean B)."""

    n: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    binary: bool
    a_only: int
    b_only: int
    p_value: float | None
    instances: list[str] = field(default_factory=list, repr=False)

    @property
    def significant(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0


def paired(a: dict[str, float], b: dict[str, float], level: float = LEVEL) -> Paired | None:
    """The paired bootstrap interval of mean(A) - mean(B) over the instances both scored (the
    percentile bootstrap of the per-instance differences, :func:`helmflow.stats.mean_ci`), and for
    0/1 values McNemar's exact test; None when they share no instance."""
    ids = sorted(a.keys() & b.keys())
    if not ids:
        return None
    va = np.array([a[i] for i in ids])
    vb = np.array([b[i] for i in ids])
    delta, low, high = mean_ci(va - vb, level)
    binary = is_binary(va) and is_binary(vb)
    a_only = int(((va == 1) & (vb == 0)).sum()) if binary else 0
    b_only = int(((va == 0) & (vb == 1)).sum()) if binary else 0
    return Paired(n=len(ids), mean_a=float(va.mean()), mean_b=float(vb.mean()), delta=delta, ci_low=low,
                  ci_high=high, binary=binary, a_only=a_only, b_only=b_only,
                  p_value=mcnemar_exact(a_only, b_only) if binary else None, instances=ids)


# --------------------------------------------------------------------------- releases
@dataclass
class ReleaseView:
    board: str  # storage-safe
    release_id: str
    manifest: ReleaseManifest
    runs: list[dict[str, Any]]  # runs.parquet rows

    def cell(self, scenario: str, deployment: str) -> dict[str, Any] | None:
        for r in self.runs:
            if r["scenario"] == scenario and r["deployment"] == deployment:
                return r
        return None

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys([*self.manifest.models, *(r["deployment"] for r in self.runs)]))

    @property
    def scenarios(self) -> list[str]:
        """The release's columns, then its perturbed copies' cells, in release order."""
        return list(dict.fromkeys([*self.manifest.scenarios, *(r["scenario"] for r in self.runs)]))


def board_releases(store: Store, board: str) -> list[tuple[str, ReleaseManifest]]:
    """The board's readable releases, oldest first (by creation time)."""
    name = safe_key(board)
    out = []
    for key in store.ls(layout.board_dir(name)):
        rid = key.rsplit("/", 1)[-1]
        if store.exists(manifest := layout.release_json(name, rid)):
            try:
                out.append((rid, ReleaseManifest.model_validate(store.read_json(manifest))))
            except ValueError:
                continue
    return sorted(out, key=lambda x: (x[1].created_at, x[0]))


def load_release(store: Store, board: str, release_id: str | None = None) -> ReleaseView:
    """A release (default: the one the board's pointers name); a board or release the storage does not
    have is a :class:`NoSuchName` naming what exists."""
    name = safe_key(board)
    if release_id is None:
        release_id = latest_release_id(store, name)
        if release_id is None:
            known = sorted(k.rsplit("/", 1)[-1] for k in store.ls(layout.LEADERBOARDS))
            raise NoSuchName(f"board {board!r} has no release in {store.root}"
                             + (f" (boards with releases: {', '.join(known)})" if known else ""))
    key = layout.release_json(name, release_id)
    if safe_key(release_id) != release_id or not store.exists(key):
        ids = [r for r, _ in board_releases(store, board)]
        raise NoSuchName(f"board {board!r} has no release {release_id!r} in {store.root}"
                         + (f" (its releases: {', '.join(ids)})" if ids else ""))
    manifest = ReleaseManifest.model_validate(store.read_json(key))
    runs = store.read_parquet(layout.release_file(name, release_id, "runs.parquet")).to_pylist()
    return ReleaseView(board=name, release_id=release_id, manifest=manifest, runs=runs)


def _check_model(release: ReleaseView, name: str) -> str:
    if name not in release.models:
        raise NoSuchName(f"release {release.release_id} of board {release.board!r} has no model {name!r} "
                         f"(its models: {', '.join(release.models)})")
    return name


def compare_models(store: Store, release: ReleaseView, a: str, b: str,
                   cache: dict[str, dict[str, float]] | None = None) -> list[dict[str, Any]]:
    """One row per scenario of the release (``COMPARISON_SCHEMA``): A against B, paired (``cache``:
    runs' values already read, by run id, filled as it goes)."""
    cache = {} if cache is None else cache

    def values(run: dict[str, Any]) -> dict[str, float]:
        if run["run_id"] not in cache:
            cache[run["run_id"]] = instance_values(store, run["run_id"], run["main_metric"])
        return cache[run["run_id"]]

    _check_model(release, a)
    _check_model(release, b)
    if a == b:
        raise HelmflowError(f"compare needs two different models, got {a!r} twice")
    rows = []
    for scenario in release.scenarios:
        ra, rb = release.cell(scenario, a), release.cell(scenario, b)
        row = _comparison_row(scenario, a, b, ra["run_id"] if ra else None, rb["run_id"] if rb else None,
                              (ra or rb or {}).get("main_metric"))
        missing = [d for d, r in ((a, ra), (b, rb)) if r is None or r["status"] == "missing"]
        if ra is None and rb is None:
            continue
        if missing:
            row["note"] = f"no run of {' and '.join(missing)}"
        else:
            assert ra is not None and rb is not None
            _fill_paired(row, paired(values(ra), values(rb)))
        rows.append(row)
    return rows


def _comparison_row(scenario: str, a: str, b: str, run_a: str | None, run_b: str | None,
                    metric: str | None) -> dict[str, Any]:
    return dict.fromkeys(COMPARISON_SCHEMA.names) | {
        "scenario": scenario, "deployment_a": a, "deployment_b": b, "run_a": run_a, "run_b": run_b,
        "metric": metric, "n": 0}


def _fill_paired(row: dict[str, Any], found: Paired | None) -> None:
    if found is None:
        row["note"] = "no instance scored by both"
    else:
        row.update(_paired_fields(found))


PAIRED_FIELDS = ("n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "binary", "a_only", "b_only", "p_value")


def _paired_fields(p: Paired) -> dict[str, Any]:
    out = {k: getattr(p, k) for k in PAIRED_FIELDS}
    out["significant"] = p.significant
    return out


def paired_all(values: list[dict[str, float]], level: float = LEVEL) -> dict[tuple[int, int], Paired | None]:
    """:func:`paired` for every pair (i < j) of several models' values on one scenario. When every
    model has the same instances (a release's runs of a scenario usually do), one joint bootstrap
    serves every pair: the same resampled instances, so each pair's interval is :func:`paired`'s
    (:func:`helmflow.stats.bootstrap_means`); otherwise each pair on its own shared instances."""
    from helmflow.stats import bootstrap_means

    pairs = [(i, j) for i in range(len(values)) for j in range(i + 1, len(values))]
    ids = sorted(values[0]) if values else []
    if len(values) < 3 or len(ids) < 2 or any(v.keys() != values[0].keys() for v in values):
        return {(i, j): paired(values[i], values[j], level) for i, j in pairs}
    matrix = np.array([[v[k] for k in ids] for v in values])
    draws = bootstrap_means(matrix)
    alpha = (1 - level) / 2
    binary = [is_binary(row) for row in matrix]
    out: dict[tuple[int, int], Paired | None] = {}
    for i, j in pairs:
        va, vb = matrix[i], matrix[j]
        low, high = np.quantile(draws[:, i] - draws[:, j], [alpha, 1 - alpha])
        both = binary[i] and binary[j]
        a_only = int(((va == 1) & (vb == 0)).sum()) if both else 0
        b_only = int(((va == 0) & (vb == 1)).sum()) if both else 0
        out[(i, j)] = Paired(n=len(ids), mean_a=float(va.mean()), mean_b=float(vb.mean()),
                             delta=float((va - vb).mean()), ci_low=float(low), ci_high=float(high), binary=both,
                             a_only=a_only, b_only=b_only, p_value=mcnemar_exact(a_only, b_only) if both else None,
                             instances=ids)
    return out


def write_comparison(store: Store, release: ReleaseView, a: str, b: str, rows: list[dict[str, Any]]) -> str:
    """``comparisons/<A>__<B>.parquet`` in the release (atomic), with the release in its metadata."""
    from helmflow.publish import parquet_meta

    key = layout.comparison(release.board, release.release_id, a, b)
    meta = parquet_meta(board=release.manifest.board, release_id=release.release_id, deployment_a=a, deployment_b=b,
                        level=str(LEVEL))
    store.write_parquet(key, pa.Table.from_pylist(rows, schema=COMPARISON_SCHEMA), metadata=meta)
    return key


def all_pairs(store: Store, release: ReleaseView) -> list[dict[str, Any]]:
    """Every pair of the release's models (A before B in board order) on every column, as
    :func:`compare_models` gives each (:func:`paired_all`: one joint bootstrap per column)."""
    models = [m for m in release.manifest.models if any(r["deployment"] == m for r in release.runs)]
    out: list[dict[str, Any]] = []
    for scenario in release.manifest.scenarios:
        cells = {m: c for m in models if (c := release.cell(scenario, m)) is not None and c["status"] != "missing"}
        present = [m for m in models if m in cells]
        values = [instance_values(store, cells[m]["run_id"], cells[m]["main_metric"]) for m in present]
        found = paired_all(values)
        for i, a in enumerate(present):
            for j in range(i + 1, len(present)):
                b = present[j]
                row = _comparison_row(scenario, a, b, cells[a]["run_id"], cells[b]["run_id"], cells[a]["main_metric"])
                _fill_paired(row, found[(i, j)])
                out.append(row)
    return out


# --------------------------------------------------------------------------- one release against another
VERSION_KINDS = {"scenario_version": "data", "prompt_version": "prompt", "model_version": "model",
                 "metric_version": "metric"}


def _run_manifest(store: Store, run_id: str) -> RunManifest | None:
    try:
        return RunManifest.model_validate(store.read_json(layout.run_json(run_id)))
    except (FileNotFoundError, ValueError):
        return None


def versions_moved(before: RunManifest | None, after: RunManifest | None) -> list[str]:
    """Which of data, prompt, model and metric differ between two runs of one cell (and the dataset
    revision, when it moved)."""
    if before is None or after is None:
        return []
    a, b = before.versions.model_dump(), after.versions.model_dump()
    moved = [kind for key, kind in VERSION_KINDS.items() if a.get(key) != b.get(key)]
    if before.dataset.revision != after.dataset.revision:
        moved.append(f"dataset revision {before.dataset.revision} → {after.dataset.revision}")
    return moved


def instance_rows(store: Store, run_id: str) -> dict[str, int]:
    """Each instance's first row in the run's requests (where the report's run page shows it)."""
    ids = store.read_parquet(layout.run_file(run_id, "requests.parquet"), columns=["instance_id"])["instance_id"]
    out: dict[str, int] = {}
    for row, iid in enumerate(ids.to_pylist()):
        out.setdefault(iid, row)
    return out


def release_diff(store: Store, board: str, from_id: str | None = None, to_id: str | None = None,
                 max_flips: int = 50) -> dict[str, Any]:
    """Cell by cell, release ``from_id`` against ``to_id`` (default: the previous and the latest
    release of the same kind, full board or subset): the score change with its paired interval on the
    instances both runs scored, the instances that flipped (correct in one, not the other) with the
    row of each answer, and which versions moved. Cells sort by significance: an interval that
    excludes 0 first, then by how far it is from 0 in units of its width."""
    to = load_release(store, board, to_id)
    if from_id is None:
        same_kind = [r for r, m in board_releases(store, board) if m.subset == to.manifest.subset]
        earlier = same_kind[:same_kind.index(to.release_id)] if to.release_id in same_kind else []
        if not earlier:
            raise NoSuchName(f"board {board!r} has no release before {to.release_id} to compare with "
                             f"(give --from)")
        from_id = earlier[-1]
    old = load_release(store, board, from_id)
    cells = []
    keys = list(dict.fromkeys([(r["scenario"], r["deployment"]) for r in old.runs + to.runs]))
    for scenario, deployment in keys:
        before, after = old.cell(scenario, deployment), to.cell(scenario, deployment)
        cell: dict[str, Any] = {"scenario": scenario, "deployment": deployment,
                                "run_before": before and before["run_id"], "run_after": after and after["run_id"],
                                "before": before and before["score"], "after": after and after["score"],
                                "metric": (after or before or {}).get("main_metric"), "flips": [], "n": 0,
                                "delta": None, "ci_low": None, "ci_high": None, "p_value": None,
                                "significant": False, "changed": [], "what": ""}
        if before is None or after is None:
            cell["what"] = "new" if before is None else "removed"
        elif "missing" in (before["status"], after["status"]):
            cell["what"] = f"status {before['status']} → {after['status']}"
        elif before["run_id"] == after["run_id"]:
            cell["what"] = "same run"
        else:
            cell["changed"] = versions_moved(_run_manifest(store, before["run_id"]),
                                             _run_manifest(store, after["run_id"]))
            cell["what"] = ", ".join(f"{c} changed" if " " not in c else c for c in cell["changed"]) or "re-run"
            va = instance_values(store, before["run_id"], before["main_metric"])
            vb = instance_values(store, after["run_id"], after["main_metric"])
            p = paired(vb, va)
            if p is not None:
                cell.update(n=p.n, delta=p.delta, ci_low=p.ci_low, ci_high=p.ci_high, p_value=p.p_value,
                            significant=p.significant)
                flipped = [i for i in p.instances if (va[i] >= CORRECT_AT) != (vb[i] >= CORRECT_AT)]
                cell["flipped"] = len(flipped)
                if flipped:
                    rows_before = instance_rows(store, before["run_id"])
                    rows_after = instance_rows(store, after["run_id"])
                    cell["flips"] = [{"instance_id": i, "before": va[i], "after": vb[i],
                                      "row_before": rows_before.get(i), "row_after": rows_after.get(i)}
                                     for i in flipped[:max_flips]]
        cell.setdefault("flipped", 0)
        cells.append(cell)
    cells.sort(key=significance_order)
    return {"board": to.board, "from": old.release_id, "to": to.release_id, "cells": cells,
            "from_created_at": old.manifest.created_at, "to_created_at": to.manifest.created_at}


def significance_order(cell: dict[str, Any]) -> tuple:
    """Significant cells first, then by |delta| over the interval's half-width; cells without an
    interval last, by name."""
    if cell.get("delta") is None:
        return (2, 0.0, cell["scenario"], cell["deployment"])
    half = max((cell["ci_high"] - cell["ci_low"]) / 2, 1e-12)
    return (0 if cell["significant"] else 1, -abs(cell["delta"]) / half, cell["scenario"], cell["deployment"])


def regressions(diff: dict[str, Any], threshold: float = 0.0) -> list[dict[str, Any]]:
    """The cells of a diff that got significantly worse: the whole interval of the change is below
    zero and the change is at least ``threshold`` (a drop of more than ``threshold`` points of the main
    metric, e.g. 0.02)."""
    return [c for c in diff["cells"] if c["delta"] is not None and c["ci_high"] < 0 and -c["delta"] >= threshold]
