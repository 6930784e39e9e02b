"""Hand-written releases for the comparison tests: per-instance stats in the published schemas,
with values chosen so the expected numbers can be worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from helmflow.aggregate import leaderboard_schema
from helmflow.manifests import LatestPointer, ReleaseManifest
from helmflow.publish import RUNS_SCHEMA
from helmflow.records import STAT_SCHEMA
from helmflow.storage import Store

Cells = dict[tuple[str, str], tuple[str, dict[str, float]]]  # (scenario, deployment) -> run id, instance -> value


def write_release(store: Store, board: str, release_id: str, cells: Cells, metric: str = "exact_match",
                  created_at: str | None = None) -> str:
    """runs/<id>/stats.parquet and requests.parquet for each cell, then the release's runs.parquet,
    leaderboard.parquet (scores only), release.json and latest.json."""
    runs = []
    for (scenario, deployment), (run_id, values) in cells.items():
        ids = list(values)
        store.write_parquet(f"runs/{run_id}/stats.parquet", pa.Table.from_pylist(
            [{"instance_id": i, "split": "test", "name": metric, "value": v} for i, v in values.items()]
            + [{"instance_id": i, "split": "test", "name": "latency_s", "value": 0.5} for i in ids],
            schema=STAT_SCHEMA))
        store.write_parquet(f"runs/{run_id}/requests.parquet", pa.table({"instance_id": ids}))
        score = sum(values.values()) / len(values) if values else None
        runs.append({"deployment": deployment, "scenario": scenario, "run_id": run_id, "status": "complete",
                     "main_metric": metric, "score": score, "ci_low": None, "ci_high": None, "error_rate": 0.0,
                     "cost_usd": 0.0, "prompt_tokens": 0, "output_tokens": 0, "judge_cost_usd": 0.0, "error": None,
                     "uri": store.url(f"runs/{run_id}")})
    prefix = f"leaderboards/{board}/{release_id}"
    store.write_parquet(f"{prefix}/runs.parquet", pa.Table.from_pylist(runs, schema=RUNS_SCHEMA))
    labels = list(dict.fromkeys(s for s, _ in cells))
    board_rows = [{"deployment": m, "cost_usd": 0.0, "prompt_tokens": 0, "output_tokens": 0, "missing": 0,
                   **{lab: r["score"] for lab in labels for r in runs if r["scenario"] == lab and r["deployment"] == m}}
                  for m in dict.fromkeys(d for _, d in cells)]
    store.write_parquet(f"{prefix}/leaderboard.parquet", pa.Table.from_pylist(board_rows, schema=leaderboard_schema(labels)))
    created = created_at or datetime.now(UTC).isoformat()
    store.write_json(f"{prefix}/release.json", ReleaseManifest.model_validate({
        "board": board, "board_version": "hand-written", "release_id": release_id, "created_at": created,
        "status": "complete", "scenarios": list(dict.fromkeys(s for s, _ in cells)),
        "models": list(dict.fromkeys(d for _, d in cells)), "run_ids": sorted(r["run_id"] for r in runs),
        "failed": [], "helmflow_version": "test"}).to_json())
    store.write_json(f"leaderboards/{board}/latest.json", LatestPointer(
        release_id=release_id, status="complete", created_at=created, uri=store.url(prefix)).to_json())
    return release_id
