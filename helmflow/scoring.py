"""Score: per-instance stats from the registered metrics, then per-run summaries with intervals.

A run's stats are summarised from :class:`StatColumns`, a compact columnar copy (about 20 bytes a
stat, where a ``Stat`` object takes about 500), so a run of any size is scored in bounded chunks
(:func:`helmflow.pipeline.score_pair`) and summarised from numbers, not objects."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from helmflow.metrics import METRICS, MetricInput
from helmflow.records import STAT_SCHEMA, AdapterSpec, Annotation, Completion, Instance, MetricSummary, Request, Stat
from helmflow.stats import counted_ci, mean_cis, pooled_ci, ratio_ci


def _apply_counted(fn: Any, keys: list[str], sums: np.ndarray) -> float | None:
    """A counted metric's formula on one bootstrap sample's column sums."""
    return fn(dict(zip(keys, sums, strict=True)))


def score_instances(
    instances: list[Instance],
    requests: list[Request],
    completions: list[Completion],
    adapter: AdapterSpec,
    metric_names: list[str],
    annotations: list[Annotation] | None = None,
) -> list[Stat]:
    by_instance_req: dict[str, list[Request]] = defaultdict(list)
    by_instance_comp: dict[str, list[Completion]] = defaultdict(list)
    for r, c in zip(requests, completions, strict=True):
        by_instance_req[r.instance_id].append(r)
        by_instance_comp[r.instance_id].append(c)
    by_instance_notes: dict[str, list[Annotation]] = defaultdict(list)
    for a in annotations or []:
        by_instance_notes[a.instance_id].append(a)
    metrics = [METRICS.get(n) for n in metric_names]
    for m in metrics:
        m.check_installed()
    stats: list[Stat] = []
    for inst in instances:
        if inst.id not in by_instance_req:
            continue
        x = MetricInput(inst, by_instance_req[inst.id], by_instance_comp[inst.id], adapter, by_instance_notes[inst.id])
        failed = any(not c.ok for c in x.completions)
        for m in metrics:
            if failed and not m.scores_errors:
                continue  # an errored instance has no score, rather than a zero
            for name, value in m.fn(x).items():
                stats.append(Stat(instance_id=inst.id, split=inst.split, name=name, value=float(value)))
    return stats


# --------------------------------------------------------------------------- stats as columns
@dataclass
class StatColumns:
    """A run's stats, one entry per stat in order: ``instance`` indexes ``ids`` (one id per instance),
    ``split`` and ``name`` index ``splits`` and ``names``."""

    ids: pa.Array
    instance: np.ndarray
    split: np.ndarray
    name: np.ndarray
    value: np.ndarray
    splits: list[str]
    names: list[str]

    @classmethod
    def from_stats(cls, stats: list[Stat]) -> StatColumns:
        builder = StatsBuilder()
        builder.add(stats)
        return builder.columns()

    @classmethod
    def of(cls, stats: list[Stat] | StatColumns) -> StatColumns:
        """``stats`` as columns (as they are when they already are)."""
        return stats if isinstance(stats, StatColumns) else cls.from_stats(stats)

    def __len__(self) -> int:
        return len(self.value)

    def table(self, start: int = 0, stop: int | None = None) -> pa.Table:
        """Rows ``start:stop`` as a :data:`STAT_SCHEMA` table."""
        rows = slice(start, stop)
        return pa.table({
            "instance_id": self.ids.take(pa.array(self.instance[rows])),
            "split": pa.array(self.splits, pa.string()).take(pa.array(self.split[rows])),
            "name": pa.array(self.names, pa.string()).take(pa.array(self.name[rows])),
            "value": pa.array(self.value[rows], pa.float64()),
        }, schema=STAT_SCHEMA)

    @cached_property
    def rank(self) -> np.ndarray:
        """Each instance's place in id order (Python's string order is UTF-8 byte order, Arrow's);
        sorted once, though every pooled number, ratio and count of each split orders its instances by it."""
        order = np.asarray(pc.sort_indices(self.ids))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return rank

    def lookup(self, split: int, name: int) -> dict[int, float]:
        """instance -> value of one stat in one split (the last one when a stat repeats)."""
        mask = (self.split == split) & (self.name == name)
        return dict(zip(self.instance[mask].tolist(), self.value[mask].tolist(), strict=True))


class StatsBuilder:
    """Stats gathered chunk by chunk into :class:`StatColumns`: each chunk's ``Stat`` objects become
    a few numbers each, so only the chunk being scored is held as objects.

    With ``ids`` (the run's instances in stored order), each chunk says where its instances are in it
    and the stats come out in that order, as if the run had been scored at once; without, instances
    are numbered as they appear and the stats keep the order they were added in."""

    def __init__(self, ids: pa.Array | None = None) -> None:
        self._ids = ids
        self._seen: dict[str, int] = {}
        self._codes: dict[str, dict[str, int]] = {"split": {}, "name": {}}
        self._parts: list[tuple[np.ndarray, ...]] = []

    def _code(self, kind: str, text: str) -> int:
        return self._codes[kind].setdefault(text, len(self._codes[kind]))

    def add(self, stats: list[Stat], place: dict[str, int] | None = None) -> None:
        """``place``: instance id -> its index in ``ids`` (required with ``ids``)."""
        if place is None:
            place = self._seen
            for s in stats:
                place.setdefault(s.instance_id, len(place))
        self._parts.append((
            np.fromiter((place[s.instance_id] for s in stats), np.int64, len(stats)),
            np.fromiter((self._code("split", s.split) for s in stats), np.int32, len(stats)),
            np.fromiter((self._code("name", s.name) for s in stats), np.int32, len(stats)),
            np.fromiter((s.value for s in stats), np.float64, len(stats)),
        ))

    def columns(self) -> StatColumns:
        instance, split, name, value = (np.concatenate([p[k] for p in self._parts]) if self._parts else np.zeros(0, t)
                                        for k, t in enumerate((np.int64, np.int32, np.int32, np.float64)))
        if self._ids is None:
            ids = pa.array(list(self._seen), pa.string())
        else:  # stored order; an instance's stats stay in the order they were scored
            ids = self._ids
            keep = np.argsort(instance, kind="stable")
            instance, split, name, value = instance[keep], split[keep], name[keep], value[keep]
        return StatColumns(ids, instance, split, name, value, list(self._codes["split"]), list(self._codes["name"]))


# --------------------------------------------------------------------------- summaries
def summarize(stats: list[Stat] | StatColumns) -> list[MetricSummary]:
    cols = StatColumns.of(stats)
    prefixes = tuple({c.prefix for m in METRICS.names() for c in METRICS.get(m).counted})
    ratio_names = {r[0] for m in METRICS.names() for r in METRICS.get(m).ratios}  # a ratio replaces the mean
    means = np.array([not (prefixes and n.startswith(prefixes)) and n not in ratio_names for n in cols.names],
                     dtype=bool)
    # group by (name, split) in string order; a group's values in the order of the stats
    name_rank = np.argsort(np.argsort(np.array(cols.names, dtype=object))) if cols.names else np.zeros(0, np.int64)
    split_rank = np.argsort(np.argsort(np.array(cols.splits, dtype=object))) if cols.splits else np.zeros(0, np.int64)
    keep = np.flatnonzero(means[cols.name]) if len(cols) else np.zeros(0, np.int64)
    key = name_rank[cols.name[keep]] * max(len(cols.splits), 1) + split_rank[cols.split[keep]]
    order = keep[np.argsort(key, kind="stable")]
    sorted_key = np.sort(key, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(sorted_key)) + 1) if len(order) else []
    out = []
    for group, (mean, low, high) in zip(groups, mean_cis([cols.value[g] for g in groups]), strict=True):
        name, split = cols.names[cols.name[group[0]]], cols.splits[cols.split[group[0]]]
        out.append(MetricSummary(name=name, split=split, count=len(group), mean=mean, ci_low=low, ci_high=high))
    return sorted(out + pooled_ratios(cols) + pooled_values(cols) + counted_values(cols),
                  key=lambda m: (m.name, m.split))


def _by_split(cols: StatColumns, names: tuple[str, ...]):
    """For each split (in string order) where every one of ``names`` occurs: the split and
    ``{name: {instance: value}}`` (the last value when a stat repeats)."""
    if not all(n in cols.names for n in names):
        return
    for split in sorted(cols.splits):
        s = cols.splits.index(split)
        yield split, {n: cols.lookup(s, cols.names.index(n)) for n in names}


def _in_id_order(cols: StatColumns, instances: set[int]) -> list[int]:
    rank = cols.rank
    return sorted(instances, key=lambda i: rank[i])


def pooled_ratios(stats: list[Stat] | StatColumns) -> list[MetricSummary]:
    """The ratios metrics declare (e.g. IFEval's instruction-level accuracy): sum(numerator) /
    sum(denominator) over the instances that have both stats, rather than a mean of per-instance values."""
    cols = StatColumns.of(stats)
    out = []
    for name, num, den in sorted({r for m in METRICS.names() for r in METRICS.get(m).ratios}):
        for split, values in _by_split(cols, (num, den)):
            ids = _in_id_order(cols, values[den].keys() & values[num].keys())
            if ids:
                ratio, low, high = ratio_ci([values[num][i] for i in ids], [values[den][i] for i in ids])
                out.append(MetricSummary(name=name, split=split, count=len(ids), mean=ratio, ci_low=low, ci_high=high))
    return out


def pooled_values(stats: list[Stat] | StatColumns) -> list[MetricSummary]:
    """The pooled numbers metrics declare (:class:`helmflow.metrics.Pooled`), per split, over the
    instances that have every stat the number needs."""
    cols = StatColumns.of(stats)
    out = []
    for pooled in sorted({p for m in METRICS.names() for p in METRICS.get(m).pooled}, key=lambda p: p.name):
        for split, values in _by_split(cols, tuple(pooled.stats)):
            ids = _in_id_order(cols, set.intersection(*(set(v) for v in values.values())))
            if ids:
                mean, low, high = pooled_ci({n: [values[n][i] for i in ids] for n in pooled.stats}, pooled.fn,
                                           rows=pooled.rows, bootstrap=pooled.bootstrap, batched=pooled.batched)
                if np.isnan(mean):
                    continue  # undefined for this run: absent, never 0
                out.append(MetricSummary(name=pooled.name, split=split, count=len(ids), mean=mean,
                                         ci_low=low, ci_high=high))
    return out


def counted_values(stats: list[Stat] | StatColumns) -> list[MetricSummary]:
    """The numbers metrics compute from summed sparse counts (:class:`helmflow.metrics.Counted`), per
    split, over the instances that recorded any count of that prefix; none when the number is undefined
    (a demographic-distance score when no output has a demographic word)."""
    cols = StatColumns.of(stats)
    out = []
    for counted in sorted({c for m in METRICS.names() for c in METRICS.get(m).counted}, key=lambda c: c.name):
        names = np.array([n.startswith(counted.prefix) for n in cols.names], dtype=bool)
        for split in sorted(cols.splits):
            mine = (np.flatnonzero((cols.split == cols.splits.index(split)) & names[cols.name]) if len(cols)
                    else np.array([], dtype=np.int64))
            if not len(mine):
                continue
            ids = _in_id_order(cols, set(cols.instance[mine].tolist()))
            keys = sorted({cols.names[k] for k in cols.name[mine].tolist()})
            row, col = {i: k for k, i in enumerate(ids)}, {n: k for k, n in enumerate(keys)}
            matrix = np.zeros((len(ids), len(keys)))
            for i, n, v in zip(cols.instance[mine].tolist(), cols.name[mine].tolist(), cols.value[mine].tolist(),
                               strict=True):
                matrix[row[i], col[cols.names[n]]] += v
            value, low, high = counted_ci(matrix, partial(_apply_counted, counted.fn, keys))
            if not np.isnan(value):
                out.append(MetricSummary(name=counted.name, split=split, count=len(ids), mean=value,
                                         ci_low=low, ci_high=high))
    return out
