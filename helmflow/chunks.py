"""A run's rows a chunk of instances at a time: scoring holds one chunk as objects, never the run.

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

CHUNK_INSTANCES = 1000  # instances scored at once (the row groups of the files are 1,000 rows too)


def instance_chunks(instance_ids: pa.Array | pa.ChunkedArray, size: int = CHUNK_INSTANCES) -> Iterator[np.ndarray]:
    """Row numbers (ascending) of each chunk of ``size`` whole instances, instances in order of first
    appearance: every row of an instance is in the same chunk."""
    first = pc.unique(instance_ids)  # in order of first appearance
    ordinal = np.asarray(pc.index_in(instance_ids, value_set=first), dtype=np.int64)
    rows = np.argsort(ordinal, kind="stable")
    bounds = np.searchsorted(ordinal[rows], np.arange(0, len(first) + size, size))
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if hi > lo:
            yield np.sort(rows[lo:hi])


class Rows:
    """Parquet files with the same rows (a run's requests and completions), read by row numbers."""

    def __init__(self, store: Store, *keys: str):
        self._stack = ExitStack()
        self.files = [pq.ParquetFile(self._stack.enter_context(store.open(k))) for k in keys]
        counts = [self.files[0].metadata.row_group(g).num_rows for g in range(self.files[0].num_row_groups)]
        self._starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    def __enter__(self) -> Rows:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def read(self, rows: np.ndarray) -> list[pa.Table]:
        """Rows ``rows`` (ascending) of each file, in that order."""
        if not len(rows):
            return [f.schema_arrow.empty_table() for f in self.files]
        groups = np.unique(np.searchsorted(self._starts, rows, side="right") - 1)
        sizes = self._starts[groups + 1] - self._starts[groups]
        offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # where each group starts in what is read
        group_of = np.searchsorted(groups, np.searchsorted(self._starts, rows, side="right") - 1)
        local = pa.array(rows - self._starts[groups][group_of] + offset[group_of])
        return [f.read_row_groups(groups.tolist()).take(local) for f in self.files]
