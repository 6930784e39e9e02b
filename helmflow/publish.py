"""The one writer of published runs and releases (the storage contract's ``runs/`` and ``leaderboards/``).

A board's run (``pipeline.publish_run``), an imported HELM run (``helmflow.helm.importer``), a board's
release (``aggregate.publish_release``) and an imported board's release all go through the two
writers here, so every publication has the same shape and the same commit order:

- :class:`RunWriter` writes ``runs/<run_id>/<file>.parquet`` one file at a time (tables streamed in
  row groups, each led by the run-id columns), hashing the bytes as they are written, then
  :meth:`RunWriter.commit` writes ``run.json`` last with the files and their sha256 filled in.
  A stale ``run.json`` is removed before the first file is rewritten: no run.json, no run.
- :class:`ReleaseWriter` writes ``leaderboard.parquet`` and ``runs.parquet``, then ``release.json``
  last with their sha256.

Each write is atomic (``Store.writing``/``Store.write_bytes``): a reader sees a file whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

import helmflow
from helmflow import layout, versions
from helmflow.integrity import sha256_hex
from helmflow.manifests import ReleaseManifest, RunLineage, RunManifest
from helmflow.outcomes import FailedCell, RunOutcome
from helmflow.records import RUN_ID_FIELDS
from helmflow.storage import Store, encode_parquet, parquet_writer

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


def parquet_meta(**kv: Any) -> dict[str, str]:
    """Parquet key-value metadata: the helmflow version plus ``helmflow.<k>`` for each of ``kv``."""
    base = {"helmflow.version": helmflow.__version__}
    base.update({f"helmflow.{k}": v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in kv.items()})
    return base


def finite(x: float | None) -> float | None:
    """NaN (no value) as None, for JSON and Parquet readers."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def lineage(query_key: str, score_key: str, **ids: Any) -> RunLineage:
    """Where a run came from: this helmflow, its commit, the stage keys, now, and ``ids`` (Prefect's run ids)."""
    return RunLineage(helmflow_version=helmflow.__version__, git_commit=versions.git_commit(), query_key=query_key,
                      score_key=score_key, published_at=datetime.now(UTC).isoformat(), **ids)


# --------------------------------------------------------------------------- runs
def with_run_ids(table: pa.Table, ids: dict[str, str]) -> pa.Table:
    """``table`` with the run's id, model and scenario as its first columns (``records.RUN_ID_FIELDS``):
    a reader of ``runs/*/<file>`` across runs (pyarrow.dataset, duckdb) needs no join to know whose row it is.
    A table that has them already (republishing) keeps them."""
    for i, (name, type_) in enumerate(RUN_ID_FIELDS):
        if name not in table.column_names:
            table = table.add_column(i, pa.field(name, type_), pa.array([ids[name]] * table.num_rows, type_))
    return table


def regrouped(tables: Iterable[pa.Table], rows: int, schema: pa.Schema) -> Iterator[pa.Table]:
    """``tables``' rows again, cut into tables of exactly ``rows`` (the last one fewer; one empty table
    when there are none), so each becomes one row group where the file is cut its own way."""
    held: list[pa.Table] = []
    count, wrote = 0, False
    for table in tables:
        held.append(table)
        count += table.num_rows
        while count >= rows:
            merged = pa.concat_tables(held)
            yield merged.slice(0, rows)
            held, count, wrote = [merged.slice(rows)], count - rows, True
    if count or not wrote:
        yield pa.concat_tables(held) if held else schema.empty_table()


class Hashing:
    """A binary file that also hashes what is written to it (the sha256 a manifest records)."""

    def __init__(self, fh: Any):
        self._fh, self._sha = fh, hashlib.sha256()
        self.closed = False

    def write(self, data: bytes) -> int:
        self._sha.update(data)
        return self._fh.write(data)

    def tell(self) -> int:
        return self._fh.tell()

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:  # the writer's close; the file is closed by its owner
        self.closed = True

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


class RunWriter:
    """``runs/<run_id>/``: Parquet files hashed while written, then ``run.json`` (:meth:`commit`) last.

    ``model`` and ``scenario`` (the deployment name and scenario label) go into every file's run-id
    columns; ``meta`` is each file's Parquet key-value metadata."""

    def __init__(self, store: Store, run_id: str, model: str, scenario: str, meta: dict[str, str]):
        self.store, self.run_id, self.meta = store, run_id, meta
        self.ids = {"run_id": run_id, "model": model, "scenario": scenario}
        self.digests: dict[str, str] = {}
        self.files: list[str] = []

    def write(self, name: str, tables: pa.Table | Iterable[pa.Table], schema: pa.Schema | None = None,
              rows_per_group: int | None = None) -> str:
        """Write ``tables`` (one table, or an iterable of tables of ``schema``) as ``name``, with the
        run-id columns first, in row groups of ``rows_per_group`` rows (None: Parquet's default, one
        group for a small file); the bytes are those of encoding the concatenation at once. Returns the sha256."""
        if isinstance(tables, pa.Table):
            schema, tables = tables.schema, [tables]
        if schema is None:
            raise ValueError(f"{name}: the schema of a stream of tables is needed")
        self._retire_marker()
        with self.store.writing(layout.run_file(self.run_id, name)) as fh:
            out = Hashing(fh)
            with parquet_writer(out, with_run_ids(schema.empty_table(), self.ids).schema, self.meta) as writer:
                if rows_per_group:
                    parts: Iterable[pa.Table] = regrouped(tables, rows_per_group, schema)
                else:
                    held = list(tables)
                    parts = [pa.concat_tables(held) if held else schema.empty_table()]
                for table in parts:
                    writer.write_table(with_run_ids(table, self.ids), row_group_size=rows_per_group)
        self.digests[name] = out.hexdigest()
        if name not in self.files:
            self.files.append(name)
        return self.digests[name]

    def copy(self, name: str, key: str, rows_per_group: int) -> str:
        """A stored Parquet file (a stage's working file) published as ``name``, a row group at a time."""
        import pyarrow.parquet as pq

        with self.store.open(key) as fh:
            src = pq.ParquetFile(fh)
            return self.write(name, (src.read_row_group(g) for g in range(src.num_row_groups)), src.schema_arrow,
                              rows_per_group)

    def commit(self, manifest: RunManifest) -> RunManifest:
        """``run.json`` from ``manifest`` with the files written and their sha256, written last (atomically)."""
        if manifest.run_id != self.run_id:
            raise ValueError(f"run.json of {manifest.run_id} committed by the writer of {self.run_id}")
        final = manifest.model_copy(update={"files": [layout.run_file(self.run_id, n) for n in self.files],
                                            "sha256": dict(self.digests)})
        self.store.write_json(layout.run_json(self.run_id), final.to_json())
        return final

    def _retire_marker(self) -> None:
        """Before the first file of a republication: the old ``run.json`` goes, so a crash mid-way leaves
        no run whose recorded sha256 name files that were replaced."""
        if not self.files and self.store.exists(layout.run_json(self.run_id)):
            self.store.delete(layout.run_json(self.run_id))


# --------------------------------------------------------------------------- releases
def release_id(digest: str, now: datetime) -> str:
    """``<UTC date>-<release hash>``."""
    return f"{now:%Y-%m-%d}-{digest}"


def existing_release(store: Store, board: str, digest: str) -> str | None:
    """The id of ``board``'s complete publication (release.json present) with this release hash, if any."""
    for existing in store.ls(layout.board_dir(board)):
        rid = existing.rsplit("/", 1)[-1]
        if rid.endswith(f"-{digest}") and store.exists(layout.release_json(board, rid)):
            return rid
    return None


def runs_table(runs: list[RunOutcome], failed: Sequence[FailedCell] = ()) -> pa.Table:
    """``runs.parquet``: one row per published run, then one per failed cell (status ``missing``)."""
    rows = [{**r.model_dump(include=set(RUNS_SCHEMA.names)), "error": None} for r in runs] + [
        {"deployment": f.deployment, "scenario": f.scenario, "run_id": f.run_id, "status": "missing", "error": f.error}
        for f in failed
    ]
    return pa.Table.from_pylist(rows, schema=RUNS_SCHEMA)


def run_outcome(store: Store, manifest: RunManifest) -> RunOutcome:
    """A published run's outcome (what a release lists), read back from its ``run.json``."""
    return RunOutcome(
        run_id=manifest.run_id, scenario=manifest.scenario.label, deployment=manifest.deployment.name,
        status=manifest.status, uri=store.url(layout.run_dir(manifest.run_id)), main_metric=manifest.main_metric,
        score=manifest.score, ci_low=manifest.ci[0], ci_high=manifest.ci[1], error_rate=manifest.error_rate,
        cost_usd=manifest.cost_usd, prompt_tokens=manifest.tokens.prompt, output_tokens=manifest.tokens.output,
        judge_cost_usd=manifest.judge_cost_usd, wrote=False, reasoning_tokens=manifest.tokens.reasoning,
        instances=manifest.instances, truncated_in_reasoning=manifest.truncated_in_reasoning,
    )


class ReleaseWriter:
    """``leaderboards/<board>/<release_id>/``: the release's Parquet files hashed as written, then
    ``release.json`` (:meth:`commit`) last. ``board`` is the storage-safe board name."""

    def __init__(self, store: Store, board: str, release: str, meta: dict[str, str]):
        self.store, self.board, self.release_id, self.meta = store, board, release, meta
        self.digests: dict[str, str] = {}

    @property
    def uri(self) -> str:
        return self.store.url(layout.release_dir(self.board, self.release_id))

    def write(self, name: str, table: pa.Table) -> str:
        data = encode_parquet(table, self.meta)
        self.store.write_bytes(layout.release_file(self.board, self.release_id, name), data)
        self.digests[name] = sha256_hex(data)
        return self.digests[name]

    def leaderboard(self, rows: list[dict[str, Any]], schema: pa.Schema) -> str:
        return self.write("leaderboard.parquet", pa.Table.from_pylist(rows, schema=schema))

    def runs(self, runs: list[RunOutcome], failed: Sequence[FailedCell] = ()) -> str:
        return self.write("runs.parquet", runs_table(runs, failed))

    def commit(self, manifest: ReleaseManifest) -> ReleaseManifest:
        """``release.json`` from ``manifest`` with the files' sha256, written last (atomically)."""
        if manifest.release_id != self.release_id:
            raise ValueError(f"release.json of {manifest.release_id} committed by the writer of {self.release_id}")
        final = manifest.model_copy(update={"sha256": dict(self.digests)})
        self.store.write_json(layout.release_json(self.board, self.release_id), final.to_json())
        return final
