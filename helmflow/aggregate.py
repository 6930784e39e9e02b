"""A board's release: its runs aggregated into the leaderboard (means, win rates, run groups, aspects,
metric groups), published as ``leaderboards/<board>/<release>/`` with ``release.json`` last, then
pointed at by the board's pointer (``helmflow.releases``).

The release id is ``<UTC date>-<8 hex of hash(board spec version + sorted run ids)>``, and an
existing release with the same hash is reused, so an unchanged run set writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import pyarrow as pa

import helmflow
from helmflow import compare, layout, releases, versions
from helmflow.manifests import FailedCellRecord, MetricGroupRecord, ReleaseManifest
from helmflow.outcomes import FailedCell, ReleaseOutcome, RunOutcome
from helmflow.pipeline import main_summary
from helmflow.plan.records import BoardPlan, ScenarioPlan
from helmflow.plan.spec import MetricGroup
from helmflow.publish import ReleaseWriter, existing_release, finite, parquet_meta, release_id
from helmflow.records import SUMMARY_SCHEMA, MetricSummary
from helmflow.stats import (
    BOOTSTRAP_SAMPLES,
    bootstrap_means,
    mean_ci,
    mean_scores,
    rank_interval,
    ranks,
    tied_groups,
    win_rate_draws,
    win_rates,
)
from helmflow.storage import Store, safe_key


def group_columns(board: BoardPlan) -> list[str]:
    """The metric groups' columns (``<scenario>/<metric>``), each once, in board order."""
    return list(dict.fromkeys(c.key for g in board.spec.metric_groups for c in g.columns))


# Rank intervals (``add_rank_intervals``): the headline's (the board's sort key), the mean win rate's,
# and each scenario column's; readers of releases published before them find no such columns.
RANK_SUFFIXES = ("rank", "rank_low", "rank_high")
HEADLINE_RANKS = ("rank", "rank_low", "rank_high", "tied_group", "win_rate_rank", "win_rate_rank_low",
                  "win_rate_rank_high")


def leaderboard_schema(labels: list[str], groups: list[str] | None = None, aspects: list[str] | None = None,
                       metric_groups: list[str] | None = None, columns: list[str] | None = None,
                       mean_groups: list[str] | None = None, abilities: bool = False) -> pa.Schema:
    """``abilities``: an adaptive release, whose cells also carry the Rasch ability and its standard error."""
    fields = [("deployment", pa.string()), ("mean_score", pa.float64()), ("mean_win_rate", pa.float64())]
    fields += [(name, pa.int64()) for name in HEADLINE_RANKS]
    for label in labels:
        fields += [(label, pa.float64()), (f"{label} ci_low", pa.float64()), (f"{label} ci_high", pa.float64())]
        fields += [(f"{label} {suffix}", pa.int64()) for suffix in RANK_SUFFIXES]
    fields += [(f"group:{g}", pa.float64()) for g in groups or []]
    fields += [(f"aspect:{a}", pa.float64()) for a in aspects or []]
    fields += [(f"{g} mean_win_rate", pa.float64()) for g in metric_groups or []]
    fields += [(f"{g} mean", pa.float64()) for g in mean_groups or []]  # tables declaring HELM's mean
    for key in columns or []:
        fields += [(key, pa.float64()), (f"{key} ci_low", pa.float64()), (f"{key} ci_high", pa.float64()),
                   (f"{key} note", pa.string())]
    fields += [("cost_usd", pa.float64()), ("prompt_tokens", pa.int64()), ("output_tokens", pa.int64()),
               ("judge_cost_usd", pa.float64()), ("missing", pa.int64())]
    fields += [("reasoning_tokens", pa.int64()), ("reasoning_tokens_per_instance", pa.float64()),
               ("cost_per_correct_usd", pa.float64())]
    fields += [(f"{label} truncated_in_reasoning", pa.float64()) for label in labels]
    if abilities:
        fields += [("mean_ability", pa.float64())]
        fields += [(f"{label} {name}", pa.float64()) for label in labels
                   for name in ("ability", "ability_se", "full_score")]
    return pa.schema(fields)


GroupCells = dict[tuple[str, str], tuple[float | None, float | None, float | None]]  # (deployment, column) -> mean, CI


GroupNotes = dict[tuple[str, str], str]  # (deployment, column) -> why the cell has no value


def unavailable_reason(rows: list[MetricSummary], metric: str) -> str | None:
    """Why a run's summary lacks a pooled number its metric declares (e.g. calibration without logprobs)."""
    from helmflow.metrics import METRICS

    names = {r.name for r in rows}
    for m in METRICS.names():
        for pooled in METRICS.get(m).pooled:
            if pooled.name == metric and pooled.unavailable and pooled.unavailable[0] in names:
                return pooled.unavailable[1]
    return None


def group_cells(store: Store, board: BoardPlan, runs: list[RunOutcome], notes: GroupNotes | None = None) -> GroupCells:
    """Each run's summary value (test split, else its only split) for every group column of its scenario;
    a value its metric could not compute for the run gets its reason in ``notes`` instead. A column
    naming a scenario group (HELM Lite's MMLU) is the unweighted mean over the group's runs (HELM's
    cell; no interval when it pools several runs)."""
    members: dict[str, list[str]] = {}
    for s in board.scenarios:
        members.setdefault(s.label, []).append(s.label)
        if s.group and s.group != s.label:
            members.setdefault(s.group, []).append(s.label)
    for copy in board.perturbed:  # a column may name a perturbed copy (``<label>~<perturbation>``) itself
        members.setdefault(copy.label, []).append(copy.label)
    wanted: dict[str, list[tuple[str, str]]] = {}  # run label -> (column key, metric)
    for key in group_columns(board):
        column, _, metric = key.partition("/")
        for label in members.get(column, []):
            wanted.setdefault(label, []).append((key, metric))
    found_values: dict[tuple[str, str], list[tuple[float | None, float | None, float | None]]] = {}
    for r in labelled(board, runs):  # this board's labels, by run id
        columns = wanted.get(r.scenario)
        if not columns:
            continue
        summary = store.read_parquet(layout.run_file(r.run_id, "summary.parquet"), columns=list(SUMMARY_SCHEMA.names))
        rows = [MetricSummary.model_validate(x) for x in summary.to_pylist()]
        for key, metric in columns:
            if (found := main_summary(rows, metric)) is not None:
                found_values.setdefault((r.deployment, key), []).append(
                    (finite(found.mean), finite(found.ci_low), finite(found.ci_high)))
            elif notes is not None and (why := unavailable_reason(rows, metric)):
                notes[(r.deployment, key)] = why
    out: GroupCells = {}
    for cell, values in found_values.items():
        out[cell] = values[0] if len(values) == 1 else (_group_mean([v[0] for v in values]), None, None)
    return out


def run_runtimes(store: Store, run_id: str, deployment: str) -> tuple[list[float], bool]:
    """One value per request of a run's evaluation split (test, else the run's only split), and whether
    they are HELM's denoised runtimes: :func:`helmflow.metrics.efficiency.denoised_runtime` from the
    request's prompt tokens and its completions' tokens (less the echoed prompt's, as HELM counts), when
    HELM has a table for the deployment; else the measured seconds of the request (HELM's
    ``inference_runtime``). Failed requests are left out, as HELM has no result for them."""
    import json

    from helmflow.metrics.efficiency import denoised_runtime, denoised_tables

    requests = store.read_parquet(layout.run_file(run_id, "requests.parquet"),
                                  columns=["request_hash", "sample_index", "split", "body_json"]).to_pylist()
    completions = store.read_parquet(layout.run_file(run_id, "completions.parquet"), columns=[
        "request_hash", "sample_index", "prompt_tokens", "output_tokens", "tokens", "latency_s", "error"]).to_pylist()
    splits = {r["split"] for r in requests}
    split = "test" if "test" in splits else (sorted(splits) or [""])[0]
    echo = {(r["request_hash"], r["sample_index"]): bool(json.loads(r["body_json"]).get("echo"))
            for r in requests if r["split"] == split}
    done: dict[tuple[str, int], list[dict]] = {}
    for c in completions:
        key = (c["request_hash"], c["sample_index"])
        if key in echo and not c["error"]:
            done.setdefault(key, []).append(c)
    denoised = deployment in denoised_tables()
    values = []
    for key, answers in done.items():
        if not denoised:
            values.append(max(c["latency_s"] for c in answers))
            continue
        prompt = answers[0]["prompt_tokens"]
        output = sum(len(c["tokens"]) if c["tokens"] else c["output_tokens"] for c in answers)
        if echo[key]:  # HELM: the echoed prompt is not generated (0 when the counts do not round trip)
            output = output - prompt if prompt <= output else 0
        estimate = denoised_runtime(deployment, prompt, output)
        assert estimate is not None
        values.append(estimate)
    return values, denoised


def runtime_cells(store: Store, board: BoardPlan, runs: list[RunOutcome], notes: GroupNotes | None = None
                  ) -> GroupCells:
    """Metric group columns of ``inference_denoised_runtime`` (HELM Classic's efficiency): per model, the
    mean over a scenario's requests of HELM's denoised runtime (:func:`run_runtimes`; a group: the mean
    of its runs'). A model HELM has no table for shows its measured runtime instead, and its cell's note
    says so."""
    from helmflow.metrics.efficiency import DENOISED

    wanted = [c for g in board.spec.metric_groups for c in g.columns if c.metric == DENOISED]
    if not wanted:
        return {}
    by_id = {r.run_id for r in runs}
    by_cell = {(p.scenario.label, p.deployment.name): p for p in board.runs}
    out: GroupCells = {}
    for column in wanted:
        members = [s for s in board.scenarios if column.scenario in (s.label, s.group)]
        for m in board.spec.models:
            per_run, measured = [], False
            for s in members:
                plan = by_cell.get((s.label, m))
                if plan is None or plan.run_id not in by_id:
                    continue
                values, denoised = run_runtimes(store, plan.run_id, m)
                measured |= not denoised
                if values:
                    per_run.append(mean_ci(values))
            if not per_run:
                continue
            if len(per_run) == 1:
                mean, low, high = per_run[0]
                out[(m, column.key)] = (finite(mean), finite(low), finite(high))
            else:
                out[(m, column.key)] = (_group_mean([finite(v[0]) for v in per_run]), None, None)
            if measured and notes is not None:
                notes[(m, column.key)] = (f"measured seconds per request: HELM has no denoised-runtime table for "
                                          f"{m} (its tables cover 18 models of 2022)")
    return out


def perturbation_cells(store: Store, board: BoardPlan, runs: list[RunOutcome]) -> GroupCells:
    """HELM's robustness and fairness (``compute_worst_case_metrics``): per instance, the worst (lowest)
    main-metric value over the original and that kind's perturbations, then the mean with a bootstrap
    interval. An instance a perturbation left unchanged was not re-run: its worst case is the original;
    a perturbation that changed no sampled instance has no run at all (``pipeline.preflight`` drops
    it), so a kind whose perturbations all changed nothing shows the original's score, as HELM does.
    A cell is missing when the original or any of its perturbed runs is."""
    from helmflow.perturbations import PERTURBATIONS

    published = {r.run_id for r in runs}
    by_cell = {(p.scenario.label, p.deployment.name): p for p in board.runs}
    out: GroupCells = {}
    for s in board.scenarios:
        kinds: dict[str, list[ScenarioPlan]] = {PERTURBATIONS.get(n).kind: [] for n in s.perturbations}
        for copy in board.perturbed:
            if copy.perturbation and copy.perturbation.label == s.label:
                kinds.setdefault(copy.perturbation.kind, []).append(copy)
        for m in board.spec.models:
            original = by_cell.get((s.label, m))
            if original is None or original.run_id not in published:
                continue
            base = _main_values(store, original.run_id, s.main_metric)
            for kind, copies in kinds.items():
                found = [by_cell.get((c.label, m)) for c in copies]
                plans = [p for p in found if p is not None and p.run_id in published]
                if len(plans) != len(found):
                    continue
                worst = dict(base)
                for p in plans:
                    for iid, value in _main_values(store, p.run_id, s.main_metric).items():
                        if iid in worst:
                            worst[iid] = min(worst[iid], value)
                if worst:
                    mean, low, high = mean_ci(list(worst.values()))
                    out[(m, f"{s.label}/{kind}")] = (finite(mean), finite(low), finite(high))
    # a scenario group's column (HELM's run group, e.g. a benchmark's subjects) is the unweighted mean of
    # its entries' worst cases, as its other columns are (no interval when it pools several runs)
    members: dict[str, list[str]] = {}
    for s in board.scenarios:
        if s.group and s.group != s.label:
            members.setdefault(s.group, []).append(s.label)
    for group, labels in members.items():
        for m in board.spec.models:
            for kind in ("robustness", "fairness"):
                values = [out[(m, f"{lab}/{kind}")] for lab in labels if (m, f"{lab}/{kind}") in out]
                if values:
                    out[(m, f"{group}/{kind}")] = (values[0] if len(values) == 1
                                                   else (_group_mean([v[0] for v in values]), None, None))
    return out


def across_run_cells(store: Store, board: BoardPlan, runs: list[RunOutcome]) -> GroupCells:
    """Metric group columns whose metric is an across-runs statistic (``helmflow.metrics.ACROSS_RUNS``):
    per model, each instance id's main-metric values in every run of the column's scenario or group
    (ids from any run, as HELM's ToRR summarizer takes them), the statistic of those values, then the
    mean over ids with a bootstrap interval. A cell is missing when any of the group's runs is."""
    from helmflow.metrics import ACROSS_RUNS

    known = set(ACROSS_RUNS.names())
    wanted = [c for g in board.spec.metric_groups for c in g.columns if c.metric in known]
    if not wanted:
        return {}
    published = {r.run_id for r in runs}
    by_cell = {(p.scenario.label, p.deployment.name): p for p in board.runs}
    out: GroupCells = {}
    for column in wanted:
        members = [s for s in board.scenarios if column.scenario in (s.label, s.group)]
        fn = ACROSS_RUNS.get(column.metric).fn
        for m in board.spec.models:
            plans = [by_cell.get((s.label, m)) for s in members]
            if not members or any(p is None or p.run_id not in published for p in plans):
                continue
            values: dict[str, list[float]] = {}
            for s, p in zip(members, plans, strict=True):
                assert p is not None
                for iid, value in _main_values(store, p.run_id, s.main_metric).items():
                    if value == value:  # a NaN is no score, as HELM leaves out a stat without a mean
                        values.setdefault(iid, []).append(value)
            if values:
                mean, low, high = mean_ci([fn(v) for _, v in sorted(values.items())])
                out[(m, column.key)] = (finite(mean), finite(low), finite(high))
    return out


def _main_values(store: Store, run_id: str, metric: str) -> dict[str, float]:
    """A run's per-instance values of one stat (its test split, else its only split), by instance id."""
    table = store.read_parquet(layout.run_file(run_id, "stats.parquet"))
    rows = [r for r in table.to_pylist() if r["name"] == metric]
    if any(r["split"] == "test" for r in rows):
        rows = [r for r in rows if r["split"] == "test"]
    return {r["instance_id"]: r["value"] for r in rows}


def _nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    counted = (~np.isnan(x)).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, np.nansum(x, axis=axis) / np.maximum(counted, 1), np.nan)


def _column_draws(store: Store, models: list[str], label: str, point: np.ndarray,
                  cells: dict[tuple[str, str], RunOutcome]) -> np.ndarray:
    """Resamples x models of one scenario column's score: the instances are resampled jointly across
    models (:func:`helmflow.stats.bootstrap_means`). A cell whose score is not the mean of its
    per-instance values (a pooled metric) keeps its score in every resample."""
    per_model: dict[int, dict[str, float]] = {}
    for k, m in enumerate(models):
        cell = cells.get((m, label))
        if cell is None or np.isnan(point[k]) or not cell.main_metric:
            continue
        values = compare.instance_values(store, cell.run_id, cell.main_metric)
        if values and abs(float(np.mean(list(values.values()))) - point[k]) <= 1e-9:
            per_model[k] = values
    ids = sorted({i for v in per_model.values() for i in v})
    if not ids:
        return np.tile(point, (BOOTSTRAP_SAMPLES, 1))
    at = {i: j for j, i in enumerate(ids)}
    matrix = np.full((len(models), len(ids)), np.nan)
    for k, values in per_model.items():
        for i, v in values.items():
            matrix[k, at[i]] = v
    draws = bootstrap_means(matrix)
    for k in range(len(models)):
        if k not in per_model:
            draws[:, k] = point[k]
    return draws


def add_rank_intervals(store: Store, board: BoardPlan, runs: list[RunOutcome], rows: list[dict[str, Any]]) -> None:
    """Each model's rank with its 95% interval, per scenario column and for the headline (the board's
    sort key: mean score, else mean win rate) and the mean win rate, from a bootstrap over
    instances resampled jointly across models; the headline's tied groups
    (:func:`helmflow.stats.tied_groups`). Adds :data:`HEADLINE_RANKS` and ``<label> rank…`` to ``rows``."""
    labels = [s.label for s in board.scenarios]
    models = [r["deployment"] for r in rows]
    by_id = {r.run_id: r for r in runs}
    cells = {(p.deployment.name, p.scenario.label): by_id[p.run_id] for p in board.runs if p.run_id in by_id}
    draws = {}
    for lab in labels:
        point = np.array([np.nan if r.get(lab) is None else float(r[lab]) for r in rows])
        draws[lab] = _column_draws(store, models, lab, point, cells)
        _put_ranks(rows, [f"{lab} {s}" for s in RANK_SUFFIXES], point, draws[lab])
    if not labels:
        return
    groups = board_groups(board)
    counted = headline_columns(labels, groups, board.headline_labels)
    if not counted:
        return
    ranked = ([_nanmean(np.stack([draws[lab] for lab in groups[g]], axis=2), axis=2) for g in counted]
              if groups else [draws[lab] for lab in counted])
    table = np.stack(ranked, axis=2)  # resamples x models x ranked columns
    aggregation = board.spec.aggregation
    headline = "mean_score" if "mean" in aggregation else "mean_win_rate"
    wins = win_rate_draws(table) if "win_rate" in aggregation else None
    stat = _nanmean(table, axis=2) if headline == "mean_score" else wins
    if stat is not None:
        point = np.array([np.nan if r.get(headline) is None else float(r[headline]) for r in rows])
        intervals = _put_ranks(rows, list(HEADLINE_RANKS[:3]), point, stat)
        for row in rows:
            row["tied_group"] = None
        for model, group in tied_groups(intervals).items():
            rows[models.index(model)]["tied_group"] = group
    if wins is not None:
        point = np.array([np.nan if r.get("mean_win_rate") is None else float(r["mean_win_rate"]) for r in rows])
        _put_ranks(rows, list(HEADLINE_RANKS[4:]), point, wins)


def _put_ranks(rows: list[dict[str, Any]], names: list[str], point: np.ndarray,
               draws: np.ndarray) -> dict[str, tuple[int | None, int | None, int | None]]:
    point_ranks, draw_ranks = ranks(point), ranks(draws)
    out = {}
    for k, row in enumerate(rows):
        out[row["deployment"]] = found = rank_interval(float(point_ranks[k]), draw_ranks[:, k])
        row.update(zip(names, found, strict=True))
    return out


def board_groups(board: BoardPlan) -> dict[str, list[str]]:
    """Leaderboard columns of a grouped board (group -> its entries' labels); empty for ungrouped boards."""
    if not (board.spec.aspects or any(s.group for s in board.scenarios)):
        return {}
    groups: dict[str, list[str]] = {}
    for s in board.scenarios:
        groups.setdefault(s.group or s.label, []).append(s.label)
    return groups


def headline_columns(labels: Sequence[str], groups: dict[str, list[str]], headline: Sequence[str] | None) -> list[str]:
    """The ranked columns (groups, else labels) the headline counts: those with an entry in ``headline``."""
    counted = set(labels if headline is None else headline)
    if not groups:
        return [lab for lab in labels if lab in counted]
    return [g for g, members in groups.items() if any(lab in counted for lab in members)]


def _group_mean(values: list[float | None]) -> float | None:
    """HELM's run-group cell: the unweighted mean of its runs' scores (missing runs left out)."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def leaderboard_rows(board: BoardPlan, runs: list[RunOutcome], metric_cells: GroupCells | None = None,
                     notes: GroupNotes | None = None) -> list[dict[str, Any]]:
    """One row per model of the board (:func:`rank`). Cells are joined by run id, never by label: a
    cached run's outcome carries the label it was first published under, and a board may relabel or
    reorder its scenarios. A model's perturbed runs count towards what it cost."""
    by_id = {r.run_id: r for r in runs}
    cells = {(p.deployment.name, p.scenario.label): by_id[p.run_id] for p in board.runs if p.run_id in by_id}
    perturbed: dict[str, list[RunOutcome]] = {}
    for p in board.runs:
        if p.scenario.perturbation and p.run_id in by_id:
            perturbed.setdefault(p.deployment.name, []).append(by_id[p.run_id])
    labels = [s.label for s in board.scenarios]
    rows = rank(board.spec.models, labels, cells, aggregation=board.spec.aggregation,
                groups=board_groups(board), aspects=board.spec.aspects, metric_groups=board.spec.metric_groups,
                headline=board.headline_labels,
                metric_cells=metric_cells, notes=notes, also_spent=perturbed)
    for row in rows:
        row.update(efficiency_columns(row, labels, cells, perturbed.get(row["deployment"], [])))
    return rows


def efficiency_columns(row: dict[str, Any], labels: Sequence[str], cells: dict[tuple[str, str], RunOutcome],
                       also_spent: Sequence[RunOutcome] = ()) -> dict[str, Any]:
    """A model's reasoning tokens (all, and per scored instance of its cells), its cost per correct answer
    (the cells' cost over their main metric's mean times instances, when every cell's score is in [0, 1]) and each
    cell's share of instances truncated while reasoning (None for a deployment without reasoning)."""
    m = row["deployment"]
    mine = [cells[(m, lab)] for lab in labels if (m, lab) in cells]
    instances = sum(c.instances or 0 for c in mine)
    # a main metric on another scale (a judge's 1-10) counts no correct answers
    correct = [c.correct for c in mine if c.correct is not None and 0.0 <= (c.score or 0.0) <= 1.0]
    out: dict[str, Any] = {
        "reasoning_tokens": sum(c.reasoning_tokens for c in [*mine, *also_spent]),
        "reasoning_tokens_per_instance": (sum(c.reasoning_tokens for c in mine) / instances if instances else None),
        "cost_per_correct_usd": (sum(c.cost_usd for c in mine) / sum(correct)
                                 if correct and len(correct) == len(mine) and sum(correct) > 0 else None),
    }
    for lab in labels:
        cell = cells.get((m, lab))
        out[f"{lab} truncated_in_reasoning"] = finite(cell.truncated_in_reasoning) if cell else None
    return out


def rank(models: Sequence[str], labels: Sequence[str], cells: dict[tuple[str, str], RunOutcome], *,
         aggregation: Sequence[str] = ("mean", "win_rate"), groups: dict[str, list[str]] | None = None,
         aspects: dict[str, list[str]] | None = None, metric_groups: Sequence[MetricGroup] = (),
         metric_cells: GroupCells | None = None, notes: GroupNotes | None = None,
         also_spent: dict[str, list[RunOutcome]] | None = None,
         headline: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The leaderboard's rows (``leaderboard_schema``), one per model, best first: each scenario's
    score and interval (``cells``: (model, label) -> its run), the mean score and mean win rate
    (``aggregation``), tokens and cost (with ``also_spent``: further runs per model, e.g. perturbed ones).

    A grouped board (VHELM) ranks its ``groups``, HELM's way: each group is the mean of its entries,
    the mean win rate is over groups, and each of ``aspects`` gets its own win rate. Each metric
    group (Safety's accuracy and safety groups, a board-wide metric's) shows its columns with their own mean win rate
    (``metric_cells``: the runs' summary values; ``notes``: why a cell has none, e.g. no logprobs for
    calibration); the headline stays the board's. ``headline``: the labels the mean score and mean win
    rate count (default all; a group counts when one of its entries does)."""
    groups, aspects, metric_cells = groups or {}, aspects or {}, metric_cells or {}
    table = {m: {lab: finite(cells[(m, lab)].score) if (m, lab) in cells else None for lab in labels} for m in models}
    ranked = {m: {g: _group_mean([table[m][lab] for lab in members]) for g, members in groups.items()}
              for m in models} if groups else table
    counted = headline_columns(labels, groups, headline)
    means = mean_scores({m: {c: ranked[m][c] for c in counted} for m in models}) if "mean" in aggregation else {}
    wins = win_rates({m: {c: ranked[m][c] for c in counted} for m in models}) if "win_rate" in aggregation else {}
    aspect_wins = {a: win_rates({m: {g: ranked[m].get(g) for g in members} for m in models})
                   for a, members in aspects.items()}
    group_wins = {
        g.name: win_rates({m: {c.key: metric_cells.get((m, c.key), (None,))[0] for c in g.columns
                               if c.lower_is_better is not None} for m in models},  # an unordered column: not ranked
                          {c.key for c in g.columns if c.lower_is_better})
        for g in metric_groups if "win_rate" in g.aggregation
    }
    group_means = {g.name: table_means(g, metric_cells, models) for g in metric_groups if "mean" in g.aggregation}
    columns = list(dict.fromkeys(c.key for g in metric_groups for c in g.columns))
    rows = []
    for m in models:
        row: dict[str, Any] = {"deployment": m, "mean_score": means.get(m), "mean_win_rate": wins.get(m)}
        for g in groups:
            row[f"group:{g}"] = ranked[m][g]
        for a, by_model in aspect_wins.items():
            row[f"aspect:{a}"] = by_model.get(m)
        for name, rates in group_wins.items():
            row[f"{name} mean_win_rate"] = rates.get(m)
        for name, by_model in group_means.items():
            row[f"{name} mean"] = by_model[m]
        for key in columns:
            row[key], row[f"{key} ci_low"], row[f"{key} ci_high"] = metric_cells.get((m, key), (None, None, None))
            row[f"{key} note"] = (notes or {}).get((m, key))
        mine = [cells[(m, lab)] for lab in labels if (m, lab) in cells]
        spent = mine + (also_spent or {}).get(m, [])
        for lab in labels:
            cell = cells.get((m, lab))
            row[lab] = table[m][lab]
            row[f"{lab} ci_low"] = finite(cell.ci_low) if cell else None
            row[f"{lab} ci_high"] = finite(cell.ci_high) if cell else None
        row["cost_usd"] = sum(c.cost_usd for c in spent)
        row["prompt_tokens"] = sum(c.prompt_tokens for c in spent)
        row["output_tokens"] = sum(c.output_tokens for c in spent)
        row["judge_cost_usd"] = sum(c.judge_cost_usd for c in spent)
        row["missing"] = len(labels) - len(mine)
        if any(c.ability is not None for c in cells.values()):  # an adaptive release
            for lab in labels:
                cell = cells.get((m, lab))
                row[f"{lab} ability"] = cell.ability if cell else None
                row[f"{lab} ability_se"] = cell.ability_se if cell else None
                row[f"{lab} full_score"] = cell.full_score if cell else None  # the full run's, when published
            found = [c.ability for c in mine if c.ability is not None]
            row["mean_ability"] = sum(found) / len(found) if found else None
        rows.append(row)
    key = "mean_score" if "mean" in aggregation else "mean_win_rate"
    rows.sort(key=lambda r: (r[key] is None, -(r[key] or 0.0), r["deployment"]))
    return rows


def table_means(group: MetricGroup, metric_cells: GroupCells, models: Sequence[str]) -> dict[str, float | None]:
    """HELM's ``mean`` aggregation of one table (``compute_aggregate_row_means``): per model, the mean of
    the columns it has a value in (missing cells left out), None when it has none."""
    out: dict[str, float | None] = {}
    for m in models:
        values = [v for c in group.columns if (v := metric_cells.get((m, c.key), (None,))[0]) is not None]
        out[m] = sum(values) / len(values) if values else None
    return out


def mean_groups(groups: Sequence[MetricGroup]) -> list[str]:
    """The tables that declare HELM's ``mean`` (a ``<name> mean`` column each)."""
    return [g.name for g in groups if "mean" in g.aggregation]


def labelled(board: BoardPlan, runs: list[RunOutcome]) -> list[RunOutcome]:
    """Each outcome under this board's label and deployment name for its run id (see leaderboard_rows)."""
    names = {p.run_id: (p.scenario.label, p.deployment.name) for p in board.runs}
    return [r.model_copy(update=dict(zip(("scenario", "deployment"), names.get(r.run_id, (r.scenario, r.deployment)))))
            for r in runs]


def publish_release(store: Store, board: BoardPlan, runs: list[RunOutcome], failed: list[FailedCell]) -> ReleaseOutcome:
    """Aggregate the runs into a release; the same run set reuses its existing release and writes nothing.

    Pointers are :func:`point_release`'s job, run after this one whether or not it was cached.
    """
    name = safe_key(board.spec.name)
    runs = labelled(board, runs)
    run_ids = sorted([r.run_id for r in runs])
    digest = versions.release_hash(board.board_version, run_ids)
    status: Literal["complete", "partial"] = "partial" if failed else "complete"
    notes: GroupNotes = {}
    rows = leaderboard_rows(board, runs,
                            group_cells(store, board, runs, notes) | perturbation_cells(store, board, runs)
                            | across_run_cells(store, board, runs) | runtime_cells(store, board, runs, notes), notes)
    add_rank_intervals(store, board, runs, rows)
    if (rid := existing_release(store, name, digest)) is not None:
        return ReleaseOutcome(release_id=rid, uri=store.url(layout.release_dir(name, rid)), status=status, wrote=False,
                              table=rows, subset=board.subset)
    now = datetime.now(UTC)
    labels = [s.label for s in board.scenarios]
    rid = release_id(digest, now)
    writer = ReleaseWriter(store, name, rid, parquet_meta(board=board.spec.name, board_version=board.board_version,
                                                          release_id=rid, created_at=now.isoformat(), status=status,
                                                          subset=board.subset))
    groups = board_groups(board)
    writer.leaderboard(rows, leaderboard_schema(labels, list(groups), list(board.spec.aspects),
                                                [g.name for g in board.spec.metric_groups], group_columns(board),
                                                mean_groups(board.spec.metric_groups),
                                                abilities=any(r.ability is not None for r in runs)))
    writer.runs(runs, failed)
    writer.commit(ReleaseManifest(
        board=board.spec.name,
        board_version=board.board_version,
        declared_version=board.spec.version,
        release_id=rid,
        created_at=now.isoformat(),
        helmflow_version=helmflow.__version__,
        git_commit=versions.git_commit(),
        status=status,
        subset=board.subset,
        selection=board.selection,
        unverified_data={s.label: s.unverified for s in board.scenarios if s.unverified},
        scenarios=labels,
        groups=groups,
        aspects=board.spec.aspects if groups else {},
        models=board.spec.models,
        run_ids=run_ids,
        failed=[FailedCellRecord(**f.model_dump()) for f in failed],
        judges=board.spec.judges,
        board_wide=board.spec.board_wide,
        content_warning=any(s.unsafe_text for s in board.scenarios),
        metric_groups=[MetricGroupRecord(**g.model_dump(mode="json")) for g in board.spec.metric_groups],
        model_metadata={r.deployment.name: facts for r in board.runs
                        if (facts := r.deployment.metadata.model_dump(mode="json", exclude_defaults=True))},
        cost_usd=sum(r.cost_usd for r in runs),
        judge_cost_usd=sum(r.judge_cost_usd for r in runs),
    ))
    return ReleaseOutcome(release_id=rid, uri=writer.uri, status=status, wrote=True, table=rows, subset=board.subset)


def point_release(store: Store, board: BoardPlan, release: ReleaseOutcome) -> ReleaseOutcome:
    """Move the board's pointer for this kind of release (full or subset, complete or partial) to it,
    unless it is there already. Runs after every publication, cached or not, so a kill between
    ``release.json`` and the pointer is finished by the next run."""
    info = ReleaseManifest.model_validate(
        store.read_json(layout.release_json(safe_key(board.spec.name), release.release_id)))
    moved = releases.point(store, safe_key(board.spec.name), info, release.uri)
    return release.model_copy(update={"pointer": moved})
