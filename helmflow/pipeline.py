"""The board's stages as plain functions: download, adapt, query, score, publish a run (the release
is :mod:`helmflow.aggregate`, the outcome records :mod:`helmflow.outcomes`).

Prefect tasks in ``tasks/`` wrap them in two units per board cell: :func:`prepare_scenario`
(download + adapt, one per scenario) and :func:`evaluate_run` (query → score → publish, one per
scenario × deployment), plus the release. Everything here runs and tests without Prefect.
Each stage returns a small outcome (keys, counts, versions); the Parquet files are the data.
Intermediate files live under ``work/<cache key>/`` so a cached task's outcome always points at
files that exist; ``runs/<run_id>/`` is written by publish only, ``run.json`` last.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from helmflow import chunks, layout
from helmflow.adapters import iter_sampled_prompts
from helmflow.chunks import Rows, instance_chunks
from helmflow.datasets import (
    iter_sampled,
    mirror_sources,
    read_instances,
    read_sampled,
    store_instances,
    write_instances,
)
from helmflow.integrity import CorruptFile, read_manifest, verify_files
from helmflow.judges import Judged, annotate
from helmflow.manifests import (
    RunCounts,
    RunDataset,
    RunDeployment,
    RunJudges,
    RunManifest,
    RunRenders,
    RunScenario,
    RunScorer,
    RunVersions,
    Tokens,
)
from helmflow.media import scoring_media
from helmflow.outcomes import (
    PreparedScenario,
    PromptSet,
    QueryOutcome,
    RunOutcome,
    ScenarioData,
    ScoreOutcome,
)
from helmflow.plan.extras import scored_by_scorer
from helmflow.plan.records import BoardPlan, RunPlan, ScenarioPlan, cell_name
from helmflow.publish import RunWriter, finite, parquet_meta
from helmflow.publish import lineage as publish_lineage
from helmflow.query import BoardRun, QueryFailed, RunRefused, Sending
from helmflow.records import (
    ANNOTATION_SCHEMA,
    COMPLETION_SCHEMA,
    PROMPT_SCHEMA,
    REFERENCE_SCHEMA,
    RENDER_SCHEMA,
    REQUEST_SCHEMA,
    RUN_ID_FIELDS,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    AdapterSpec,
    Annotation,
    Completion,
    MetricSummary,
    Prompt,
    Request,
    instance_from_row,
    models_to_table,
    prompt_from_row,
    prompt_to_row,
    request_from_row,
    request_to_row,
    to_table,
)
from helmflow.renders import collecting as collecting_renders
from helmflow.request_builder import build_requests
from helmflow.scoring import StatsBuilder, score_instances, summarize
from helmflow.storage import Store, parquet_writer


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
    from helmflow.perturbations import assets_from, perturb_evaluated

    assert plan.perturbation is not None
    original = plan.model_copy(update={"scenario_version": plan.perturbation.scenario_version, "perturbation": None})
    data = download_scenario(store, original)
    key = layout.instances(plan.key, plan.scenario_version)
    if not store.exists(key):
        instances = read_instances(store, data.instances_key)
        with assets_from(store.root):  # fetched data files (helmflow fetch-assets) live in this root
            perturbed = perturb_evaluated(plan.perturbation.name, instances, plan.adapter.sample)
        key = store_instances(store, plan, perturbed)
    return ScenarioData(instances_key=key, files=data.files)


def preflight(store: Store, board: BoardPlan) -> BoardPlan:
    """The download stage of every scenario, before any task: data a run cannot use (unreadable,
    malformed, empty, duplicate ids, rows the metrics refuse) is bad input, found before a model is
    queried. Idempotent: what is stored and verified is not fetched or loaded again, so the download
    tasks that follow, and the next run's pre-flight, find it in place.

    Returns the plan without the perturbed copies that changed no sampled instance (fairness on
    arithmetic questions: no names, no pronouns). Such a copy would be a prepare task and one empty
    run per model; HELM skips unchanged perturbed instances too (``should_skip_unchanged_eval``), so
    its worst case is the original's and :func:`helmflow.aggregate.perturbation_cells` shows the
    unperturbed score for that kind. The other runs and their ids are unchanged."""
    unchanged = set()
    for scenario in board.all_scenarios:
        data = download_scenario(store, scenario)
        if scenario.perturbation is not None and not perturbed_any(store, data.instances_key):
            unchanged.add(scenario.label)
    if not unchanged:
        return board
    return board.model_copy(update={"perturbed": [s for s in board.perturbed if s.label not in unchanged],
                                    "runs": [r for r in board.runs if r.scenario.label not in unchanged]})


def perturbed_any(store: Store, instances_key: str) -> bool:
    """Whether a perturbed copy's instances file holds an evaluation instance (it holds the train
    instances as they are, then only the sampled instances its perturbation changed)."""
    splits = store.read_parquet(instances_key, columns=["split"]).column("split")
    # compared in Python: Arrow converting the scalar "train" would import pandas (0.2 s) in a command that needs
    # nothing else of it (a board whose release is published)
    return any(split is not None and split != "train" for split in splits.to_pylist())


def prompts_key(plan: ScenarioPlan) -> str:
    return layout.prompts(plan.key, plan.scenario_version, plan.prompt_version)


def adapt_scenario(store: Store, plan: ScenarioPlan, data: ScenarioData) -> PromptSet:
    """The scenario's prompts file, adapted and written a chunk of about :data:`helmflow.chunks.CHUNK_BYTES` at a
    time (:func:`stored_prompts`): the prompts of adapting every instance at once, never all held."""
    key = prompts_key(plan)
    meta = parquet_meta(scenario_version=plan.scenario_version, prompt_version=plan.prompt_version,
                        adapter=plan.adapter.model_dump())
    count = 0
    with store.writing(key) as fh, parquet_writer(fh, PROMPT_SCHEMA, meta) as writer:
        for prompts in chunks.batched(stored_prompts(store, plan.adapter, data.instances_key), prompt_bytes):
            writer.write_table(to_table([prompt_to_row(p) for p in prompts], PROMPT_SCHEMA))
            count += len(prompts)
        if not count:
            writer.write_table(PROMPT_SCHEMA.empty_table())
    return PromptSet(prompts_key=key, num_prompts=count)


def prompt_bytes(prompt: Prompt) -> int:
    """About the bytes of a prompt's text: what bounds a chunk of them."""
    return (len(prompt.head) + sum(map(len, prompt.examples)) + len(prompt.query) + len(prompt.document)
            + sum(len(m.content) for m in prompt.messages or []) + sum(map(len, prompt.variants)) + 64)


def stored_prompts(store: Store, spec: AdapterSpec, instances_key: str) -> Iterator[Prompt]:
    """:func:`helmflow.adapters.iter_prompts` over a stored instances file: the same prompts in the same order,
    the evaluation sample read a chunk at a time (:func:`helmflow.datasets.iter_sampled`). With several trials
    every trial prompts the same sample, so it is built once and held (:func:`helmflow.datasets.read_sampled`)."""
    if spec.sample.trials > 1:
        yield from iter_sampled_prompts(spec, *read_sampled(store, instances_key, spec))
        return
    for train, evaluated in iter_sampled(store, instances_key, spec):
        yield from iter_sampled_prompts(spec, train, evaluated)


def prepare_scenario(store: Store, plan: ScenarioPlan) -> PreparedScenario:
    """Download (a no-op when the instances exist) and adapt: the per-scenario half of a board."""
    data = download_scenario(store, plan)
    return PreparedScenario(data=data, prompts=adapt_scenario(store, plan, data))


# --------------------------------------------------------------------------- query
def query_pair(
    store: Store, plan: RunPlan, prompt_set: PromptSet, progress: Callable[[int], None] | None = None,
    shared: BoardRun | None = None,
) -> QueryOutcome:
    """Build the pair's requests a chunk of prompts at a time into the requests file, then send them a
    chunk of requests at a time (:data:`helmflow.chunks.CHUNK_INSTANCES` each), writing each chunk's
    completions as it comes back: a run holds one chunk as objects, never all of them. The journal
    is read once and the spool's room checked once for the whole pair (:class:`Sending`)."""
    base = layout.query_dir(plan.query_key)
    requests_key, completions_key = f"{base}/requests.parquet", f"{base}/completions.parquet"
    meta = parquet_meta(query_key=plan.query_key, deployment=plan.deployment.name, model_version=plan.model_version)
    overflow = Overflow() if plan.refuse_overflow else None
    hashes, max_tokens = write_requests(store, plan, prompt_set, requests_key, meta, overflow)
    if overflow is not None and overflow.prompts:  # before the journal is read or a request is sent
        raise RunRefused(overflow.line(plan, prompt_set.num_prompts, int(max_tokens.max(initial=0))))
    sending = Sending(store, plan.deployment, hashes, max_tokens, progress, shared)
    try:
        with (store.open(requests_key) as fh, store.writing(completions_key) as out,
              parquet_writer(out, COMPLETION_SCHEMA, meta) as writer):
            for batch in chunks.row_batches(pq.ParquetFile(fh)):
                completions = sending.send([request_from_row(r) for r in batch.to_pylist()])
                writer.write_table(models_to_table(completions, COMPLETION_SCHEMA), row_group_size=RUN_ROW_GROUP_ROWS)
            if not len(hashes):
                writer.write_table(COMPLETION_SCHEMA.empty_table())
    finally:
        sending.close()
    result = sending.result
    where = f"{plan.scenario.label} x {plan.deployment.name}"
    if result.permanent_error:
        raise QueryFailed(f"{where}: {result.permanent_error}")
    if len(hashes) and result.errors / len(hashes) > plan.deployment.max_error_rate:
        raise QueryFailed(
            f"{where}: {result.errors} of {len(hashes)} requests failed (max_error_rate "
            f"{plan.deployment.max_error_rate:g}); first errors: {'; '.join(result.error_messages[:3])}"
        )
    return QueryOutcome(
        query_key=plan.query_key,
        requests_key=requests_key,
        completions_key=completions_key,
        num_requests=len(hashes),
        sent=result.sent,
        reused=result.reused,
        errors=result.errors,
    )


class Overflow:
    """The prompts of a pair that do not fit the deployment's window with the output budget (a board with
    ``context_overflow: refuse`` refuses such a run), and the longest one's tokens."""

    def __init__(self) -> None:
        self.prompts = 0
        self.longest = 0

    def add(self, prompts: list[Prompt], requests: list[Request], deployment: Any) -> None:
        from helmflow.tokenizers import get_tokenizer

        cut = {r.instance_id for r in requests if r.prompt_truncated}
        if not cut:
            return
        tok = get_tokenizer(deployment.tokenizer)
        for p in prompts:
            if p.instance_id in cut:
                self.prompts += 1
                whole = (sum(tok.count(m.content) for m in p.messages) if p.messages is not None
                         else tok.count(p.text(len(p.examples))))
                self.longest = max(self.longest, whole)

    def line(self, plan: RunPlan, num_prompts: int, max_tokens: int) -> str:
        d = plan.deployment
        return (f"{cell_name(plan)}: refused: {self.prompts} of {num_prompts} prompts do not fit {d.name}'s "
                f"context window of {d.context_window:,} tokens with {max_tokens:,} output tokens (the longest "
                f"has {self.longest:,} prompt tokens by {d.tokenizer}); no request sent")


def write_requests(store: Store, plan: RunPlan, prompt_set: PromptSet, key: str,
                   meta: dict[str, str], overflow: Overflow | None = None) -> tuple[pa.ChunkedArray, np.ndarray]:
    """The pair's requests file, built a chunk of prompts at a time; its request hashes and max tokens.
    With ``overflow``, the prompts the deployment's window cuts are counted there."""
    hashes: list[pa.Array] = []
    max_tokens: list[np.ndarray] = []
    with (store.open(prompt_set.prompts_key) as fh, store.writing(key) as out,
          parquet_writer(out, REQUEST_SCHEMA, meta) as writer):
        for batch in chunks.row_batches(pq.ParquetFile(fh)):
            prompts = [prompt_from_row(r) for r in batch.to_pylist()]
            requests = build_requests(prompts, plan.scenario.adapter, plan.deployment, store)
            if overflow is not None:
                overflow.add(prompts, requests, plan.deployment)
            writer.write_table(to_table([request_to_row(r) for r in requests], REQUEST_SCHEMA),
                               row_group_size=RUN_ROW_GROUP_ROWS)
            hashes.append(pa.array([r.request_hash for r in requests], pa.string()))
            max_tokens.append(np.array([r.body.max_tokens for r in requests], np.int64))
        if not hashes:
            writer.write_table(REQUEST_SCHEMA.empty_table())
    return pa.chunked_array(hashes, pa.string()), np.concatenate([np.zeros(0, np.int64), *max_tokens])


# --------------------------------------------------------------------------- score
def score_pair(
    store: Store, plan: RunPlan, data: ScenarioData, query: QueryOutcome, shared: BoardRun | None = None
) -> ScoreOutcome:
    """Judge (when the run has a jury), then score. Judge requests go through the query path (limiter,
    retries, journal, the board run's budget), so scoring again re-sends nothing already judged.

    Scoring holds one chunk of instances (:data:`helmflow.chunks.CHUNK_INSTANCES`) as objects at a
    time; the stats come out as if the run were scored at once (the instances' stored order) and are
    summarised from their compact columns. A jury still judges the whole run at once."""
    base = layout.score_dir(plan.score_key)
    meta = parquet_meta(score_key=plan.score_key, metric_version=plan.metric_version,
                        metric_versions=plan.metric_versions,
                 judges=[j.name for j in plan.judges], judge_templates=plan.judge_templates,
                 scorer=plan.scorer.name if plan.scorer else "")
    judged = judge_run(store, plan, data, query, shared)
    notes: dict[str, list[Annotation]] = {}
    for a in judged.annotations if judged else []:
        notes.setdefault(a.instance_id, []).append(a)
    request_ids = store.read_parquet(query.requests_key, columns=["instance_id"])["instance_id"]
    stored_ids = store.read_parquet(data.instances_key, columns=["id"])["id"]
    in_run = pc.is_in(stored_ids, value_set=pc.unique(request_ids))
    file_rows = np.flatnonzero(np.asarray(in_run.to_numpy(zero_copy_only=False), dtype=bool))
    run_ids = stored_ids.filter(in_run)  # the run's instances in stored order
    stats = StatsBuilder(run_ids)
    with (Rows(store, query.requests_key, query.completions_key) as rows, store.open(data.instances_key) as ifh,
          scoring_media(store), collecting_renders() as renders):
        stored = pq.ParquetFile(ifh)
        for chunk in instance_chunks(request_ids, chunk_size(rows, stored, len(run_ids))):
            requests_rows, completions_rows = rows.read(chunk)
            requests = [request_from_row(r) for r in requests_rows.to_pylist()]
            completions = [Completion.model_validate(r) for r in completions_rows.to_pylist()]
            ids = pc.unique(requests_rows["instance_id"])
            place = np.sort(pc.drop_null(pc.index_in(ids, value_set=run_ids)).to_numpy())
            chunk_instances = [instance_from_row(r) for r in chunks.read_rows(stored, file_rows[place]).to_pylist()]
            scored = score_instances(chunk_instances, requests, completions, plan.scenario.adapter,
                                     plan.scenario.metrics,
                                     [a for i in chunk_instances for a in notes.get(i.id, [])] if notes else None)
            stats.add(scored, {inst.id: int(k) for inst, k in zip(chunk_instances, place, strict=True)})
    columns = stats.columns()
    with store.writing(f"{base}/stats.parquet") as fh, parquet_writer(fh, STAT_SCHEMA, meta) as writer:
        for start in range(0, max(len(columns), 1), STATS_ROW_GROUP_ROWS):
            writer.write_table(columns.table(start, start + STATS_ROW_GROUP_ROWS))
    summary = summarize(columns)
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
    rendering: dict[str, Any] = {}
    if renders:  # the lineage of every image a metric drew, in the order the instances were scored
        store.write_parquet(f"{base}/renders.parquet", models_to_table(renders, RENDER_SCHEMA), meta,
                            row_group_size=RUN_ROW_GROUP_ROWS)
        rendering = {
            "renders_key": f"{base}/renders.parquet",
            "renderers": {r.renderer: r.renderer_version for r in renders},
            "rendered": sum(not r.reused for r in renders),
            "render_reused": sum(r.reused for r in renders),
            "render_failed": sum(not r.compiled for r in renders),
        }
    main = main_summary(summary, plan.scenario.main_metric)
    return ScoreOutcome(
        **judging,
        **rendering,
        score_key=plan.score_key,
        stats_key=f"{base}/stats.parquet",
        summary_key=f"{base}/summary.parquet",
        main_metric=plan.scenario.main_metric,
        score=main.mean if main else None,
        ci_low=main.ci_low if main else None,
        ci_high=main.ci_high if main else None,
    )


def chunk_size(rows: Rows, instances: pq.ParquetFile, num_instances: int) -> int:
    """Instances scored at once: :data:`helmflow.chunks.CHUNK_INSTANCES`, fewer when their requests,
    completions and instance rows pass :data:`helmflow.chunks.CHUNK_BYTES` together (long contexts)."""
    def size(f: pq.ParquetFile) -> int:
        return sum(f.metadata.row_group(g).total_byte_size for g in range(f.metadata.num_row_groups))

    stored = instances.metadata.num_rows
    per_instance = sum(size(f) for f in rows.files) // max(num_instances, 1) + size(instances) // max(stored, 1)
    return chunks.rows_within(per_instance, 1)


STATS_ROW_GROUP_ROWS = 1 << 17  # stats written from their columns a row group at a time (2.6 MB of Arrow)


def judge_run(store: Store, plan: RunPlan, data: ScenarioData, query: QueryOutcome,
              shared: BoardRun | None = None) -> Judged | None:
    """The jury's and the board-wide metric scorer's verdicts on the whole run (None when it has neither)."""
    if not plan.judges and not (plan.scorer and plan.scorer_template):
        return None
    requests = [request_from_row(r) for r in store.read_parquet(query.requests_key).to_pylist()]
    instances = read_instances(store, data.instances_key, {r.instance_id for r in requests})
    completions = [Completion.model_validate(r) for r in store.read_parquet(query.completions_key).to_pylist()]
    judged = None
    if plan.judges:
        judged = annotate(store, plan.judges, list(plan.judge_templates), instances, requests, completions, shared,
                          plan.judge_texts)
    if plan.scorer and plan.scorer_template:  # a board-wide metric's scorer: its scores are annotations too
        scored = annotate(store, [plan.scorer], [plan.scorer_template], instances, requests, completions, shared,
                          plan.judge_texts)
        judged = scored if judged is None else judged.merged(scored)
    return judged


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
        on_start(prompts.num_prompts * plan.scenario.adapter.requests_per_prompt)
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
    if plan.adaptive is not None:
        return adaptive_run(store, plan, prepared, progress, shared, lineage, on_start)
    task_run_id = (lineage or {}).get("publish_task_run_id")
    query = query_stage(store, plan, prepared.prompts, progress, shared, task_run_id, on_start)
    score = score_stage(store, plan, prepared.data, query, shared, task_run_id)
    return publish_run(store, plan, query, score, {
        **(lineage or {}), "query_task_run_id": query.task_run_id, "score_task_run_id": score.task_run_id,
    })


# --------------------------------------------------------------------------- one adaptive run
TRAJECTORY_SCHEMA = pa.schema([
    ("step", pa.int32()), ("instance_id", pa.string()), ("easiness", pa.float64()),
    ("ability_before", pa.float64()), ("score", pa.float64()), ("ability", pa.float64()),
    ("standard_error", pa.float64()),
])


def adaptive_run(store: Store, plan: RunPlan, prepared: PreparedScenario,
                 progress: Callable[[int], None] | None = None, shared: BoardRun | None = None,
                 lineage: dict[str, Any] | None = None,
                 on_start: Callable[[int], None] | None = None) -> RunOutcome:
    """One board cell asked adaptively (:mod:`helmflow.adaptive`): items one at a time through the
    query path (the journal answers any request asked before), each scored by the scenario's main
    metric; then the asked items are scored and published as a run with its trajectory."""
    from helmflow.adaptive import run_adaptive
    from helmflow.calibration import read_easiness

    assert plan.adaptive is not None
    easiness_all = read_easiness(store, plan.scenario)
    base = layout.query_dir(plan.query_key)
    requests_key, completions_key = f"{base}/requests.parquet", f"{base}/completions.parquet"
    meta = parquet_meta(query_key=plan.query_key, deployment=plan.deployment.name, model_version=plan.model_version)
    hashes, max_tokens = write_requests(store, plan, prepared.prompts, requests_key, meta)
    by_instance: dict[str, list[Any]] = {}
    for r in store.read_parquet(requests_key).to_pylist():
        request = request_from_row(r)
        by_instance.setdefault(request.instance_id, []).append(request)
    easiness = {i: z for i, z in easiness_all.items() if i in by_instance}  # unmatched items are never asked
    instances = {i.id: i for i in read_instances(store, prepared.data.instances_key, set(easiness))}
    if on_start:  # the requests the run will ask at most (a progress bar's total)
        on_start(sum(len(by_instance[i]) for i in sorted(easiness, key=lambda i: -len(by_instance[i]))
                     [:plan.adaptive.max_items]))
    asked: list[Any] = []
    answers: list[Completion] = []
    sending = Sending(store, plan.deployment, hashes, max_tokens, progress, shared)

    def ask(instance_id: str) -> float:
        requests = by_instance[instance_id]
        completions = sending.send(requests)
        asked.extend(requests)
        answers.extend(completions)
        stats = score_instances([instances[instance_id]], requests, completions, plan.scenario.adapter,
                                plan.scenario.metrics)
        values = [s.value for s in stats if s.name == plan.scenario.main_metric]
        return float(values[0]) if values else 0.0

    try:
        trajectory = run_adaptive(easiness, ask, plan.adaptive.max_items, plan.adaptive.initial_ability)
    finally:
        sending.close()
    store.write_parquet(requests_key, to_table([request_to_row(r) for r in asked], REQUEST_SCHEMA), meta)
    store.write_parquet(completions_key, models_to_table(answers, COMPLETION_SCHEMA), meta)
    result = sending.result
    query = QueryOutcome(query_key=plan.query_key, requests_key=requests_key, completions_key=completions_key,
                         num_requests=len(asked), sent=result.sent, reused=result.reused, errors=result.errors)
    score = score_pair(store, plan, prepared.data, query, shared)
    table = pa.table({
        "step": pa.array(range(1, len(trajectory.steps) + 1), pa.int32()),
        "instance_id": pa.array([s.item for s in trajectory.steps], pa.string()),
        "easiness": [s.easiness for s in trajectory.steps],
        "ability_before": [s.ability_before for s in trajectory.steps],
        "score": [s.score for s in trajectory.steps],
        "ability": [s.ability_after for s in trajectory.steps],
        "standard_error": [_finite(s.standard_error) for s in trajectory.steps],
    }, schema=TRAJECTORY_SCHEMA)
    out = publish_run(store, plan, query, score, lineage, trajectory=table)
    full = layout.run_json(plan.full_run_id) if plan.full_run_id else None
    full_score = store.read_json(full).get("score") if full and store.exists(full) else None
    return out.model_copy(update={"ability": trajectory.ability, "ability_se": _finite(trajectory.standard_error),
                                  "full_score": full_score})


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------- publish a run
RUN_ROW_GROUP_ROWS = 1000  # the web report decodes one row group (1,000 requests, ten of its 100-row pages) per page


def run_rows_per_group(store: Store, key: str) -> int:
    """A published requests or completions file's rows per group: :data:`RUN_ROW_GROUP_ROWS`, fewer when that
    many rows pass :data:`helmflow.chunks.CHUNK_BYTES` (long prompts), so copying holds one bounded group."""
    with store.open(key) as fh:
        return chunks.parquet_rows_within(pq.ParquetFile(fh), RUN_ROW_GROUP_ROWS)


def publish_run(
    store: Store, plan: RunPlan, query: QueryOutcome, score: ScoreOutcome, lineage: dict[str, Any] | None = None,
    trajectory: pa.Table | None = None,
) -> RunOutcome:
    """Copy the run's files into ``runs/<run_id>/`` and write ``run.json`` last (the commit marker)."""
    prefix = layout.run_dir(plan.run_id)
    try:
        completions = store.read_parquet(query.completions_key, columns=[
            "prompt_tokens", "output_tokens", "cost_usd", "reasoning_tokens", "cached_tokens"])
    except pa.ArrowInvalid:  # completions stored before reasoning and cached tokens were recorded
        completions = store.read_parquet(query.completions_key, columns=["prompt_tokens", "output_tokens", "cost_usd"])
    cost = float(pc.sum(completions["cost_usd"]).as_py() or 0.0)
    prompt_tokens = int(pc.sum(completions["prompt_tokens"]).as_py() or 0)
    output_tokens = int(pc.sum(completions["output_tokens"]).as_py() or 0)
    tokens = Tokens(prompt=prompt_tokens, output=output_tokens, **{
        short: int(pc.sum(completions[name]).as_py() or 0) for short, name in
        (("reasoning", "reasoning_tokens"), ("cached", "cached_tokens")) if name in completions.column_names})
    summary = [MetricSummary.model_validate(r) for r in store.read_parquet(score.summary_key).to_pylist()]
    main = main_summary(summary, score.main_metric)
    truncated = main_summary(summary, "truncated_in_reasoning")
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
        reasoning_tokens=tokens.reasoning,
        instances=main.count if main else None,
        truncated_in_reasoning=finite(truncated.mean) if truncated else None,
    )
    if status == "complete" and _published_intact(store, plan.run_id):
        return outcome.model_copy(update={"wrote": False})  # already published, intact: rewrite nothing
    writer = RunWriter(store, plan.run_id, plan.deployment.name, plan.scenario.label,
                       parquet_meta(**_version_fields(plan)))
    for name, src in zip(layout.RUN_FILES,
                         (query.requests_key, query.completions_key, score.stats_key, score.summary_key)):
        writer.copy(name, src, run_rows_per_group(store, src) if name in ("requests.parquet", "completions.parquet")
                    else STATS_ROW_GROUP_ROWS)
    request_ids = pc.unique(store.read_parquet(query.requests_key, columns=["instance_id"])["instance_id"])
    references = references_table(store, layout.instances(plan.scenario.key, plan.scenario.scenario_version),
                                  request_ids)
    writer.write(layout.RUN_REFERENCES, [references], references.schema, STATS_ROW_GROUP_ROWS)
    if trajectory is not None:
        writer.write(layout.RUN_TRAJECTORY, [trajectory], trajectory.schema)
    if score.annotations_key:
        writer.copy(layout.RUN_ANNOTATIONS, score.annotations_key, RUN_ROW_GROUP_ROWS)
    if score.renders_key:
        writer.copy(layout.RUN_RENDERS, score.renders_key, RUN_ROW_GROUP_ROWS)
    published = ("name", "client", "model", "revision")
    writer.commit(RunManifest(
        run_id=plan.run_id,
        status=status,
        scenario=RunScenario(name=plan.scenario.name, label=plan.scenario.label, params=plan.scenario.params),
        deployment=RunDeployment(**plan.deployment.model_dump(
            mode="json", include={*published, "tokenizer", "context_window", "reasoning"}, exclude_none=True)),
        adapter=plan.scenario.adapter.model_dump(mode="json"),
        metrics=plan.metric_versions,
        main_metric=score.main_metric,
        score=finite(score.score),
        ci=(finite(score.ci_low), finite(score.ci_high)),
        counts=RunCounts(requests=query.num_requests, sent=query.sent, reused=query.reused, errors=query.errors),
        error_rate=outcome.error_rate,
        cost_usd=cost,
        tokens=tokens,
        instances=outcome.instances,
        truncated_in_reasoning=outcome.truncated_in_reasoning,
        judge_cost_usd=score.judge_cost_usd,
        judges=RunJudges(
            deployments=[RunDeployment(**j.model_dump(mode="json", include=set(published))) for j in plan.judges],
            templates=plan.judge_templates,
            scorers={metric: RunScorer(**plan.scorer.model_dump(mode="json", include=set(published)),
                                       template=plan.scorer_template)
                     for metric in scored_by_scorer(plan.scenario.metrics)} if plan.scorer else {},
            sent=score.judge_sent,
            reused=score.judge_reused,
            request_errors=score.judge_errors,
            parse_errors=score.judge_parse_errors,
            tokens=Tokens(prompt=score.judge_prompt_tokens, output=score.judge_output_tokens),
        ),
        renders=RunRenders(renderers=score.renderers, rendered=score.rendered, reused=score.render_reused,
                           failed=score.render_failed) if score.renders_key else None,
        versions=RunVersions(**_version_fields(plan)),
        dataset=RunDataset(revision=plan.scenario.dataset_revision, checksums=plan.scenario.checksums,
                           unverified=plan.scenario.unverified),
        lineage=publish_lineage(plan.query_key, plan.score_key, **(lineage or {})),
    ))
    return outcome


def references_table(store: Store, instances_key: str, instance_ids: pa.Array | pa.ChunkedArray) -> pa.Table:
    """The references of ``instance_ids`` in the scenario's instances file, one row per reference
    (the run-id columns are added by the caller), built as columns."""
    table = store.read_parquet(instances_key, columns=["id", "split", "references"])
    table = table.filter(pc.is_in(table["id"], value_set=instance_ids))
    refs = table["references"].combine_chunks()
    parent = np.asarray(pc.list_parent_indices(refs), dtype=np.int64)
    flat = pc.list_flatten(refs)
    fields = [f for f in REFERENCE_SCHEMA if f.name not in dict(RUN_ID_FIELDS)]
    return pa.table([table["id"].take(parent), table["split"].take(parent),
                     # the place of each reference in its instance's list (instances in order, so parents ascend)
                     pa.array(np.arange(len(parent)) - np.searchsorted(parent, parent), pa.int32()),
                     flat.field("text"), flat.field("correct")], schema=pa.schema(fields))


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
