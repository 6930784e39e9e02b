"""Is a board's exact release already published? Answered from storage alone, before Prefect starts.

An unchanged board rerun through Prefect finds every task ``Cached`` and writes nothing, but pays
Prefect's start-up and per-task-run overhead to learn it. ``helmflow run`` asks this module first:
when every run of the plan has a complete ``run.json``, the release of exactly that run set exists
with its files, and ``latest.json`` points at it, the CLI prints that release and exits 0 without a
flow run (``--force-flow`` skips the check). Deployment runs never ask: they always go through Prefect.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from helmflow import layout
from helmflow.pipeline import publication_problem
from helmflow.plan.records import BoardPlan
from helmflow.storage import Store, safe_key
from helmflow.versions import release_hash

RELEASE_FILES = (layout.RELEASE_JSON, "leaderboard.parquet", "runs.parquet")


def published_release(store: Store, plan: BoardPlan) -> dict[str, Any] | None:
    """The summary ``helmflow run`` prints for this plan's release, or ``None`` when anything is
    missing or different (then the flow runs and fills it in)."""
    name = safe_key(plan.spec.name)
    pointer_key = layout.latest(name, subset=plan.subset)  # the pointer this kind of run moves
    if not store.exists(pointer_key):
        return None
    pointer = store.read_json(pointer_key)
    run_ids = sorted(r.run_id for r in plan.runs)
    release_id = pointer.get("release_id", "")
    if pointer.get("status") != "complete" or not release_id.endswith(f"-{release_hash(plan.board_version, run_ids)}"):
        return None
    if not all(store.exists(layout.release_file(name, release_id, f)) for f in RELEASE_FILES):
        return None
    release = store.read_json(layout.release_json(name, release_id))
    if release.get("status") != "complete" or sorted(release.get("run_ids", [])) != run_ids:
        return None
    markers = [store.path(layout.run_json(run_id)) for run_id in run_ids]
    try:  # one batched call (concurrent GETs on S3) rather than one round trip per run
        bodies = store.fs.cat(markers, on_error="raise")
    except FileNotFoundError:
        return None
    if len(bodies) != len(markers) or any(json.loads(b).get("status") != "complete" for b in bodies.values()):
        return None
    if any(publication_problem(store, run_id) for run_id in run_ids):  # a file whose sha256 moved: republish
        return None
    table = store.read_parquet(layout.release_file(name, release_id, "leaderboard.parquet")).to_pylist()
    return board_summary(plan, release_id=release_id, uri=store.url(layout.release_dir(name, release_id)),
                         status="complete", wrote=False, table=table)


def board_summary(plan: BoardPlan, *, release_id: str, uri: str, status: str, wrote: bool,
                  table: list[dict[str, Any]], pointer: str | None = None,
                  failed: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """What ``helmflow run`` prints of a release, built the same way whether the flow ran or the
    release was found already published, so a cached rerun prints the same board as the first run."""
    return {
        "board": plan.spec.name,
        "release_id": release_id,
        "uri": uri,
        "status": status,
        "wrote": wrote,
        "pointer": pointer,
        "subset": plan.selection,
        "table": table,
        "scenarios": [s.label for s in plan.scenarios],
        "metric_groups": [{"name": g.name, "columns": [c.key for c in g.columns], "aggregation": g.aggregation}
                          for g in plan.spec.metric_groups],
        "failed": list(failed),
    }
