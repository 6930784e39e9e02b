"""A run's rows a chunk at a time: querying and scoring hold one chunk as objects, never the run.

A run's requests file lists its instances in sampled order, each instance's requests together, or
one block per trial. :func:`instance_chunks` cuts the rows into chunks of whole instances (in order
of first appearance) and :class:`Rows` reads a chunk's rows through the Parquet row groups that hold
them, so a chunk costs about its own row groups, not the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from helmflow.storage import Store

CHUNK_INSTANCES = 1000  # prompts built, requests sent, instances scored at once (row groups are 1,000 rows too)


def instance_chunks(instance_ids: pa.Array | pa.ChunkedArray, size: int | None = None) -> Iterator[np.ndarray]:
    """Row numbers (ascending) of each chunk of ``size`` whole instances (default :data:`CHUNK_INSTANCES`,
    read when called), instances in order of first appearance: every row of an instance is in the same chunk."""
    size = size or CHUNK_INSTANCES
    first = pc.unique(instance_ids)  # in order of first appearance
    ordinal = np.asarray(pc.index_in(instance_ids, value_set=first), dtype=np.int64)
    rows = np.argsort(ordinal, kind="stable")
    bounds = np.searchsorted(ordinal[rows], np.arange(0, len(first) + size, size))
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if hi > lo:
            yield np.sort(rows[lo:hi])


class Rows:
    """Parquet files with the same rows (a run's requests and completions), read by row numbers
    through the row groups that hold them (each file cut into row groups its own way)."""

    def __init__(self, store: Store, *keys: str):
        self._stack = ExitStack()
        self.files = [pq.ParquetFile(self._stack.enter_context(store.open(k))) for k in keys]

    def __enter__(self) -> Rows:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def read(self, rows: np.ndarray) -> list[pa.Table]:
        """Rows ``rows`` (ascending) of each file, in that order."""
        return [_read_rows(f, rows) for f in self.files]


def _read_rows(f: pq.ParquetFile, rows: np.ndarray) -> pa.Table:
    if not len(rows):
        return f.schema_arrow.empty_table()
    counts = [f.metadata.row_group(g).num_rows for g in range(f.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    group_of_row = np.searchsorted(starts, rows, side="right") - 1
    groups = np.unique(group_of_row)
    # where each group starts in what is read
    offset = np.concatenate([[0], np.cumsum(starts[groups + 1] - starts[groups])[:-1]])
    where = np.searchsorted(groups, group_of_row)
    return f.read_row_groups(groups.tolist()).take(pa.array(rows - starts[group_of_row] + offset[where]))
