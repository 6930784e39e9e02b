"""The board's stages as plain functions: download, adapt, query, score, publish run, publish release.

Prefect tasks in ``tasks/`` wrap them in two units per board cell: :func:`prepare_scenario`
(download + adapt, one per scenario) and :func:`evaluate_run` (query → score → publish, one per
scenario × deployment), plus the release. Everything here runs and tests without Prefect.
Each stage returns a small outcome (keys, counts, versions); the Parquet files are the data.
Intermediate files live under ``work/<cache key>/`` so a cached task's outcome always points at
files that exist; ``runs/<run_id>/`` is written by publish only, ``run.json`` last.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

import helmflow
from helmflow import layout, releases, versions
from helmflow.adapters import adapt
from helmflow.board import BoardPlan, RunPlan, ScenarioPlan
from helmflow.datasets import mirror_sources, read_instances, store_instances, write_instances
from helmflow.integrity import CorruptFile, read_manifest, sha256_hex, verify_files
from helmflow.judges import annotate
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.query import BoardRun, QueryFailed, run_queries
from helmflow.request_builder import build_requests
from helmflow.records import (
    ANNOTATION_SCHEMA,
    COMPLETION_SCHEMA,
    PROMPT_SCHEMA,
    REFERENCE_SCHEMA,
    REQUEST_SCHEMA,
    RUN_ID_FIELDS,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    Completion,
    MetricSummary,
    models_to_table,
    prompt_from_row,
    prompt_to_row,
    request_from_row,
    request_to_row,
    to_table,
)
from helmflow.scoring import score_instances, summarize
from helmflow.settings import settings
from helmflow.stats import mean_ci, mean_scores, win_rates
from helmflow.storage import Store, encode_parquet, safe_key


class Outcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def stored(self) -> list[str]:
        """The storage keys (or URLs under the root) this outcome points at. A cached outcome whose
        files are gone (a cleanup of ``work/``, a lifecycle rule) is a cache miss, not a failure."""
        return []


class ScenarioData(Outcome):
    instances_key: str
    files: dict[str, str]

    def stored(self) -> list[str]:
        return [self.instances_key, *self.files.values()]


class PromptSet(Outcome):
    prompts_key: str
    num_prompts: int

    def stored(self) -> list[str]:
        return [self.prompts_key]


class QueryOutcome(Outcome):
    query_key: str
    requests_key: str
    completions_key: str
    num_requests: int
    sent: int
    reused: int
    errors: int
    task_run_id: str | None = None

    def stored(self) -> list[str]:
        return [self.requests_key, self.completions_key]


class PreparedScenario(Outcome):
    data: ScenarioData
    prompts: PromptSet

    def stored(self) -> list[str]:
        return [*self.data.stored(), *self.prompts.stored()]


class ScoreOutcome(Outcome):
    score_key: str
    stats_key: str
    summary_key: str
    main_metric: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    task_run_id: str | None = None
    # judging (judge-backed scenarios with a jury): annotations.parquet and what it cost
    annotations_key: str | None = None
    judge_sent: int = 0
    judge_reused: int = 0
    judge_errors: int = 0  # failed judge requests: re-sent on the next run, so the run is not cached
    judge_parse_errors: int = 0  # judge answers that did not parse: per-instance annotation errors
    judge_cost_usd: float = 0.0
    judge_prompt_tokens: int = 0
    judge_output_tokens: int = 0

    def stored(self) -> list[str]:
        return [self.stats_key, self.summary_key, *([self.annotations_key] if self.annotations_key else [])]


class RunOutcome(Outcome):
    run_id: str
    scenario: str
    deployment: str
    status: Literal["complete", "errors"]
    uri: str
    main_metric: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    error_rate: float
    cost_usd: float
    prompt_tokens: int
    output_tokens: int
    judge_cost_usd: float = 0.0
    wrote: bool = True

    def stored(self) -> list[str]:
        return [layout.run_file(self.run_id, name) for name in (*RUN_FILES, layout.RUN_JSON)]


class FailedCell(Outcome):
    run_id: str
    scenario: str
    deployment: str
    error: str


class ReleaseOutcome(Outcome):
    release_id: str
    uri: str
    status: Literal["complete", "partial"]
    wrote: bool
    subset: bool = False  # a narrower run than the board's (see BoardPlan.selection)
    pointer: str | None = None  # the pointer this publication moved (None: already in place)
    table: list[dict[str, Any]] = Field(default_factory=list)

    def stored(self) -> list[str]:
        return [f"{self.uri}/{name}" for name in ("leaderboard.parquet", "runs.parquet", layout.RELEASE_JSON)]


def _meta(**kv: Any) -> dict[str, str]:
    base = {"helmflow.version": helmflow.__version__}
    base.update({f"helmflow.{k}": v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in kv.items()})
    return base


# --------------------------------------------------------------------------- download / adapt
def download_scenario(store: Store, plan: ScenarioPlan) -> ScenarioData:
    """The scenario's instances file; a perturbed plan's is written from its original's (downloaded first)."""
    if plan.perturbation is not None:
        return perturb_scenario(store, plan)
    files = mirror_sources(store, plan)
    key = layout.instances(plan.key, plan.scenario_version)
    if not store.exists(key):
        key = write_instances(store, plan, files)
    return ScenarioData(instances_key=key, files=files)


def perturb_scenario(store: Store, plan: ScenarioPlan) -> ScenarioData:
    """A perturbed plan's instances (:func:`helmflow.perturbations.perturb_evaluated`), written from its
    original's instances file (downloaded first) under its own scenario_version."""
    from helmflow.perturbations import perturb_evaluated

    assert plan.perturbation is not None
    original = plan.model_copy(update={"scenario_version": plan.perturbation.scenario_version, "perturbation": None})
    data = download_scenario(store, original)
    key = layout.instances(plan.key, plan.scenario_version)
    if not store.exists(key):
        instances = read_instances(store, data.instances_key)
        key = store_instances(store, plan, perturb_evaluated(plan.perturbation.name, instances, plan.adapter.sample))
    return ScenarioData(instances_key=key, files=data.files)


def preflight(store: Store, board: BoardPlan) -> None:
    """The download stage of every scenario, before any task: data a run cannot use (unreadable,
    malformed, empty, duplicate ids, rows the metrics refuse) is bad input, found before a model is
    queried. Idempotent: what is stored and verified is not fetched or loaded again, so the download
    tasks that follow, and the next run's pre-flight, find it in place."""
    for scenario in board.all_scenarios:
        download_scenario(store, scenario)


def prompts_key(plan: ScenarioPlan) -> str:
    return layout.prompts(plan.key, plan.scenario_version, plan.prompt_version)


def adapt_scenario(store: Store, plan: ScenarioPlan, data: ScenarioData) -> PromptSet:
    prompts = adapt(plan.adapter, read_instances(store, data.instances_key))
    key = prompts_key(plan)
    store.write_parquet(
        key,
        to_table([prompt_to_row(p) for p in prompts], PROMPT_SCHEMA),
        _meta(scenario_version=plan.scenario_version, prompt_version=plan.prompt_version, adapter=plan.adapter.model_dump()),
    )
    return PromptSet(prompts_key=key, num_prompts=len(prompts))


def prepare_scenario(store: Store, plan: ScenarioPlan) -> PreparedScenario:
    """Download (a no-op when the instances exist) and adapt: the per-scenario half of a board."""
    data = download_scenario(store, plan)
    return PreparedScenario(data=data, prompts=adapt_scenario(store, plan, data))


# --------------------------------------------------------------------------- query
def query_pair(
    store: Store, plan: RunPlan, prompt_set: PromptSet, progress: Callable[[int], None] | None = None,
    shared: BoardRun | None = None,
) -> QueryOutcome:
    prompts = [prompt_from_row(r) for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]
    requests = build_requests(prompts, plan.scenario.adapter, plan.deployment, store)
    result = run_queries(store, plan.deployment, requests, progress, shared)
    base = layout.query_dir(plan.query_key)
    meta = _meta(query_key=plan.query_key, deployment=plan.deployment.name, model_version=plan.model_version)
    store.write_parquet(f"{base}/requests.parquet", to_table([request_to_row(r) for r in requests], REQUEST_SCHEMA), meta)
    store.write_parquet(f"{base}/completions.parquet", models_to_table(result.completions, COMPLETION_SCHEMA), meta)
    where = f"{plan.scenario.label} x {plan.deployment.name}"
    if result.permanent_error:
        raise QueryFailed(f"{where}: {result.permanent_error}")
    if requests and result.errors / len(requests) > plan.deployment.max_error_rate:
        raise QueryFailed(
            f"{where}: {result.errors} of {len(requests)} requests failed (max_error_rate "
            f"{plan.deployment.max_error_rate:g}); first errors: {'; '.join(result.error_messages[:3])}"
        )
    return QueryOutcome(
        query_key=plan.query_key,
        requests_key=f"{base}/requests.parquet",
        completions_key=f"{base}/completions.parquet",
        num_requests=len(requests),
        sent=result.sent,
        reused=result.reused,
        errors=result.errors,
    )


# --------------------------------------------------------------------------- score
def score_pair(
    store: Store, plan: RunPlan, data: ScenarioData, query: QueryOutcome, shared: BoardRun | None = None
) -> ScoreOutcome:
    """Judge (when the run has a jury), then score. Judge requests go through the query path (limiter,
    retries, journal, the board run's budget), so scoring again re-sends nothing already judged."""
    requests = [request_from_row(r) for r in store.read_parquet(query.requests_key).to_pylist()]
    instances = read_instances(store, data.instances_key, {r.instance_id for r in requests})
    completions = [Completion.model_validate(r) for r in store.read_parquet(query.completions_key).to_pylist()]
    judged = None
    if plan.judges:
        judged = annotate(store, plan.judges, list(plan.judge_templates), instances, requests, completions, shared,
                          plan.judge_texts)
    if plan.scorer and plan.scorer_template:  # the toxicity scorer: its scores are annotations too
        scored = annotate(store, [plan.scorer], [plan.scorer_template], instances, requests, completions, shared,
                          plan.judge_texts)
        judged = scored if judged is None else judged.merged(scored)
    notes = judged.annotations if judged else None
    stats = score_instances(instances, requests, completions, plan.scenario.adapter, plan.scenario.metrics, notes)
    summary = summarize(stats)
    base = layout.score_dir(plan.score_key)
    meta = _meta(score_key=plan.score_key, metric_version=plan.metric_version, metric_versions=plan.metric_versions,
                 judges=[j.name for j in plan.judges], judge_templates=plan.judge_templates,
                 toxicity_scorer=plan.scorer.name if plan.scorer else "")
    store.write_parquet(f"{base}/stats.parquet", models_to_table(stats, STAT_SCHEMA), meta)
    store.write_parquet(f"{base}/summary.parquet", models_to_table(summary, SUMMARY_SCHEMA), meta)
    judging: dict[str, Any] = {}
    if judged is not None:
        store.write_parquet(f"{base}/annotations.parquet", models_to_table(judged.annotations, ANNOTATION_SCHEMA), meta,
                            row_group_size=RUN_ROW_GROUP_ROWS)
        judging = {
            "annotations_key": f"{base}/annotations.parquet",
            "judge_sent": judged.sent,
            "judge_reused": judged.reused,
            "judge_errors": judged.request_errors,
            "judge_parse_errors": judged.parse_errors,
            "judge_cost_usd": judged.cost_usd,
            "judge_prompt_tokens": sum(a.prompt_tokens for a in judged.annotations),
            "judge_output_tokens": sum(a.output_tokens for a in judged.annotations),
        }
    main = main_summary(summary, plan.scenario.main_metric)
    return ScoreOutcome(
        **judging,
        score_key=plan.score_key,
        stats_key=f"{base}/stats.parquet",
        summary_key=f"{base}/summary.parquet",
        main_metric=plan.scenario.main_metric,
        score=main.mean if main else None,
        ci_low=main.ci_low if main else None,
        ci_high=main.ci_high if main else None,
    )


def main_summary(summary: list[MetricSummary], name: str) -> MetricSummary | None:
    rows = [s for s in summary if s.name == name]
    return next((s for s in rows if s.split == "test"), rows[0] if rows else None)


# --------------------------------------------------------------------------- one run: query → score → publish
def query_stage(store: Store, plan: RunPlan, prompts: PromptSet, progress: Callable[[int], None] | None = None,
                shared: BoardRun | None = None, task_run_id: str | None = None,
                on_start: Callable[[int], None] | None = None) -> QueryOutcome:
    """The pair's query, or the finished one already under ``work/query/<query_key>/``.

    The marker is written only for an error-free query, so a metric change re-scores without
    re-querying while errored requests are always re-sent (below it, the journal holds every success)."""
    marker = layout.stage_marker(layout.query_dir(plan.query_key))
    if store.exists(marker):
        return QueryOutcome.model_validate(store.read_json(marker))
    if on_start:
        on_start(prompts.num_prompts * plan.scenario.adapter.generation.num_outputs)
    out = query_pair(store, plan, prompts, progress, shared).model_copy(update={"task_run_id": task_run_id})
    if not out.errors:
        store.write_json(marker, out.model_dump(mode="json"))
    return out


def score_stage(store: Store, plan: RunPlan, data: ScenarioData, query: QueryOutcome, shared: BoardRun | None = None,
                task_run_id: str | None = None) -> ScoreOutcome:
    """The pair's scores, or the finished ones under ``work/score/<score_key>/`` (not after judge errors)."""
    marker = layout.stage_marker(layout.score_dir(plan.score_key))
    if not query.errors and store.exists(marker):
        return ScoreOutcome.model_validate(store.read_json(marker))
    out = score_pair(store, plan, data, query, shared).model_copy(update={"task_run_id": task_run_id})
    if not query.errors and not out.judge_errors:
        store.write_json(marker, out.model_dump(mode="json"))
    return out


def evaluate_run(store: Store, plan: RunPlan, prepared: PreparedScenario, progress: Callable[[int], None] | None = None,
                 shared: BoardRun | None = None, lineage: dict[str, Any] | None = None,
                 on_start: Callable[[int], None] | None = None) -> RunOutcome:
    """One board cell end to end. ``lineage`` names the Prefect flow and task run doing it; the
    query and score task-run ids in ``run.json`` are those of whoever actually queried and scored."""
    task_run_id = (lineage or {}).get("publish_task_run_id")
    query = query_stage(store, plan, prepared.prompts, progress, shared, task_run_id, on_start)
    score = score_stage(store, plan, prepared.data, query, shared, task_run_id)
    return publish_run(store, plan, query, score, {
        **(lineage or {}), "query_task_run_id": query.task_run_id, "score_task_run_id": score.task_run_id,
    })


# --------------------------------------------------------------------------- publish a run
RUN_FILES = ("requests.parquet", "completions.parquet", "stats.parquet", "summary.parquet")
ANNOTATIONS_FILE = "annotations.parquet"  # judged runs only: one row per (completion, judge)
# The gold answers (layout.RUN_REFERENCES) are not in RUN_FILES: runs published before they existed
# stay complete without them (their references are in the scenario's instances file).
RUN_ROW_GROUP_ROWS = 1000  # the web report decodes one row group (1,000 requests, ten of its 100-row pages) per page


def publish_run(
    store: Store, plan: RunPlan, query: QueryOutcome, score: ScoreOutcome, lineage: dict[str, Any] | None = None
) -> RunOutcome:
    """Copy the run's files into ``runs/<run_id>/`` and write ``run.json`` last (the commit marker)."""
    prefix = layout.run_dir(plan.run_id)
    completions = store.read_parquet(query.completions_key, columns=["prompt_tokens", "output_tokens", "cost_usd"])
    cost = float(pc.sum(completions["cost_usd"]).as_py() or 0.0)
    prompt_tokens = int(pc.sum(completions["prompt_tokens"]).as_py() or 0)
    output_tokens = int(pc.sum(completions["output_tokens"]).as_py() or 0)
    status: Literal["complete", "errors"] = "errors" if query.errors or score.judge_errors else "complete"
    outcome = RunOutcome(
        run_id=plan.run_id,
        scenario=plan.scenario.label,
        deployment=plan.deployment.name,
        status=status,
        uri=store.url(prefix),
        main_metric=score.main_metric,
        score=score.score,
        ci_low=score.ci_low,
        ci_high=score.ci_high,
        error_rate=query.errors / query.num_requests if query.num_requests else 0.0,
        cost_usd=cost,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        judge_cost_usd=score.judge_cost_usd,
    )
    marker = layout.run_json(plan.run_id)
    if status == "complete" and _published_intact(store, plan.run_id):
        return outcome.model_copy(update={"wrote": False})  # already published, intact: rewrite nothing
    meta = _meta(**_version_fields(plan))
    ids = {"run_id": plan.run_id, "model": plan.deployment.name, "scenario": plan.scenario.label}
    digests: dict[str, str] = {}

    def put(name: str, table: pa.Table, paged: bool) -> None:  # paged: one row per request, read a page at a time
        data = encode_parquet(with_run_ids(table, ids), meta, RUN_ROW_GROUP_ROWS if paged else None)
        store.write_bytes(layout.run_file(plan.run_id, name), data)
        digests[name] = sha256_hex(data)

    requests = store.read_parquet(query.requests_key)
    for name, src in zip(RUN_FILES, (query.requests_key, query.completions_key, score.stats_key, score.summary_key)):
        put(name, requests if name == "requests.parquet" else store.read_parquet(src),
            name in ("requests.parquet", "completions.parquet"))
    put(layout.RUN_REFERENCES, references_table(store, layout.instances(plan.scenario.key, plan.scenario.scenario_version),
                                          set(requests["instance_id"].to_pylist())), False)
    files = [*RUN_FILES, layout.RUN_REFERENCES]
    if score.annotations_key:
        put(ANNOTATIONS_FILE, store.read_parquet(score.annotations_key), True)
        files.append(ANNOTATIONS_FILE)
    run_json = RunManifest.model_validate({
        "run_id": plan.run_id,
        "status": status,
        "scenario": {"name": plan.scenario.name, "label": plan.scenario.label, "params": plan.scenario.params},
        "deployment": plan.deployment.model_dump(mode="json", include={"name", "client", "model", "revision", "tokenizer", "context_window"}),
        "adapter": plan.scenario.adapter.model_dump(mode="json"),
        "metrics": plan.metric_versions,
        "main_metric": score.main_metric,
        "score": _finite(score.score),
        "ci": [_finite(score.ci_low), _finite(score.ci_high)],
        "counts": {"requests": query.num_requests, "sent": query.sent, "reused": query.reused, "errors": query.errors},
        "error_rate": outcome.error_rate,
        "cost_usd": cost,
        "tokens": {"prompt": prompt_tokens, "output": output_tokens},
        "judge_cost_usd": score.judge_cost_usd,
        "judges": {
            "deployments": [j.model_dump(mode="json", include={"name", "client", "model", "revision"}) for j in plan.judges],
            "templates": plan.judge_templates,
            "toxicity_scorer": (plan.scorer.model_dump(mode="json", include={"name", "client", "model", "revision"})
                                | {"template": plan.scorer_template}) if plan.scorer else None,
            "sent": score.judge_sent,
            "reused": score.judge_reused,
            "request_errors": score.judge_errors,
            "parse_errors": score.judge_parse_errors,
            "tokens": {"prompt": score.judge_prompt_tokens, "output": score.judge_output_tokens},
        },
        "versions": _version_fields(plan),
        "dataset": {"revision": plan.scenario.dataset_revision, "checksums": plan.scenario.checksums,
                    "unverified": plan.scenario.unverified},
        "lineage": {
            "helmflow_version": helmflow.__version__,
            "git_commit": versions.git_commit(),
            "query_key": plan.query_key,
            "score_key": plan.score_key,
            "published_at": datetime.now(UTC).isoformat(),
            **(lineage or {}),
        },
        "files": [layout.run_file(plan.run_id, n) for n in files],
        "sha256": digests,
    })
    store.write_json(marker, run_json.to_json())
    return outcome


def with_run_ids(table: pa.Table, ids: dict[str, str]) -> pa.Table:
    """``table`` with the run's id, model and scenario as its first columns (``records.RUN_ID_FIELDS``):
    a reader of ``runs/*/<file>`` across runs (pyarrow.dataset, duckdb) needs no join to know whose row it is.
    A table that has them already (republishing) keeps them."""
    for i, (name, type_) in enumerate(RUN_ID_FIELDS):
        if name not in table.column_names:
            table = table.add_column(i, pa.field(name, type_), pa.array([ids[name]] * table.num_rows, type_))
    return table


def references_table(store: Store, instances_key: str, instance_ids: set[str]) -> pa.Table:
    """The references of ``instance_ids`` in the scenario's instances file, one row per reference
    (the run-id columns are added by the caller)."""
    table = store.read_parquet(instances_key, columns=["id", "split", "references"])
    table = table.filter(pc.is_in(table["id"], value_set=pa.array(sorted(instance_ids), pa.string())))
    rows = [{"instance_id": row["id"], "split": row["split"], "reference_index": k, "text": ref["text"],
             "correct": ref["correct"]}
            for row in table.to_pylist() for k, ref in enumerate(row["references"] or [])]
    fields = [f for f in REFERENCE_SCHEMA if f.name not in dict(RUN_ID_FIELDS)]
    return to_table(rows, pa.schema(fields))


def publication_problem(store: Store, run_id: str) -> str | None:
    """What is wrong with a complete publication in ``runs/<run_id>/`` (a file whose sha256 moved,
    an unreadable run.json), else None (also when there is none). The next run republishes such a
    run instead of trusting it."""
    marker = layout.run_json(run_id)
    if not store.exists(marker):
        return None
    try:
        info = read_manifest(store, marker)
        if info.get("status") == "complete":
            verify_files(store, layout.run_dir(run_id), RunManifest.model_validate(info).sha256)
    except CorruptFile as exc:
        return str(exc)
    except ValueError as exc:  # run.json parses but is not a run manifest
        return f"{store.url(marker)} is corrupt: {exc}"
    return None


def _published_intact(store: Store, run_id: str) -> bool:
    marker = layout.run_json(run_id)
    if not store.exists(marker) or publication_problem(store, run_id) is not None:
        return False
    return RunManifest.model_validate(store.read_json(marker)).status == "complete"


def _version_fields(plan: RunPlan) -> dict[str, str]:
    return {
        "scenario_version": plan.scenario.scenario_version,
        "prompt_version": plan.scenario.prompt_version,
        "model_version": plan.model_version,
        "metric_version": plan.metric_version,
        "run_id": plan.run_id,
    }


def _finite(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


# --------------------------------------------------------------------------- aggregate + release
RUNS_SCHEMA = pa.schema(
    [
        ("deployment", pa.string()),
        ("scenario", pa.string()),
        ("run_id", pa.string()),
        ("status", pa.string()),
        ("main_metric", pa.string()),
        ("score", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("error_rate", pa.float64()),
        ("cost_usd", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("judge_cost_usd", pa.float64()),
        ("error", pa.string()),
        ("uri", pa.string()),
    ]
)


def group_columns(board: BoardPlan) -> list[str]:
    """The metric groups' columns (``<scenario>/<metric>``), each once, in board order."""
    return list(dict.fromkeys(c.key for g in board.spec.metric_groups for c in g.columns))


def leaderboard_schema(labels: list[str], groups: list[str] | None = None, aspects: list[str] | None = None,
                       metric_groups: list[str] | None = None, columns: list[str] | None = None) -> pa.Schema:
    fields = [("deployment", pa.string()), ("mean_score", pa.float64()), ("mean_win_rate", pa.float64())]
    for label in labels:
        fields += [(label, pa.float64()), (f"{label} ci_low", pa.float64()), (f"{label} ci_high", pa.float64())]
    fields += [(f"group:{g}", pa.float64()) for g in groups or []]
    fields += [(f"aspect:{a}", pa.float64()) for a in aspects or []]
    fields += [(f"{g} mean_win_rate", pa.float64()) for g in metric_groups or []]
    for key in columns or []:
        fields += [(key, pa.float64()), (f"{key} ci_low", pa.float64()), (f"{key} ci_high", pa.float64()),
                   (f"{key} note", pa.string())]
    fields += [("cost_usd", pa.float64()), ("prompt_tokens", pa.int64()), ("output_tokens", pa.int64()),
               ("judge_cost_usd", pa.float64()), ("missing", pa.int64())]
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
                found_values.setdefault((r.deployment, key), []).append((_finite(found.mean), _finite(found.ci_low), _finite(found.ci_high)))
            elif notes is not None and (why := unavailable_reason(rows, metric)):
                notes[(r.deployment, key)] = why
    out: GroupCells = {}
    for cell, values in found_values.items():
        out[cell] = values[0] if len(values) == 1 else (_group_mean([v[0] for v in values]), None, None)
    return out


def perturbation_cells(store: Store, board: BoardPlan, runs: list[RunOutcome]) -> GroupCells:
    """HELM's robustness and fairness (``compute_worst_case_metrics``): per instance, the worst (lowest)
    main-metric value over the original and that kind's perturbations, then the mean with a bootstrap
    interval. An instance a perturbation left unchanged was not re-run: its worst case is the original.
    A cell is missing when the original or any of its perturbed runs is."""
    published = {r.run_id for r in runs}
    by_cell = {(p.scenario.label, p.deployment.name): p for p in board.runs}
    out: GroupCells = {}
    for s in board.scenarios:
        kinds: dict[str, list[ScenarioPlan]] = {}
        for copy in board.perturbed:
            if copy.perturbation and copy.perturbation.label == s.label:
                kinds.setdefault(copy.perturbation.kind, []).append(copy)
        for m in board.spec.models:
            original = by_cell.get((s.label, m))
            if original is None or original.run_id not in published:
                continue
            base = _main_values(store, original.run_id, s.main_metric)
            for kind, copies in kinds.items():
                plans = [by_cell.get((c.label, m)) for c in copies]
                if any(p is None or p.run_id not in published for p in plans):
                    continue
                worst = dict(base)
                for p in plans:
                    for iid, value in _main_values(store, p.run_id, s.main_metric).items():
                        if iid in worst:
                            worst[iid] = min(worst[iid], value)
                if worst:
                    mean, low, high = mean_ci(list(worst.values()))
                    out[(m, f"{s.label}/{kind}")] = (_finite(mean), _finite(low), _finite(high))
    return out


def _main_values(store: Store, run_id: str, metric: str) -> dict[str, float]:
    """A run's per-instance values of one stat (its test split, else its only split), by instance id."""
    table = store.read_parquet(layout.run_file(run_id, "stats.parquet"))
    rows = [r for r in table.to_pylist() if r["name"] == metric]
    if any(r["split"] == "test" for r in rows):
        rows = [r for r in rows if r["split"] == "test"]
    return {r["instance_id"]: r["value"] for r in rows}


def board_groups(board: BoardPlan) -> dict[str, list[str]]:
    """Leaderboard columns of a grouped board (group -> its entries' labels); empty for ungrouped boards."""
    if not (board.spec.aspects or any(s.group for s in board.scenarios)):
        return {}
    groups: dict[str, list[str]] = {}
    for s in board.scenarios:
        groups.setdefault(s.group or s.label, []).append(s.label)
    return groups


def _group_mean(values: list[float | None]) -> float | None:
    """HELM's run-group cell: the unweighted mean of its runs' scores (missing runs left out)."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def leaderboard_rows(board: BoardPlan, runs: list[RunOutcome], metric_cells: GroupCells | None = None,
                     notes: GroupNotes | None = None) -> list[dict[str, Any]]:
    """One row per model. A grouped board (VHELM) ranks its groups, HELM's way: each group is the mean
    of its entries, the mean win rate is over groups, and each aspect gets its own win rate. Cells are
    joined by run id, never by label: a cached run's outcome carries the label it was first published
    under, and a board may relabel or reorder its scenarios. Each metric group (Safety's accuracy,
    safety, bias, toxicity) shows its columns with their own mean win rate (``metric_cells``: the
    runs' summary values; ``notes``: why a cell has none, e.g. no logprobs for calibration); the
    headline stays the board's."""
    labels = [s.label for s in board.scenarios]
    by_id = {r.run_id: r for r in runs}
    cells = {(p.deployment.name, p.scenario.label): by_id[p.run_id] for p in board.runs if p.run_id in by_id}
    table = {m: {lab: _finite(cells[(m, lab)].score) if (m, lab) in cells else None for lab in labels} for m in board.spec.models}
    groups = board_groups(board)
    ranked = {m: {g: _group_mean([table[m][lab] for lab in members]) for g, members in groups.items()}
              for m in board.spec.models} if groups else table
    means = mean_scores(ranked) if "mean" in board.spec.aggregation else {}
    wins = win_rates(ranked) if "win_rate" in board.spec.aggregation else {}
    aspect_wins = {a: win_rates({m: {g: ranked[m].get(g) for g in members} for m in board.spec.models})
                   for a, members in board.spec.aspects.items()}
    metric_cells = metric_cells or {}
    group_wins = {
        g.name: win_rates({m: {c.key: metric_cells.get((m, c.key), (None,))[0] for c in g.columns} for m in board.spec.models},
                          {c.key for c in g.columns if c.lower_is_better})
        for g in board.spec.metric_groups
    }
    rows = []
    for m in board.spec.models:
        row: dict[str, Any] = {"deployment": m, "mean_score": means.get(m), "mean_win_rate": wins.get(m)}
        for g in groups:
            row[f"group:{g}"] = ranked[m][g]
        for a, by_model in aspect_wins.items():
            row[f"aspect:{a}"] = by_model.get(m)
        for name, rates in group_wins.items():
            row[f"{name} mean_win_rate"] = rates.get(m)
        for key in group_columns(board):
            row[key], row[f"{key} ci_low"], row[f"{key} ci_high"] = metric_cells.get((m, key), (None, None, None))
            row[f"{key} note"] = (notes or {}).get((m, key))
        mine = [cells[(m, lab)] for lab in labels if (m, lab) in cells]
        spent = mine + [by_id[p.run_id] for p in board.runs  # perturbed runs cost too
                        if p.scenario.perturbation and p.deployment.name == m and p.run_id in by_id]
        for lab in labels:
            cell = cells.get((m, lab))
            row[lab] = table[m][lab]
            row[f"{lab} ci_low"] = _finite(cell.ci_low) if cell else None
            row[f"{lab} ci_high"] = _finite(cell.ci_high) if cell else None
        row["cost_usd"] = sum(c.cost_usd for c in spent)
        row["prompt_tokens"] = sum(c.prompt_tokens for c in spent)
        row["output_tokens"] = sum(c.output_tokens for c in spent)
        row["judge_cost_usd"] = sum(c.judge_cost_usd for c in spent)
        row["missing"] = len(labels) - len(mine)
        rows.append(row)
    key = "mean_score" if "mean" in board.spec.aggregation else "mean_win_rate"
    rows.sort(key=lambda r: (r[key] is None, -(r[key] or 0.0), r["deployment"]))
    return rows


def labelled(board: BoardPlan, runs: list[RunOutcome]) -> list[RunOutcome]:
    """Each outcome under this board's label and deployment name for its run id (see leaderboard_rows)."""
    names = {p.run_id: (p.scenario.label, p.deployment.name) for p in board.runs}
    return [r.model_copy(update=dict(zip(("scenario", "deployment"), names.get(r.run_id, (r.scenario, r.deployment)))))
            for r in runs]


FAULT_ENV = "HELMFLOW_TEST_FAULT"


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
    rows = leaderboard_rows(board, runs, group_cells(store, board, runs, notes) | perturbation_cells(store, board, runs),
                            notes)
    for existing in store.ls(layout.board_dir(name)):
        rid = existing.rsplit("/", 1)[-1]
        if rid.endswith(f"-{digest}") and store.exists(layout.release_json(name, rid)):
            return ReleaseOutcome(release_id=rid, uri=store.url(existing), status=status, wrote=False, table=rows,
                                  subset=board.subset)
    now = datetime.now(UTC)
    release_id = f"{now:%Y-%m-%d}-{digest}"
    prefix = layout.release_dir(name, release_id)
    labels = [s.label for s in board.scenarios]
    meta = _meta(board=board.spec.name, board_version=board.board_version, release_id=release_id,
                 created_at=now.isoformat(), status=status, subset=board.subset)
    groups = board_groups(board)
    schema = leaderboard_schema(labels, list(groups), list(board.spec.aspects), [g.name for g in board.spec.metric_groups],
                                group_columns(board))
    board_bytes = encode_parquet(pa.Table.from_pylist(rows, schema=schema), meta)
    store.write_bytes(layout.release_file(name, release_id, "leaderboard.parquet"), board_bytes)
    if settings().test_fault == "after-leaderboard":  # documented test hook: a crash mid-publication
        raise RuntimeError(f"{FAULT_ENV}=after-leaderboard: simulated crash after leaderboard.parquet")
    run_rows = [
        {**r.model_dump(include=set(RUNS_SCHEMA.names)), "error": None} for r in runs
    ] + [
        {"deployment": f.deployment, "scenario": f.scenario, "run_id": f.run_id, "status": "missing", "error": f.error}
        for f in failed
    ]
    runs_bytes = encode_parquet(pa.Table.from_pylist(run_rows, schema=RUNS_SCHEMA), meta)
    store.write_bytes(layout.release_file(name, release_id, "runs.parquet"), runs_bytes)
    release = ReleaseManifest.model_validate({
        "board": board.spec.name,
        "board_version": board.board_version,
        "declared_version": board.spec.version,
        "release_id": release_id,
        "created_at": now.isoformat(),
        "helmflow_version": helmflow.__version__,
        "git_commit": versions.git_commit(),
        "status": status,
        "subset": board.subset,
        "selection": board.selection,
        "unverified_data": {s.label: s.unverified for s in board.scenarios if s.unverified},
        "scenarios": labels,
        **({"groups": groups, "aspects": board.spec.aspects} if groups else {}),
        "models": board.spec.models,
        "run_ids": run_ids,
        "failed": [f.model_dump() for f in failed],
        "judges": board.spec.judges,
        "toxicity_scorer": board.spec.toxicity,
        "content_warning": any(s.unsafe_text for s in board.scenarios),
        "metric_groups": [g.model_dump(mode="json") for g in board.spec.metric_groups],
        "cost_usd": sum(r.cost_usd for r in runs),
        "judge_cost_usd": sum(r.judge_cost_usd for r in runs),
        "sha256": {"leaderboard.parquet": sha256_hex(board_bytes), "runs.parquet": sha256_hex(runs_bytes)},
    })
    store.write_json(layout.release_json(name, release_id), release.to_json())
    return ReleaseOutcome(release_id=release_id, uri=store.url(prefix), status=status, wrote=True, table=rows,
                          subset=board.subset)


def point_release(store: Store, board: BoardPlan, release: ReleaseOutcome) -> ReleaseOutcome:
    """Move the board's pointer for this kind of release (full or subset, complete or partial) to it,
    unless it is there already. Runs after every publication, cached or not, so a kill between
    ``release.json`` and the pointer is finished by the next run."""
    if settings().test_fault == "before-pointer":  # documented test hook: killed after release.json
        raise RuntimeError(f"{FAULT_ENV}=before-pointer: simulated crash between release.json and its pointer")
    info = ReleaseManifest.model_validate(store.read_json(layout.release_json(safe_key(board.spec.name), release.release_id)))
    moved = releases.point(store, safe_key(board.spec.name), info, release.uri)
    return release.model_copy(update={"pointer": moved})
