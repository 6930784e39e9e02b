"""A two-model, two-scenario board run with the pipeline's own stages (no Prefect): releases and their
pointers, integrity checks."""

from __future__ import annotations

import textwrap

from helmflow import aggregate, pipeline
from helmflow.outcomes import ReleaseOutcome, RunOutcome
from helmflow.storage import Store

TINY = textwrap.dedent("""
    name: tiny
    version: "1"
    models: [offline/solver, offline/echo]
    max_instances: 3
    scenarios:
      - name: arithmetic
        params: {digits: 2, ops: "+"}
        label: add-2
      - name: dyck_language
        params: {num_parenthesis_pairs: 2}
        label: dyck-2
""")



def run_board(store: Store, plan) -> list[RunOutcome]:
    """Every pair through download → adapt → query → score → publish (what the flow's tasks call)."""
    data = {s.label: pipeline.download_scenario(store, s) for s in plan.all_scenarios}
    prompts = {s.label: pipeline.adapt_scenario(store, s, data[s.label]) for s in plan.all_scenarios}
    outs = []
    for r in plan.runs:
        q = pipeline.query_pair(store, r, prompts[r.scenario.label])
        outs.append(pipeline.publish_run(store, r, q, pipeline.score_pair(store, r, data[r.scenario.label], q)))
    return outs


def release(store: Store, plan, runs=None) -> ReleaseOutcome:
    runs = run_board(store, plan) if runs is None else runs
    return aggregate.point_release(store, plan, aggregate.publish_release(store, plan, runs, []))


def pointer(store: Store, name: str = "latest.json") -> str | None:
    key = f"leaderboards/tiny/{name}"
    return store.read_json(key)["release_id"] if store.exists(key) else None
