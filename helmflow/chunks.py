"""A run's rows a chunk at a time: querying and scoring hold one chunk as objects, never the run.

A run's requests file lists its instances in sampled order, each instance's requests together, or
one block per trial. :func:`instance_chunks` cuts the rows into chunks of whole instances (in order
of first appearance) and :class:`Rows` reads a chunk's rows through the Parquet row groups that hold
them, so a chunk costs about its own row groups, not the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from helmflow.storage import Store

CHUNK_INSTANCES = 1000  # prompts built, requests sent, instances scored at once (row groups are 1,000 rows too)
#: the text a chunk holds at most (UTF-8 bytes, about): long-context prompts of ~128k tokens (~700 KB each) make
#: chunks of about 10 instances, so a run of them never holds its prompts all at once
CHUNK_BYTES = 8 << 20

T = TypeVar("T")


def batched(items: Iterable[T], size: Callable[[T], int], max_bytes: int | None = None,
            max_items: int | None = None) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``max_items`` (default :data:`CHUNK_INSTANCES`) whose ``size``
    sums to at most ``max_bytes`` (default :data:`CHUNK_BYTES`; an item larger alone is a list alone)."""
    max_bytes, max_items = max_bytes or CHUNK_BYTES, max_items or CHUNK_INSTANCES
    held: list[T] = []
    total = 0
    for item in items:
        n = size(item)
        if held and (len(held) >= max_items or total + n > max_bytes):
            yield held
            held, total = [], 0
        held.append(item)
        total += n
    if held:
        yield held


def rows_within(total_bytes: int, rows: int, max_rows: int | None = None) -> int:
    """How many rows of a file of ``rows`` rows and ``total_bytes`` (uncompressed) make a chunk of about
    :data:`CHUNK_BYTES`: at least 1, at most ``max_rows`` (default :data:`CHUNK_INSTANCES`)."""
    max_rows = max_rows or CHUNK_INSTANCES
    if rows <= 0 or total_bytes <= 0:
        return max_rows
    return max(1, min(max_rows, CHUNK_BYTES * rows // total_bytes))


def parquet_rows_within(f: pq.ParquetFile, max_rows: int | None = None) -> int:
    """:func:`rows_within` for a Parquet file, from its footer (nothing decoded)."""
    meta = f.metadata
    total = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
    return rows_within(total, meta.num_rows, max_rows)


def row_batches(f: pq.ParquetFile, max_rows: int | None = None) -> Iterator[pa.Table]:
    """The file's rows in order, in tables of at most ``max_rows`` rows (default: :func:`parquet_rows_within`),
    decoding one row group at a time (``iter_batches`` would gather several small row groups into one batch)."""
    size = max_rows or parquet_rows_within(f)
    for g in range(f.num_row_groups):
        group = f.read_row_group(g)
        for start in range(0, group.num_rows, size):
            yield group.slice(start, size)


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
        return [read_rows(f, rows) for f in self.files]


def read_rows(f: pq.ParquetFile, rows: np.ndarray) -> pa.Table:
    """Rows ``rows`` (ascending) of ``f``, decoding only the row groups that hold them."""
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
