"""The one writer of runs and releases: files hashed while written, the manifest last, a stale manifest
gone before anything is rewritten, and no other module building a manifest or writing one."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from helmflow import layout
from helmflow.integrity import sha256_hex
from helmflow.manifests import ReleaseManifest, RunDataset, RunDeployment, RunManifest, RunScenario, RunVersions
from helmflow.outcomes import FailedCell
from helmflow.publish import ReleaseWriter, RunWriter, lineage, parquet_meta, run_outcome, with_run_ids
from helmflow.storage import Store, encode_parquet

REPO = Path(__file__).resolve().parent.parent
SCHEMA = pa.schema([("instance_id", pa.string()), ("value", pa.float64())])


class Recording(Store):
    """A local store that remembers the order keys were written in."""

    def __init__(self, root: str):
        super().__init__(root)
        self.order: list[str] = []

    def write_bytes(self, key: str, data: bytes) -> str:
        self.order.append(key)
        return super().write_bytes(key, data)

    def writing(self, key: str):
        self.order.append(key)
        return super().writing(key)


def manifest(run_id: str) -> RunManifest:
    return RunManifest(run_id=run_id, status="complete", scenario=RunScenario(name="toy", label="toy"),
                       deployment=RunDeployment(name="m", client="offline", model="m"), adapter={}, metrics={},
                       main_metric="exact_match",
                       versions=RunVersions(scenario_version="s", prompt_version="p", model_version="m",
                                            metric_version="x", run_id=run_id),
                       dataset=RunDataset(revision="r"), lineage=lineage("q", "s"))


def tables(n: int, fail_after: int | None = None):
    for start in range(0, n, 3):
        if fail_after is not None and start >= fail_after:
            raise RuntimeError("killed mid-file")
        ids = [f"i{k}" for k in range(start, min(start + 3, n))]
        yield pa.table({"instance_id": ids, "value": [float(k) for k in range(len(ids))]}, schema=SCHEMA)


def test_a_run_is_hashed_while_written_and_committed_last(tmp_path):
    store = Recording(str(tmp_path))
    meta = parquet_meta(run_id="r1")
    writer = RunWriter(store, "r1", "m", "toy", meta)
    writer.write("stats.parquet", tables(10), SCHEMA, rows_per_group=4)
    writer.write("summary.parquet", next(tables(2)))
    final = writer.commit(manifest("r1"))
    assert store.order[-1] == layout.run_json("r1") and len(store.order) == 3
    ids = {"run_id": "r1", "model": "m", "scenario": "toy"}
    whole = pa.concat_tables(list(tables(10)))
    assert store.read_bytes("runs/r1/stats.parquet") == encode_parquet(with_run_ids(whole, ids), meta, 4)
    assert store.read_bytes("runs/r1/summary.parquet") == encode_parquet(with_run_ids(next(tables(2)), ids), meta)
    stored = RunManifest.model_validate(store.read_json(layout.run_json("r1")))
    assert stored == final
    assert stored.files == ["runs/r1/stats.parquet", "runs/r1/summary.parquet"]
    assert stored.sha256 == {n: sha256_hex(store.read_bytes(f"runs/r1/{n}")) for n in ("stats.parquet", "summary.parquet")}
    with pytest.raises(ValueError, match="committed by the writer of r1"):
        writer.commit(manifest("r2"))


def test_a_republication_killed_mid_file_leaves_no_run(tmp_path):
    store = Store(str(tmp_path))
    first = RunWriter(store, "r1", "m", "toy", parquet_meta())
    first.write("stats.parquet", tables(6), SCHEMA, rows_per_group=4)
    first.commit(manifest("r1"))
    second = RunWriter(store, "r1", "m", "toy", parquet_meta(again=True))
    with pytest.raises(RuntimeError, match="killed"):
        second.write("stats.parquet", tables(9, fail_after=3), SCHEMA, rows_per_group=4)
    # the old run.json named bytes that are being replaced: it is gone, and the old file is intact
    assert not store.exists(layout.run_json("r1"))
    assert store.read_parquet("runs/r1/stats.parquet").num_rows == 6
    assert sorted(p.name for p in (tmp_path / "runs" / "r1").iterdir()) == ["stats.parquet"]  # no temporary file left


def test_a_release_is_committed_last_with_the_digests_of_its_files(tmp_path):
    store = Recording(str(tmp_path))
    run = RunWriter(store, "r1", "m", "toy", parquet_meta())
    run.write("summary.parquet", next(tables(2)))
    published = run.commit(manifest("r1"))
    writer = ReleaseWriter(store, "board", "2026-01-01-abcd", parquet_meta(board="board"))
    writer.leaderboard([{"deployment": "m", "score": 0.5}], pa.schema([("deployment", pa.string()), ("score", pa.float64())]))
    writer.runs([run_outcome(store, published)], [FailedCell(run_id="r2", scenario="toy", deployment="n", error="boom")])
    info = writer.commit(ReleaseManifest(board="board", board_version="v", release_id="2026-01-01-abcd", created_at="now",
                                         helmflow_version="0", status="partial"))
    assert store.order[-1] == layout.release_json("board", "2026-01-01-abcd")
    assert info.sha256 == {n: sha256_hex(store.read_bytes(layout.release_file("board", info.release_id, n)))
                           for n in ("leaderboard.parquet", "runs.parquet")}
    rows = store.read_parquet(layout.release_file("board", info.release_id, "runs.parquet")).to_pylist()
    assert [(r["run_id"], r["status"], r["error"]) for r in rows] == [("r1", "complete", None), ("r2", "missing", "boom")]
    assert rows[0]["uri"] == store.url("runs/r1")


def test_manifests_are_built_and_written_in_one_place():
    """No module spells a manifest as a dict literal, and only the writer writes run.json / release.json."""
    literal, writes = [], []
    for path in (REPO / "helmflow").rglob("*.py"):
        text = path.read_text()
        literal += [f"{path.name}: {m.group(0)}" for m in re.finditer(r"Manifest\.model_validate\(\{", text)]
        if path.name != "publish.py":
            writes += [f"{path.name}: {m.group(0)}" for m in
                       re.finditer(r"write_json\(layout\.(run_json|release_json)\(", text)]
    assert literal == [] and writes == []
