"""Score: per-instance stats from the registered metrics, then per-run summaries with intervals."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from helmflow.metrics import METRICS, MetricInput
from helmflow.records import AdapterSpec, Annotation, Completion, Instance, MetricSummary, Request, Stat
from helmflow.stats import counted_ci, mean_ci, pooled_ci, ratio_ci


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


def summarize(stats: list[Stat]) -> list[MetricSummary]:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    prefixes = tuple({c.prefix for m in METRICS.names() for c in METRICS.get(m).counted})
    for s in stats:
        if not (prefixes and s.name.startswith(prefixes)):  # sparse counts: only their Counted numbers summarise them
            groups[(s.name, s.split)].append(s.value)
    out = []
    for (name, split), values in sorted(groups.items()):
        mean, low, high = mean_ci(values)
        out.append(MetricSummary(name=name, split=split, count=len(values), mean=mean, ci_low=low, ci_high=high))
    return sorted(out + pooled_ratios(stats) + pooled_values(stats) + counted_values(stats), key=lambda m: (m.name, m.split))


def pooled_ratios(stats: list[Stat]) -> list[MetricSummary]:
    """The ratios metrics declare (e.g. IFEval's instruction-level accuracy): sum(numerator) /
    sum(denominator) over the instances that have both stats, rather than a mean of per-instance values."""
    value = {(s.split, s.name, s.instance_id): s.value for s in stats}
    out = []
    for name, num, den in sorted({r for m in METRICS.names() for r in METRICS.get(m).ratios}):
        for split in sorted({s.split for s in stats}):
            ids = sorted(i for (sp, n, i) in value if sp == split and n == den and (sp, num, i) in value)
            if ids:
                ratio, low, high = ratio_ci([value[(split, num, i)] for i in ids], [value[(split, den, i)] for i in ids])
                out.append(MetricSummary(name=name, split=split, count=len(ids), mean=ratio, ci_low=low, ci_high=high))
    return out


def pooled_values(stats: list[Stat]) -> list[MetricSummary]:
    """The pooled numbers metrics declare (:class:`helmflow.metrics.Pooled`), per split, over the
    instances that have every stat the number needs."""
    value = {(s.split, s.name, s.instance_id): s.value for s in stats}
    out = []
    for pooled in sorted({p for m in METRICS.names() for p in METRICS.get(m).pooled}, key=lambda p: p.name):
        for split in sorted({s.split for s in stats}):
            ids = sorted({i for (sp, _, i) in value if sp == split and all((sp, n, i) in value for n in pooled.stats)})
            if ids:
                mean, low, high = pooled_ci({n: [value[(split, n, i)] for i in ids] for n in pooled.stats}, pooled.fn,
                                           rows=pooled.rows, bootstrap=pooled.bootstrap, batched=pooled.batched)
                out.append(MetricSummary(name=pooled.name, split=split, count=len(ids), mean=mean, ci_low=low, ci_high=high))
    return out


def counted_values(stats: list[Stat]) -> list[MetricSummary]:
    """The numbers metrics compute from summed sparse counts (:class:`helmflow.metrics.Counted`), per
    split, over the instances that recorded any count of that prefix; none when the number is undefined
    (HELM's bias scores with no demographic word in any output)."""
    out = []
    for counted in sorted({c for m in METRICS.names() for c in METRICS.get(m).counted}, key=lambda c: c.name):
        for split in sorted({s.split for s in stats}):
            mine = [s for s in stats if s.split == split and s.name.startswith(counted.prefix)]
            if not mine:
                continue
            ids = sorted({s.instance_id for s in mine})
            keys = sorted({s.name for s in mine})
            row, col = {i: k for k, i in enumerate(ids)}, {n: k for k, n in enumerate(keys)}
            matrix = np.zeros((len(ids), len(keys)))
            for s in mine:
                matrix[row[s.instance_id], col[s.name]] += s.value
            value, low, high = counted_ci(matrix, lambda sums, fn=counted.fn: fn(dict(zip(keys, sums, strict=True))))
            if not np.isnan(value):
                out.append(MetricSummary(name=counted.name, split=split, count=len(ids), mean=value, ci_low=low, ci_high=high))
    return out
