"""A run is queried and scored in bounded chunks: the files are those of doing it
at once, and the memory it holds does not grow with its instances."""

from __future__ import annotations

import random
import tracemalloc
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from helmflow import chunks, journal, layout, pipeline, publish
from helmflow.clients import load_deployments
from helmflow.datasets import read_instances
from helmflow.integrity import sha256_hex
from helmflow.manifests import RunManifest
from helmflow.metrics import METRICS
from helmflow.outcomes import PromptSet
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import load_board
from helmflow.query import run_queries
from helmflow.records import (
    COMPLETION_SCHEMA,
    PROMPT_SCHEMA,
    REQUEST_SCHEMA,
    RUN_ID_FIELDS,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    Completion,
    MetricSummary,
    Stat,
    models_to_table,
    prompt_from_row,
    prompt_to_row,
    request_from_row,
    request_to_row,
    to_table,
)
from helmflow.request_builder import build_requests
from helmflow.scoring import StatColumns, score_instances, summarize
from helmflow.stats import counted_ci, mean_ci, pooled_ci, ratio_ci
from helmflow.storage import Store, encode_parquet


# --------------------------------------------------------------------------- the summaries before streaming
def summarize_objects(stats: list[Stat]) -> list[MetricSummary]:
    """``scoring.summarize`` as it was over ``Stat`` objects (before streaming): the oracle."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    prefixes = tuple({c.prefix for m in METRICS.names() for c in METRICS.get(m).counted})
    for s in stats:
        if not (prefixes and s.name.startswith(prefixes)):
            groups[(s.name, s.split)].append(s.value)
    out = []
    for (name, split), values in sorted(groups.items()):
        mean, low, high = mean_ci(values)
        out.append(MetricSummary(name=name, split=split, count=len(values), mean=mean, ci_low=low, ci_high=high))
    value = {(s.split, s.name, s.instance_id): s.value for s in stats}
    splits = sorted({s.split for s in stats})
    for name, num, den in sorted({r for m in METRICS.names() for r in METRICS.get(m).ratios}):
        for split in splits:
            ids = sorted(i for (sp, n, i) in value if sp == split and n == den and (sp, num, i) in value)
            if ids:
                ratio, low, high = ratio_ci([value[(split, num, i)] for i in ids], [value[(split, den, i)] for i in ids])
                out.append(MetricSummary(name=name, split=split, count=len(ids), mean=ratio, ci_low=low, ci_high=high))
    for pooled in sorted({p for m in METRICS.names() for p in METRICS.get(m).pooled}, key=lambda p: p.name):
        for split in splits:
            ids = sorted({i for (sp, _, i) in value if sp == split and all((sp, n, i) in value for n in pooled.stats)})
            if ids:
                mean, low, high = pooled_ci({n: [value[(split, n, i)] for i in ids] for n in pooled.stats}, pooled.fn,
                                           rows=pooled.rows, bootstrap=pooled.bootstrap, batched=pooled.batched)
                if mean == mean:  # a pooled number undefined for the run (NaN) is absent, never 0
                    out.append(MetricSummary(name=pooled.name, split=split, count=len(ids), mean=mean, ci_low=low,
                                             ci_high=high))
    for counted in sorted({c for m in METRICS.names() for c in METRICS.get(m).counted}, key=lambda c: c.name):
        for split in splits:
            mine = [s for s in stats if s.split == split and s.name.startswith(counted.prefix)]
            if not mine:
                continue
            ids = sorted({s.instance_id for s in mine})
            keys = sorted({s.name for s in mine})
            row, col = {i: k for k, i in enumerate(ids)}, {n: k for k, n in enumerate(keys)}
            matrix = np.zeros((len(ids), len(keys)))
            for s in mine:
                matrix[row[s.instance_id], col[s.name]] += s.value
            v, low, high = counted_ci(matrix, lambda sums, fn=counted.fn: fn(dict(zip(keys, sums, strict=True))))
            if not np.isnan(v):
                out.append(MetricSummary(name=counted.name, split=split, count=len(ids), mean=v, ci_low=low, ci_high=high))
    return sorted(out, key=lambda m: (m.name, m.split))


def summary_table(summary: list[MetricSummary]) -> list[dict]:
    """Rows to compare (NaN as None: NaN equals nothing)."""
    return [{k: None if isinstance(v, float) and np.isnan(v) else v for k, v in row.items()}
            for row in models_to_table(summary, SUMMARY_SCHEMA).to_pylist()]


def declared_stats(rng: random.Random, instance_id: str, split: str) -> list[Stat]:
    """Stats under every name a metric pools, divides or counts, some missing, in shuffled order."""
    names = {"exact_match", "latency_s"}
    for m in map(METRICS.get, METRICS.names()):
        names |= {n for r in m.ratios for n in r[1:]} | {n for p in m.pooled for n in p.stats}
        names |= {f"{c.prefix}race:asian" for c in m.counted} | {f"{c.prefix}texts" for c in m.counted}
    kept = [n for n in sorted(names) if rng.random() < 0.9]
    rng.shuffle(kept)
    return [Stat(instance_id=instance_id, split=split, name=n, value=float(rng.randint(0, 3) if "count" in n or "num" in n
                                                                           else rng.random() < 0.5)) for n in kept]


def test_summaries_from_columns_are_those_of_the_stat_objects():
    rng = random.Random(7)
    ids = [f"id-{rng.randrange(10**6):06d}" for _ in range(40)]  # not in id order: pooled numbers sort by id
    stats = [s for i in ids for s in declared_stats(rng, i, rng.choice(["test", "valid"]))]
    stats.append(stats[3].model_copy(update={"value": 2.0}))  # a repeated stat: means keep both, lookups the last
    expected = summary_table(summarize_objects(stats))
    assert {r["name"] for r in expected} >= {"ifeval_instruction_strict_accuracy", "ece_10_bin",
                                             "bbq_metric_ambiguous_bias", "sacrebleu_corpus_bleu", "exact_match"}
    assert summary_table(summarize(StatColumns.from_stats(stats))) == expected
    assert summary_table(summarize(stats)) == expected
    assert summarize([]) == summarize_objects([]) == []


# --------------------------------------------------------------------------- a run scored in chunks
def adapted_run(tmp_path, instances: int, adapter: dict | None = None, bias: bool = False):
    """One arithmetic run of ``instances`` (offline solver), downloaded and adapted, not queried yet."""
    spec = {"name": "s", "version": "1", "models": ["offline/solver"], "max_instances": instances, "bias": bias,
            "scenarios": [{"name": "arithmetic", "params": {"num_test": instances}, "adapter": adapter or {}}]}
    (plan,) = plan_board(load_board(spec), load_deployments()).runs
    store = Store(str(tmp_path / "store"))
    data = pipeline.download_scenario(store, plan.scenario)
    return store, plan, data, pipeline.adapt_scenario(store, plan.scenario, data)


def small_run(tmp_path, instances: int, adapter: dict | None = None, bias: bool = False):
    """A query finished for one arithmetic run of ``instances`` (offline solver)."""
    store, plan, data, prompts = adapted_run(tmp_path, instances, adapter, bias)
    return store, plan, data, pipeline.query_pair(store, plan, prompts)


def test_a_run_scored_in_chunks_writes_the_files_of_scoring_it_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "RUN_ROW_GROUP_ROWS", 7)  # chunks read across several row groups
    monkeypatch.setattr(chunks, "CHUNK_INSTANCES", 3)
    monkeypatch.setattr(pipeline, "STATS_ROW_GROUP_ROWS", 11)
    # two trials (each a block of the requests file) of two samples: an instance's rows are apart
    store, plan, data, query = small_run(tmp_path, 23, {"trials": 2, "num_outputs": 2, "temperature": 0.7}, bias=True)
    score = pipeline.score_pair(store, plan, data, query)

    requests = [request_from_row(r) for r in store.read_parquet(query.requests_key).to_pylist()]
    completions = [Completion.model_validate(r) for r in store.read_parquet(query.completions_key).to_pylist()]
    assert len(requests) == 23 * 4 and store.parquet_metadata(query.requests_key)
    at_once = score_instances(read_instances(store, data.instances_key, {r.instance_id for r in requests}), requests,
                              completions, plan.scenario.adapter, plan.scenario.metrics)
    written = store.read_parquet(score.stats_key)
    assert written.schema.equals(STAT_SCHEMA) and written.to_pylist() == models_to_table(at_once, STAT_SCHEMA).to_pylist()
    assert {s.name for s in at_once} >= {"exact_match", "bias_count:texts"}
    summary = [MetricSummary.model_validate(r) for r in store.read_parquet(score.summary_key).to_pylist()]
    assert summary_table(summary) == summary_table(summarize_objects(at_once))
    assert store.parquet_metadata(score.stats_key)["helmflow.score_key"] == plan.score_key


def test_chunks_hold_whole_instances_in_order_of_first_appearance():
    ids = pa.array(["b", "a", "c", "b", "a", "d", "c"])
    assert [c.tolist() for c in chunks.instance_chunks(ids, 2)] == [[0, 1, 3, 4], [2, 5, 6]]
    assert list(chunks.instance_chunks(pa.array([], pa.string()), 2)) == []


TIMING = ("latency_s", "created_at")  # of each answer: differ between two sends of the same request


def test_a_run_queried_in_chunks_writes_the_files_of_querying_it_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "RUN_ROW_GROUP_ROWS", 4)
    monkeypatch.setattr(chunks, "CHUNK_INSTANCES", 5)
    store, plan, data, query = small_run(tmp_path, 17, {"trials": 2, "num_outputs": 2, "temperature": 0.7})
    prompts = [prompt_from_row(r) for r in store.read_parquet(pipeline.prompts_key(plan.scenario)).to_pylist()]
    at_once = build_requests(prompts, plan.scenario.adapter, plan.deployment, store)
    assert len(at_once) == query.num_requests == query.sent == 17 * 4 and query.reused == query.errors == 0
    assert store.read_parquet(query.requests_key).to_pylist() == to_table([request_to_row(r) for r in at_once],
                                                                          REQUEST_SCHEMA).to_pylist()
    answered = run_queries(Store(str(tmp_path / "other")), plan.deployment, at_once).completions
    written = store.read_parquet(query.completions_key)
    assert written.drop_columns(list(TIMING)).to_pylist() == \
        models_to_table(answered, COMPLETION_SCHEMA).drop_columns(list(TIMING)).to_pylist()
    # a rerun resends nothing: every answer comes from the journal, timings and all
    store.delete(layout.query_dir(plan.query_key), recursive=True)
    again = pipeline.query_pair(store, plan, PromptSet(prompts_key=pipeline.prompts_key(plan.scenario), num_prompts=34))
    assert (again.sent, again.reused, again.errors) == (0, 68, 0)
    assert store.read_parquet(again.completions_key).to_pylist() == written.to_pylist()


def traced_peak(fn, *args):
    """``fn(*args)`` and the bytes of Python objects it held at most (tracemalloc)."""
    tracemalloc.start()
    try:
        return fn(*args), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peaks(tmp_path, instances: int) -> tuple[int, int]:
    """The peaks of querying (nothing journaled yet), then scoring, a run of ``instances``."""
    store, plan, data, prompts = adapted_run(tmp_path / str(instances), instances)
    assert prompts.num_prompts == instances and not store.find(layout.journal_dir(plan.deployment.name))
    query, query_peak = traced_peak(pipeline.query_pair, store, plan, prompts)
    return query_peak, traced_peak(pipeline.score_pair, store, plan, data, query)[1]


@pytest.mark.slow
def test_memory_does_not_grow_with_the_instances(tmp_path, monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_INSTANCES", 200)
    monkeypatch.setattr(journal, "FLUSH_EVERY", 200)  # the spool's bound (5,000 answers), passed by both sizes
    small_run(tmp_path / "warm", 50)  # what a process's first query sets up once stays out of the peaks
    (query_small, score_small), (query_large, score_large) = peaks(tmp_path, 600), peaks(tmp_path, 2400)
    # a whole run as objects held 8 KB (query) and 11 KB (score) per instance; 1,800 more instances
    # now add their compact columns (stats: 20 bytes each; request hashes), well under 1 KB each
    assert query_large - query_small < 1800 * 1024, (query_small, query_large)
    assert score_large - score_small < 1800 * 1024, (score_small, score_large)


def test_a_run_published_in_row_groups_writes_the_bytes_of_publishing_it_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "RUN_ROW_GROUP_ROWS", 4)  # several row groups, cut unlike the work files'
    monkeypatch.setattr(chunks, "CHUNK_INSTANCES", 3)
    monkeypatch.setattr(pipeline, "STATS_ROW_GROUP_ROWS", 10)
    store, plan, data, query = small_run(tmp_path, 13, {"num_outputs": 3, "temperature": 0.7}, bias=True)
    score = pipeline.score_pair(store, plan, data, query)
    pipeline.publish_run(store, plan, query, score)
    ids = {"run_id": plan.run_id, "model": plan.deployment.name, "scenario": plan.scenario.label}
    meta = publish.parquet_meta(**pipeline._version_fields(plan))
    sources = {"requests.parquet": (query.requests_key, 4), "completions.parquet": (query.completions_key, 4),
               "stats.parquet": (score.stats_key, 10), "summary.parquet": (score.summary_key, 10)}
    manifest = RunManifest.model_validate(store.read_json(layout.run_json(plan.run_id)))
    for name, (key, rows) in sources.items():  # what publishing the whole table at once wrote
        expected = encode_parquet(publish.with_run_ids(store.read_parquet(key), ids), meta, rows)
        assert store.read_bytes(layout.run_file(plan.run_id, name)) == expected, name
        assert manifest.sha256[name] == sha256_hex(expected)
    assert store.read_parquet(score.stats_key).num_rows > 10
    instances = store.read_parquet(data.instances_key)
    instances = instances.filter(pc.is_in(instances["id"], value_set=store.read_parquet(query.requests_key)["instance_id"]))
    rows = [{"instance_id": row["id"], "split": row["split"], "reference_index": k, "text": ref["text"],
             "correct": ref["correct"]} for row in instances.to_pylist() for k, ref in enumerate(row["references"])]
    published = store.read_parquet(layout.run_file(plan.run_id, layout.RUN_REFERENCES))
    assert published.drop_columns([n for n, _ in RUN_ID_FIELDS]).to_pylist() == rows and len(rows) == 13


def test_instances_and_prompts_written_a_chunk_at_a_time_are_those_of_doing_it_at_once(tmp_path, monkeypatch):
    from helmflow.adapters import adapt

    monkeypatch.setattr(chunks, "CHUNK_BYTES", 400)  # a few instances, a few prompts per chunk
    spec = {"name": "s", "version": "1", "models": ["offline/solver"], "max_instances": 9,
            "scenarios": [{"name": "arithmetic", "params": {"num_test": 30},
                           "adapter": {"max_train_instances": 3}}]}
    (plan,) = plan_board(load_board(spec), load_deployments()).runs
    store = Store(str(tmp_path / "store"))
    data = pipeline.download_scenario(store, plan.scenario)
    with store.open(data.instances_key) as fh:
        assert pq.ParquetFile(fh).num_row_groups > 3  # written a batch at a time
    instances = read_instances(store, data.instances_key)
    assert len(instances) == 50 and len({i.id for i in instances}) == 50
    prompts = pipeline.adapt_scenario(store, plan.scenario, data)
    written = store.read_parquet(prompts.prompts_key)
    at_once = to_table([prompt_to_row(p) for p in adapt(plan.scenario.adapter, instances)], PROMPT_SCHEMA)
    assert prompts.num_prompts == 9 and written.to_pylist() == at_once.to_pylist()
    with store.open(prompts.prompts_key) as fh:
        assert pq.ParquetFile(fh).num_row_groups > 1  # adapted and written a chunk at a time
    assert len({r["instance_id"] for r in written.to_pylist()}) == 9 and written.column("examples")[0].as_py()
