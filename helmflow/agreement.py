"""How far the judges of a juried column agree, from the verdicts every judged run stores
(``runs/<id>/annotations.parquet``): each judge's mean score, Krippendorff's alpha across the jury
(the ``krippendorff`` package; interval level for scores, nominal for 0/1 verdicts), Cohen's kappa
for a jury of two (quadratic weights on an ordinal scale, none for 0/1), and the share of instances
where the judges' scores are more than one point apart. With human labels for a sample of instances
(a CSV keyed by instance id), the same agreement of each judge and of the jury's mean with them.

A unit is one judged completion (instance and sample); only verdicts a judge gave and that parsed
count (an empty model output is never sent to the judges: its fixed verdict is left out).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np
import pyarrow as pa

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.storage import Store

AGREEMENT_SCHEMA = pa.schema(
    [
        ("scenario", pa.string()),
        ("deployment", pa.string()),
        ("run_id", pa.string()),
        ("template", pa.string()),
        ("judges", pa.list_(pa.string())),
        ("judge_means", pa.list_(pa.float64())),  # each judge's mean score over its parsed verdicts
        ("judge_counts", pa.list_(pa.int64())),
        ("units", pa.int64()),  # completions at least two judges scored
        ("binary", pa.bool_()),  # every verdict 0 or 1
        ("alpha", pa.float64()),  # Krippendorff's alpha across the jury
        ("kappa", pa.float64()),  # Cohen's kappa, juries of two
        ("disagree_share", pa.float64()),  # share of units whose scores are more than 1 point apart
        ("human_units", pa.int64()),  # units with a human label
        ("human_alpha", pa.float64()),  # the jury's mean score against the human labels
        ("human_judge_alpha", pa.list_(pa.float64())),  # each judge against the human labels
    ]
)

DISAGREE_POINTS = 1.0


class HumanLabelsError(HelmflowError):
    """A human-labels file that cannot be read as ``instance_id,score`` rows."""


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def krippendorff_alpha(data: np.ndarray, binary: bool) -> float | None:
    """``data``: raters x units, NaN where a rater gave no value; None when alpha is undefined (fewer
    than two values in any unit, or no variation at all)."""
    if data.shape[0] < 2 or not ((~np.isnan(data)).sum(axis=0) >= 2).any():
        return None
    values = data[~np.isnan(data)]
    if np.unique(values).size < 2:
        return None
    import krippendorff

    try:
        return _finite(float(krippendorff.alpha(reliability_data=data,
                                                level_of_measurement="nominal" if binary else "interval")))
    except (ValueError, ZeroDivisionError):
        return None


def cohen_kappa(x: np.ndarray, y: np.ndarray, weights: str | None = None) -> float | None:
    """Cohen's kappa of two raters' labels (paired arrays), unweighted or ``"quadratic"`` over the
    sorted labels either used (as ``sklearn.metrics.cohen_kappa_score``); None when undefined."""
    if x.size == 0:
        return None
    labels = np.unique(np.concatenate([x, y]))
    k = labels.size
    if k < 2:
        return None
    index = {v: i for i, v in enumerate(labels.tolist())}
    observed = np.zeros((k, k))
    for a, b in zip(x.tolist(), y.tolist(), strict=True):
        observed[index[a], index[b]] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    i, j = np.indices((k, k))
    w = (i - j) ** 2 if weights == "quadratic" else (i != j).astype(float)
    denominator = float((w * expected).sum())
    return None if denominator == 0 else _finite(1 - float((w * observed).sum()) / denominator)


def verdicts(store: Store, run_id: str) -> tuple[str | None, list[str], dict[tuple[str, int], dict[str, float]]]:
    """A judged run's template, judges (in first-seen order) and parsed scores by (instance, sample)."""
    columns = ["instance_id", "sample_index", "judge", "template", "score", "error", "judge_request_hash"]
    rows = store.read_parquet(layout.run_file(run_id, layout.RUN_ANNOTATIONS), columns=columns).to_pylist()
    judges = list(dict.fromkeys(r["judge"] for r in rows))
    units: dict[tuple[str, int], dict[str, float]] = {}
    for r in rows:
        sent = r["judge_request_hash"] is not None  # an empty model output gets the template's verdict, unjudged
        if sent and r["error"] is None and r["score"] is not None and math.isfinite(r["score"]):
            units.setdefault((r["instance_id"], r["sample_index"]), {})[r["judge"]] = float(r["score"])
    template = next((r["template"] for r in rows), None)
    return template, judges, units


def read_human_labels(text: str, source: str) -> dict[str, float]:
    """``instance_id,score`` rows (a header naming both; more columns are ignored) -> score by instance id."""
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"instance_id", "score"} <= set(reader.fieldnames):
        raise HumanLabelsError(f"{source}: expected a header with instance_id and score, got "
                               f"{', '.join(reader.fieldnames or []) or 'nothing'}")
    out: dict[str, float] = {}
    for line, row in enumerate(reader, start=2):
        iid, raw = (row.get("instance_id") or "").strip(), (row.get("score") or "").strip()
        if not iid:
            raise HumanLabelsError(f"{source}:{line}: no instance_id")
        try:
            score = float(raw)
        except ValueError:
            raise HumanLabelsError(f"{source}:{line}: score {raw!r} is not a number") from None
        if not math.isfinite(score):
            raise HumanLabelsError(f"{source}:{line}: score {raw!r} is not a finite number")
        if iid in out:
            raise HumanLabelsError(f"{source}:{line}: instance {iid!r} is labelled twice")
        out[iid] = score
    if not out:
        raise HumanLabelsError(f"{source}: no labels")
    return out


def run_agreement(store: Store, run_id: str, human: dict[str, float] | None = None) -> dict[str, Any] | None:
    """One judged run's agreement record (``AGREEMENT_SCHEMA`` minus the cell's names); None when the
    run has no verdicts."""
    template, judges, units = verdicts(store, run_id)
    if not judges:
        return None
    keys = sorted(units)
    data = np.array([[units[u].get(j, np.nan) for u in keys] for j in judges]) if keys else np.empty((len(judges), 0))
    values = data[~np.isnan(data)]
    binary = bool(values.size) and bool(np.isin(values, (0.0, 1.0)).all())
    shared = (~np.isnan(data)).sum(axis=0) >= 2
    spread = np.nanmax(data[:, shared], axis=0) - np.nanmin(data[:, shared], axis=0) if shared.any() else np.empty(0)
    kappa = None
    if len(judges) == 2 and shared.any():
        kappa = cohen_kappa(data[0, shared], data[1, shared], None if binary else "quadratic")
    record: dict[str, Any] = {
        "run_id": run_id, "template": template, "judges": judges,
        "judge_means": [_finite(float(np.nanmean(row))) if (~np.isnan(row)).any() else None for row in data],
        "judge_counts": [int((~np.isnan(row)).sum()) for row in data],
        "units": int(shared.sum()), "binary": binary,
        "alpha": krippendorff_alpha(data, binary),
        "kappa": kappa,
        "disagree_share": float((spread > DISAGREE_POINTS).mean()) if spread.size else None,
        "human_units": None, "human_alpha": None, "human_judge_alpha": None,
    }
    if human:
        labelled = [k for k, u in enumerate(keys) if u[0] in human]
        if labelled:
            people = np.array([human[keys[k][0]] for k in labelled])
            sub = data[:, labelled]
            counted = (~np.isnan(sub)).sum(axis=0)
            jury = np.where(counted > 0, np.nansum(sub, axis=0) / np.maximum(counted, 1), np.nan)
            record["human_units"] = len(labelled)
            record["human_alpha"] = krippendorff_alpha(np.vstack([jury, people]), binary)
            record["human_judge_alpha"] = [krippendorff_alpha(np.vstack([row, people]), binary) for row in sub]
    return record


def release_agreement(store: Store, runs: list[dict[str, Any]], columns: list[str],
                      human: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Every juried cell of a release (``runs.parquet`` rows, the release's column labels): one
    ``AGREEMENT_SCHEMA`` row per run that has verdicts."""
    out = []
    for r in runs:
        if r["scenario"] not in columns or r["status"] == "missing":
            continue
        if not store.exists(layout.run_file(r["run_id"], layout.RUN_ANNOTATIONS)):
            continue
        record = run_agreement(store, r["run_id"], human)
        if record is not None:
            out.append({"scenario": r["scenario"], "deployment": r["deployment"], **record})
    return out


def write_agreement(store: Store, board: str, release_id: str, rows: list[dict[str, Any]], meta: dict[str, str]) -> str:
    key = layout.agreement(board, release_id)
    store.write_parquet(key, pa.Table.from_pylist(rows, schema=AGREEMENT_SCHEMA), metadata=meta)
    return key
