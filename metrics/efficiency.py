"""Efficiency and cost: what each instance took (mean over its samples).

HELM Classic's efficiency column is the *denoised* runtime (:func:`denoised_runtime`): HELM's estimate of a
request's time from its prompt and output token counts, by the per-model regression tables HELM ships
(``data/inference_denoised_runtimes.json``, copied unchanged from crfm-helm 0.5.16's ``efficiency_data``,
Apache-2.0; 18 models of 2022, keyed by HELM's deployment names such as ``openai/davinci``).

A reasoning deployment's instances (requests with ``reasoning`` options) also get ``reasoning_tokens``
(mean over the samples) and ``truncated_in_reasoning`` (1 when a sample ran out of tokens while still
reasoning, so it has no answer to score): the run's mean of the latter is the share the board shows.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
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


DENOISED_RUNTIMES = Path(__file__).resolve().parent / "data" / "inference_denoised_runtimes.json"
DENOISED, MEASURED = "inference_denoised_runtime", "inference_runtime"  # HELM's stat names


@functools.cache
def denoised_tables() -> dict[str, dict]:
    """HELM's denoised-runtime regression tables: deployment -> its fit."""
    tables: dict[str, dict] = json.loads(DENOISED_RUNTIMES.read_text())
    return tables


def denoised_runtime(deployment: str, num_prompt_tokens: int, num_output_tokens: int) -> float | None:
    """HELM's ``_compute_estimated_time_from_prompt_size_and_num_output_tokens`` on its denoised table:
    the prompt's time at the smallest tabulated prompt size at least as large, scaled by size (past the
    largest, that one's, scaled), plus ``runtime_per_output_token`` for each output token after the first,
    plus the overhead; None when HELM has no table for the deployment."""
    fit = denoised_tables().get(deployment)
    if fit is None:
        return None
    by_size = {int(k): v for k, v in fit["runtime_for_prompt_tokens"].items()}
    size = next((k for k in sorted(by_size) if num_prompt_tokens <= k), max(by_size))
    runtime = by_size[size] * (num_prompt_tokens / size)
    if num_output_tokens > 0:
        runtime += fit["runtime_per_output_token"] * (num_output_tokens - 1)
    if fit.get("overhead") is not None:
        runtime += fit["overhead"]
    return float(runtime)
