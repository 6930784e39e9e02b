"""Published releases the report tests read: the demo board through the pipeline's own stages (no Prefect),
and synthesized runs in the published schemas (``benchmarks/report_pages.py``'s synthesizer)."""

from __future__ import annotations

import json
import re
import sys

import pyarrow as pa

from helmflow import aggregate, pipeline
from helmflow.plan.compile import prepare
from helmflow.plan.spec import load_board
from helmflow.records import ANNOTATION_SCHEMA
from helmflow.storage import Store
from tests.support.cli import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import report_pages  # noqa: E402 - benchmarks/report_pages.py, importable once benchmarks/ is on the path

__all__ = ["FLOW_RUN_ID", "build_demo", "chunk_rows", "judge_notes", "report_pages"]


FLOW_RUN_ID = "0b6c3a52-7d1e-4c55-9a0e-5f1d2c3b4a59"


def build_demo(root: str, max_instances: int = 12, models_file: str | None = None,
               models: int = 3) -> tuple[Store, str]:
    """Publish a demo release (its first two scenarios x first ``models`` models) with the pipeline's own
    stages; ``models_file`` (e.g. the shipped deployments with ``metadata:``) is read as ``--models-file`` is."""
    store = Store(root)
    spec = load_board("demo")
    # as the flow does: pre-flight leaves out perturbed copies that change no sampled instance
    plan = pipeline.preflight(store, prepare("demo", models=spec.models[:models],
                                             scenarios=[s.label or s.name for s in spec.scenarios[:2]],
                                             max_instances=max_instances, models_file=models_file))
    data = {s.label: pipeline.download_scenario(store, s) for s in plan.all_scenarios}
    prompts = {s.label: pipeline.adapt_scenario(store, s, data[s.label]) for s in plan.all_scenarios}
    runs = []
    for r in plan.runs:
        q = pipeline.query_pair(store, r, prompts[r.scenario.label])
        sc = pipeline.score_pair(store, r, data[r.scenario.label], q)
        runs.append(pipeline.publish_run(store, r, q, sc, {"flow_run_id": FLOW_RUN_ID}))
    release = aggregate.point_release(store, plan, aggregate.publish_release(store, plan, runs, []))
    return store, release.release_id


def chunk_rows(js: str) -> list[dict]:
    match = re.fullmatch(r"helmflowChunk\((\d+), (.*)\);\n", js, re.DOTALL)
    assert match, js[:200]
    return json.loads(match.group(2))


def judge_notes(store: Store, run_id: str, reasoning: str, rows: list[int]) -> pa.Table:
    """annotations.parquet in the published schema, one verdict per given request row."""
    hashes = store.read_parquet(f"runs/{run_id}/completions.parquet")["request_hash"].to_pylist()
    ids = store.read_parquet(f"runs/{run_id}/requests.parquet")["instance_id"].to_pylist()
    table = pa.Table.from_pylist(
        [
            {
                "instance_id": ids[i],
                "sample_index": 0,
                "request_hash": hashes[i],
                "judge": "offline/judge",
                "template": "wildbench-checklist",
                "template_version": "2",
                "judge_request_hash": f"j{i}",
                "prompt": f"judge prompt quoting {reasoning}",
                "raw_output": f"{reasoning} so: 0.5",
                "score": 0.5,
                "details_json": "{}",
                "error": None,
                "prompt_tokens": 40,
                "output_tokens": 9,
                "cost_usd": 0.0,
                "latency_s": 0.1,
                "reasoning": f"the judge thought about {reasoning}",
                "reasoning_tokens": 5,
            }
            for i in rows
        ],
        schema=ANNOTATION_SCHEMA,
    )
    store.write_parquet(f"runs/{run_id}/annotations.parquet", table)
    return table
