"""The board's tasks. Each wraps one plain function of :mod:`helmflow.pipeline`.

Cache keys are exactly design.md's table, so a rerun of an unchanged board recomputes nothing and
a new model, dataset revision or metric redoes only what it changes. Results are persisted as JSON
under ``<storage>/prefect-results/<cache key>`` (:mod:`helmflow.tasks.results`: never pickled, and
a record helmflow did not write is never decoded): a hit on one worker is a hit on every worker.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from prefect import Task, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.assets import materialize
from prefect.runtime import flow_run, task_run

from helmflow import layout, pipeline
from helmflow.board import BoardPlan, RunPlan, ScenarioPlan
from helmflow.pipeline import FailedCell, PromptSet, QueryOutcome, RunOutcome, ScenarioData, ScoreOutcome
from helmflow.progress import reporter
from helmflow.query import board_run
from helmflow.storage import Store, safe_key
from helmflow.tasks.results import OutcomeJSON, OutcomeStorage, result_storage_for
from helmflow.versions import release_hash


def download_key(plan: ScenarioPlan) -> str:
    return layout.download_cache_key(plan.key, plan.scenario_version)


def adapt_key(plan: ScenarioPlan) -> str:
    return layout.adapt_cache_key(plan.key, plan.scenario_version, plan.prompt_version)


def query_key(plan: RunPlan) -> str:
    return layout.query_cache_key(plan.query_key)


def score_key(plan: RunPlan) -> str:
    return layout.score_cache_key(plan.score_key)


def publish_key(plan: RunPlan) -> str:
    return layout.publish_cache_key(plan.run_id)


def release_key(board: BoardPlan, runs: list[RunOutcome]) -> str:
    return layout.release_cache_key(board.board_version, release_hash(board.board_version, [r.run_id for r in runs]))


@task(name="download", cache_key_fn=lambda ctx, p: download_key(p["plan"]), persist_result=True)
def download(plan: ScenarioPlan, storage: str) -> ScenarioData:
    return pipeline.download_scenario(Store(storage), plan)


@task(name="adapt", cache_key_fn=lambda ctx, p: adapt_key(p["plan"]), persist_result=True)
def adapt(plan: ScenarioPlan, storage: str, data: ScenarioData) -> PromptSet:
    return pipeline.adapt_scenario(Store(storage), plan, data)


@task(name="query", cache_key_fn=lambda ctx, p: query_key(p["plan"]), persist_result=True,
      task_run_name="query {plan.scenario.label} x {plan.deployment.name}")
def query(plan: RunPlan, storage: str, prompts: PromptSet, budget_usd: float | None = None) -> QueryOutcome:
    rep = reporter()
    rep.add_requests(prompts.num_prompts * plan.scenario.adapter.generation.num_outputs)
    shared = board_run(f"flow-run-{flow_run.id}", budget_usd)  # one budget and one stop per deployment
    out = pipeline.query_pair(Store(storage), plan, prompts, rep.requests_done, shared)
    return out.model_copy(update={"task_run_id": str(task_run.id)})


@task(name="score", cache_key_fn=lambda ctx, p: score_key(p["plan"]), persist_result=True,
      task_run_name="score {plan.scenario.label} x {plan.deployment.name}")
def score(plan: RunPlan, storage: str, data: ScenarioData, queried: QueryOutcome,
          budget_usd: float | None = None) -> ScoreOutcome:
    shared = board_run(f"flow-run-{flow_run.id}", budget_usd)  # judge requests share the board run's budget
    out = pipeline.score_pair(Store(storage), plan, data, queried, shared)
    return out.model_copy(update={"task_run_id": str(task_run.id)})


# Publishing tasks are materializations: the flow names the concrete asset URIs per call
# (``with_assets``), so the event feed links each release to its runs and each run to its data.
@materialize("helmflow://run", name="publish-run", cache_key_fn=lambda ctx, p: publish_key(p["plan"]),
             persist_result=True, task_run_name="publish {plan.scenario.label} x {plan.deployment.name}")
def publish_run(plan: RunPlan, storage: str, queried: QueryOutcome, scored: ScoreOutcome) -> RunOutcome:
    lineage = {
        "flow_run_id": str(flow_run.id) if flow_run.id else None,
        "publish_task_run_id": str(task_run.id) if task_run.id else None,
        "query_task_run_id": queried.task_run_id,
        "score_task_run_id": scored.task_run_id,
    }
    out = pipeline.publish_run(Store(storage), plan, queried, scored, lineage)
    create_markdown_artifact(
        key=f"{plan.run_id}-summary",
        markdown=(
            f"### {plan.scenario.label} x {plan.deployment.name}\n\n"
            f"{out.main_metric}: **{_fmt(out.score)}** (95% CI {_fmt(out.ci_low)} to {_fmt(out.ci_high)}), "
            f"status {out.status}\n\nFiles: `{out.uri}`"
        ),
        description=f"run {plan.run_id}",
    )
    return out


@materialize("helmflow://release", name="publish-release",
             cache_key_fn=lambda ctx, p: release_key(p["board"], p["runs"]), persist_result=True)
def publish_release(board: BoardPlan, storage: str, runs: list[RunOutcome], failed: list[FailedCell]):
    out = pipeline.publish_release(Store(storage), board, runs, failed)
    labels = [s.label for s in board.scenarios]
    create_table_artifact(
        key=f"{_artifact_key(board.spec.name)}-leaderboard",
        table=[{k: (_fmt(v) if isinstance(v, float) else v) for k, v in row.items() if " ci_" not in k} for row in out.table],
        description=f"{board.spec.name} release {out.release_id} ({out.status})",
    )
    lines = [f"# {board.spec.name} — release {out.release_id}", "", f"status: **{out.status}**, at `{out.uri}`", ""]
    lines += ["| model | mean score | " + " | ".join(labels) + " |", "|---" * (len(labels) + 2) + "|"]
    for row in out.table:
        lines.append(f"| {row['deployment']} | {_fmt(row['mean_score'])} | " + " | ".join(_fmt(row[lab]) for lab in labels) + " |")
    if failed:
        lines += ["", "Missing cells:"] + [f"- {f.scenario} x {f.deployment}: {f.error}" for f in failed]
    create_markdown_artifact(
        key=f"{_artifact_key(board.spec.name)}-release", markdown="\n".join(lines), description="leaderboard release"
    )
    create_link_artifact(
        key=f"{_artifact_key(board.spec.name)}-release-link", link=out.uri, link_text=f"{board.spec.name} {out.release_id}",
        description="where the release's Parquet files are",
    )
    return out


def _fmt(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _artifact_key(name: str) -> str:
    """Artifact keys allow lowercase letters, digits and dashes only."""
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-") or "board"


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class BoardTasks:
    download: Task
    adapt: Task
    query: Task
    score: Task
    publish_run: Task
    publish_release: Task


def result_storage_block(root: str) -> str:
    """Save (idempotently) the block that stores task results under ``<root>/prefect-results``.

    The block holds the root only: S3 credentials come from the environment, never from the block.
    """
    name = "helmflow-results-" + hashlib.sha256(root.encode()).hexdigest()[:12]
    result_storage_for(root).save(name, overwrite=True)
    return f"{OutcomeStorage.get_block_type_slug()}/{name}"


def configure(storage_root: str) -> BoardTasks:
    """The board's tasks with results persisted as JSON through :class:`OutcomeStorage` (never pickled)."""
    slug = result_storage_block(storage_root)
    opts: dict[str, Any] = {"result_storage": slug, "persist_result": True, "result_serializer": OutcomeJSON()}
    return BoardTasks(*(t.with_options(**opts) for t in (download, adapt, query, score, publish_run, publish_release)))


def run_assets(store: Store, plan: RunPlan) -> dict[str, list[str]]:
    """What publishing a run materializes (its commit marker, which lists its files) and what it
    was made from. Asset keys are URIs."""
    return {
        "assets": [store.asset_uri(layout.run_json(plan.run_id))],
        "asset_deps": [
            store.asset_uri(layout.instances(plan.scenario.key, plan.scenario.scenario_version)),
            store.asset_uri(layout.dataset_manifest(plan.scenario.key, plan.scenario.dataset_revision)),
        ],
    }


# A Prefect event relates at most 100 resources; a release names its board asset and its runs.
MAX_RELEASE_DEPS = 90


def release_assets(store: Store, board: BoardPlan, runs: list[RunOutcome]) -> dict[str, list[str]]:
    """The board's asset and, as upstream, its runs' ``run.json`` (the first ``MAX_RELEASE_DEPS``
    of a larger board: the complete list is ``runs.parquet`` and ``release.json``)."""
    return {
        "assets": [store.asset_uri(layout.board_dir(safe_key(board.spec.name)))],
        "asset_deps": [store.asset_uri(layout.run_json(r.run_id)) for r in runs[:MAX_RELEASE_DEPS]],
    }


def forget_cached(store: Store, keys: list[str]) -> None:
    """Drop persisted results so the next run re-executes these tasks (errors are never cached)."""
    for key in keys:
        store.delete(layout.result(key))
