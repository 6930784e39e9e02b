"""HELM's language-modeling numbers (``basic_metrics.py``: ``compute_language_modeling_metrics`` per request and
``compute_perplexity_metrics`` per instance) over the ``language_modeling`` adapter's echoed windows.

Each window's scored tokens are its echoed tokens after its conditioning ones (``num_conditioning_tokens``); an
instance sums their logprobs, their count and their UTF-8 bytes over its windows, and gets
``bits_per_byte = -logprob / bytes / ln 2``, ``logprob_per_byte = logprob / bytes`` and
``perplexity = e^(-logprob / tokens)``; a board's number is the mean over instances, as HELM's. A provider that
returns no logprob for a prompt's first token (OpenAI's ``None``) scores it 0, as HELM's clients do."""

from __future__ import annotations

import math

from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput


def window_sums(tokens: list[str], logprobs: list[float], conditioning: int) -> tuple[float, int, int]:
    """(logprob, tokens, bytes) of one window's scored tokens."""
    scored = list(zip(tokens, logprobs, strict=False))[conditioning:]
    return sum(lp for _, lp in scored), len(scored), sum(len(t.encode("utf-8")) for t, _ in scored)


# No HELM equivalent is declared: HELM computes these three for every run (from any completion's tokens), so
# import-helm would take them for a main metric of runs that are not language modeling.
@metric("bits_per_byte", version="1")
def bits_per_byte(x: MetricInput) -> dict[str, float]:
    logprob, tokens, size = 0.0, 0, 0
    for request, completion in zip(x.requests, x.completions, strict=True):
        if not completion.logprobs:
            return {}  # a provider that scores no prompt: no number, never a 0
        lp, n, b = window_sums(completion.tokens, completion.logprobs, request.num_conditioning_tokens)
        logprob, tokens, size = logprob + lp, tokens + n, size + b
    out: dict[str, float] = {}
    if tokens:
        out["perplexity"] = math.e ** (-logprob / tokens)
    if size:
        out["bits_per_byte"] = -logprob / size / math.log(2)
        out["logprob_per_byte"] = logprob / size
    return out
