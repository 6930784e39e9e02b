"""Efficiency and cost: what each instance took (mean over its samples).

A reasoning deployment's instances (requests with ``reasoning`` options) also get ``reasoning_tokens``
(mean over the samples) and ``truncated_in_reasoning`` (1 when a sample ran out of tokens while still
reasoning, so it has no answer to score): the run's mean of the latter is the share the board shows.
"""

from __future__ import annotations

from statistics import fmean

from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput


@metric("efficiency", version="1", scores_errors=True)
def efficiency(x: MetricInput) -> dict[str, float]:
    done = [c for c in x.completions if c.ok]
    stats = {
        "num_requests": float(len(x.completions)),
        "error": float(any(not c.ok for c in x.completions)),
        "prompt_truncated": float(any(r.prompt_truncated for r in x.requests)),
        "num_train_instances": fmean(r.num_train_instances for r in x.requests) if x.requests else 0.0,
    }
    if done:
        stats |= {
            "latency_s": fmean(c.latency_s for c in done),
            "prompt_tokens": fmean(c.prompt_tokens for c in done),
            "output_tokens": fmean(c.output_tokens for c in done),
            "cost_usd": sum(c.cost_usd for c in done),
        }
    if any(r.body.reasoning is not None for r in x.requests):  # other runs' stats stay as they were
        stats["truncated_in_reasoning"] = float(any(c.truncated_in_reasoning for c in done))
        if done:
            stats["reasoning_tokens"] = fmean(c.reasoning_tokens for c in done)
    return stats
