"""The board's tasks. Each wraps one plain function of :mod:`helmflow.pipeline`.

Cache keys are exactly design.md's table, so a rerun of an unchanged board recomputes nothing and
a new model, dataset revision or metric redoes only what it changes. Results are persisted as JSON
under ``<storage>/prefect-results/<cache key>`` (:mod:`helmflow.tasks.results`: never pickled, and
a record helmflow did not write is never decoded): a hit on one worker is a hit on every worker.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from prefect import Task, get_run_logger, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.assets import Asset, AssetProperties, materialize
from prefect.runtime import flow_run, task_run

from helmflow import aggregate, layout, pipeline
from helmflow.outcomes import FailedCell, PreparedScenario, RunOutcome
from helmflow.plan.records import BoardPlan, RunPlan, ScenarioPlan, cell_name
from helmflow.progress import reporter
from helmflow.query import board_run
from helmflow.stats import rank_text
from helmflow.storage import Store, safe_key
from helmflow.tasks.results import OutcomeJSON, OutcomeStorage, result_storage_for
from helmflow.versions import release_hash


def prepare_key(plan: ScenarioPlan) -> str:
    return layout.prepare_cache_key(plan.key, plan.scenario_version, plan.prompt_version)


def run_key(plan: RunPlan) -> str:
    return layout.run_cache_key(plan.run_id)


def release_key(board: BoardPlan, runs: list[RunOutcome]) -> str:
    return layout.release_cache_key(board.board_version, release_hash(board.board_version, [r.run_id for r in runs]))


@task(name="prepare", task_run_name="prepare {plan.label}", cache_key_fn=lambda ctx, p: prepare_key(p["plan"]),
      persist_result=True)
def prepare(plan: ScenarioPlan, storage: str) -> PreparedScenario:
    """Download the scenario's data at its pinned revision and adapt it into prompts."""
    return pipeline.prepare_scenario(Store(storage), plan)


# A run is a materialization: the flow names its concrete asset URIs per call (``with_assets``),
# so the event feed links each release to its runs and each run to its data.
@materialize("helmflow://run", name="run", cache_key_fn=lambda ctx, p: run_key(p["plan"]), persist_result=True,
             task_run_name="run {plan.scenario.label} x {plan.deployment.name}")
def run(plan: RunPlan, storage: str, prepared: PreparedScenario, board: str,
        budget_usd: float | None = None, board_run_id: str | None = None) -> RunOutcome:
    """Query → score → publish one board cell; each stage reuses a finished one of an earlier run.
    ``board_run_id``: the board's flow run (the cell runs in its scenario's subflow run)."""
    log = get_run_logger()
    log.info("%s: started", cell_name(plan))
    rep = reporter()
    board_run_id = board_run_id or (str(flow_run.id) if flow_run.id else None)
    shared = board_run(f"flow-run-{board_run_id}", budget_usd)  # one budget and one stop per board run
    lineage = {
        "flow_run_id": board_run_id,
        "publish_task_run_id": str(task_run.id) if task_run.id else None,
    }
    out = pipeline.evaluate_run(Store(storage), plan, prepared, rep.requests_done, shared, lineage, rep.add_requests)
    log.info("%s: finished, %s %s (%s, error rate %.1f%%): %s", cell_name(plan), out.main_metric, _fmt(out.score),
             out.status, 100 * out.error_rate, report_link(out.uri))
    create_markdown_artifact(key=run_artifact_key(board, plan), markdown=run_markdown(plan, out),
                             description=f"{board}: {cell_name(plan)}")
    return out


def run_artifact_key(board: str, plan: RunPlan) -> str:
    return artifact_key(f"{board}-{plan.scenario.label}-{plan.deployment.name}")


def run_markdown(plan: RunPlan, out: RunOutcome) -> str:
    versions = pipeline._version_fields(plan)
    return "\n".join([
        f"### {cell_name(plan)}",
        "",
        f"**{out.main_metric}: {_fmt(out.score)}** (95% CI {_fmt(out.ci_low)} to {_fmt(out.ci_high)})",
        f"status {out.status}, error rate {out.error_rate:.1%}, cost ${out.cost_usd:.4f}",
        "",
        "| version | hash |",
        "|---|---|",
        *[f"| {k} | `{v}` |" for k, v in versions.items()],
        "",
        f"Run files: [{out.uri}]({report_link(out.uri)})",
    ])


@materialize("helmflow://release", name="release", cache_key_fn=lambda ctx, p: release_key(p["board"], p["runs"]),
             persist_result=True, task_run_name="release {board.spec.name}")
def publish_release(board: BoardPlan, storage: str, runs: list[RunOutcome], failed: list[FailedCell]):
    return aggregate.publish_release(Store(storage), board, runs, failed)


def release_artifacts(board: BoardPlan, out: Any, failed: list[FailedCell]) -> None:
    """The release's artifacts, created by the flow itself (not its release task): the Prefect UI's
    Artifacts tab lists a flow run's own artifacts first, so the leaderboard opens the tab, above
    the per-cell cards; and a cached release still shows on the flow run that reused it."""
    name = artifact_key(board.spec.name)
    labels = [s.label for s in board.scenarios]
    groups = [(g.name, [c.key for c in g.columns]) for g in board.spec.metric_groups]
    table = leaderboard_table(out.table, labels, groups)
    create_table_artifact(
        key=f"{name}-leaderboard",
        table=table,
        description=f"{board.spec.name} release {out.release_id} ({out.status})"
                    + ("" if all(lab in table[0] for lab in labels) else
                       f"; its {len(labels)} runs' cells: the {name}-release artifact"),
    )
    lines = [f"# {board.spec.name} — release {out.release_id}", "", f"status: **{out.status}**, at `{out.uri}`", ""]
    lines += ["| model | mean score | " + " | ".join(labels) + " |", "|---" * (len(labels) + 2) + "|"]
    for row in out.table:
        lines.append(f"| {row['deployment']} | {_fmt(row['mean_score'])} | "
                     + " | ".join(_with_ci(row, lab) for lab in labels) + " |")
    if failed:
        lines += ["", "Missing cells:"] + [f"- {f.scenario} x {f.deployment}: {f.error}" for f in failed]
    create_markdown_artifact(key=f"{name}-release", markdown="\n".join(lines),
                             description=f"{board.spec.name} leaderboard release {out.release_id}, 95% intervals")
    link = release_link(board.spec.name, out.release_id, out.uri)
    create_link_artifact(key=f"{name}-release-link", link=link, link_text=f"{board.spec.name} {out.release_id}",
                         description=f"the {board.spec.name} release {out.release_id}: report page or files")


def report_line(board: str, release_id: str, uri: str, root: str) -> str:
    """Where a person reads the release's report, for the flow run's log."""
    from helmflow.settings import settings

    if settings().report_url:
        return f"report: {release_link(board, release_id, uri)}"
    return (f"report: `helmflow serve --storage {root}` shows it at /boards/{safe_key(board)}/{release_id}/; "
            f"`helmflow report {board} --release {release_id} --storage {root}` writes it to {uri}/report/")


def report_link(uri: str) -> str:
    """A clickable form of a storage URI: file:// for local paths; s3:// and https:// as they are."""
    return uri if "://" in uri else f"file://{uri}"


def release_link(board: str, release_id: str, uri: str) -> str:
    """Where a person reads the release: ``$HELMFLOW_REPORT_URL`` (a ``helmflow serve``) when set,
    else the release's files (an s3:// or https:// URL when the storage has one, else a file path)."""
    from helmflow.settings import settings

    base = (settings().report_url or "").rstrip("/")
    if base:
        return f"{base}/boards/{safe_key(board)}/{release_id}/"
    return report_link(uri)


def _with_ci(row: dict[str, Any], label: str) -> str:
    if row[label] is None:
        return "missing"
    return f"{_fmt(row[label])} [{_fmt(row[f'{label} ci_low'])}, {_fmt(row[f'{label} ci_high'])}]"


def _with_se(row: dict[str, Any], label: str) -> str:
    ability = row.get(f"{label} ability")
    if ability is None:
        return "missing"
    full = row.get(f"{label} full_score")  # the same cell's full-run score, when one was published
    return f"{_fmt(ability)} ± {_fmt(row.get(f'{label} ability_se'))}" + (f" (full run {_fmt(full)})"
                                                                          if full is not None else "")


MAX_RUN_COLUMNS = 12


def leaderboard_table(rows: list[dict[str, Any]], labels: list[str],
                      groups: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
    """The leaderboard as the Prefect UI's table artifact: one row per model, as few columns as read well.

    A board of many runs (HELM Lite: 28 per model) that declares its own columns (metric groups)
    reads by those columns and their win rates; every run's cell stays in the markdown artifact.
    A board ranked by win rate alone has no mean score, so it gets no empty column for one."""
    per_run = labels if len(labels) <= MAX_RUN_COLUMNS or not groups else []
    mean_score = not groups or any(row["mean_score"] is not None for row in rows)
    return [_table_row(row, per_run, groups, mean_score) for row in rows]


def _table_row(row: dict[str, Any], labels: list[str], groups: list[tuple[str, list[str]]],
               mean_score: bool) -> dict[str, Any]:
    """One model's row: its means, the given runs' cells with CIs, then each metric group's win rate
    and columns (``n/a`` where the metric cannot be computed for the model)."""
    out = {"deployment": row["deployment"]}
    if mean_score:
        out["mean score"] = _fmt(row["mean_score"])
    out["mean win rate"] = _fmt(row["mean_win_rate"])
    if row.get("rank") is not None:  # the headline's rank and its 95% interval
        out["rank (95%)"] = rank_text(row)
    out.update({label: _with_ci(row, label) for label in labels})
    if "mean_ability" in row:  # an adaptive release: each cell's Rasch ability and its standard error
        out["mean ability"] = _fmt(row["mean_ability"])
        out.update({f"{label} ability": _with_se(row, label) for label in labels})
    for group, keys in groups:
        out[f"{group} mean win rate"] = _fmt(row.get(f"{group} mean_win_rate"))
        out.update({key: _fmt(row[key]) if row.get(key) is not None
                    else "n/a" if row.get(f"{key} note") else "missing" for key in keys})
    return out


def _fmt(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def artifact_key(name: str) -> str:
    """Artifact keys allow lowercase letters, digits and dashes only (runs of others become one dash)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "board"


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class BoardTasks:
    prepare: Task
    run: Task
    publish_release: Task


def result_storage_block(root: str) -> OutcomeStorage:
    """Save (idempotently) the block that stores task results under ``<root>/prefect-results``.

    The block holds the root only: S3 credentials come from the environment, never from the block.
    The tasks get the saved instance, not its slug: Prefect loads a slug from the API again for
    every task run (13% of a 100-run cold board's samples, py-spy).
    """
    name = "helmflow-results-" + hashlib.sha256(root.encode()).hexdigest()[:12]
    block = result_storage_for(root)
    block.save(name, overwrite=True)
    return block


def configure(storage_root: str) -> BoardTasks:
    """The board's tasks with results persisted as JSON through :class:`OutcomeStorage` (never pickled)."""
    block = result_storage_block(storage_root)
    opts: dict[str, Any] = {"result_storage": block, "persist_result": True, "result_serializer": OutcomeJSON()}
    return BoardTasks(*(t.with_options(**opts) for t in (prepare, run, publish_release)))


def run_assets(store: Store, board: str, plan: RunPlan) -> dict[str, Any]:
    """What a run materializes (its commit marker, which lists its files) and what it was made from.
    Asset keys are URIs; their names say which board cell they are, so the event feed reads as lineage."""
    scenario = plan.scenario
    return {
        "assets": [_asset(store, layout.run_json(plan.run_id), f"{board}: {cell_name(plan)} run {plan.run_id}",
                          f"{scenario.main_metric} of {plan.deployment.name} on {scenario.label}")],
        "asset_deps": [
            _asset(store, layout.instances(scenario.key, scenario.scenario_version),
                   f"{scenario.label} instances {scenario.scenario_version}", f"{scenario.label}'s instances"),
            _asset(store, layout.dataset_manifest(scenario.key, scenario.dataset_revision),
                   f"{scenario.label} dataset {scenario.dataset_revision}", f"{scenario.name} at a pinned revision"),
        ],
    }


# A Prefect event relates at most 100 resources; a release names its board asset and its runs.
MAX_RELEASE_DEPS = 90


def release_assets(store: Store, board: BoardPlan, runs: list[RunOutcome]) -> dict[str, Any]:
    """The board's asset and, as upstream, its runs' ``run.json`` (the first ``MAX_RELEASE_DEPS``
    of a larger board: the complete list is ``runs.parquet`` and ``release.json``)."""
    name = board.spec.name
    return {
        "assets": [_asset(store, layout.board_dir(safe_key(name)), f"{name} leaderboard",
                          f"releases of the {name} board")],
        "asset_deps": [
            _asset(store, layout.run_json(r.run_id), f"{name}: {r.scenario} x {r.deployment} run {r.run_id}",
                   f"{r.main_metric} of {r.deployment} on {r.scenario}")
            for r in runs[:MAX_RELEASE_DEPS]
        ],
    }


def _asset(store: Store, key: str, name: str, description: str) -> Asset:
    uri = store.asset_uri(key)
    return Asset(key=uri, properties=AssetProperties(name=name, description=description,
                                                     url=report_link(store.url(key))))


def forget_cached(store: Store, keys: list[str]) -> None:
    """Drop persisted results so the next run re-executes these tasks (errors are never cached)."""
    for key in keys:
        store.delete(layout.result(key))
