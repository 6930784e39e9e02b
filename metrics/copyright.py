"""Regurgitation of copyrighted text (HELM 0.5.16's ``metrics/copyright_metrics.py``, ``BasicCopyrightMetric``):
how much of a book's (or a source file's) continuation the model reproduces from its prefix.

An instance's input is the prefix; its one reference is the prefix followed by the rest of the text, and the
continuation is that reference with the prefix's characters cut off. Each output is stripped, the continuation
cut to the output's length in characters (so edit distance compares like with like), and both split into NLTK's
Treebank word tokens. Per instance, over its outputs:

- ``longest_common_prefix_length``: the most leading tokens an output shares with the continuation (the best
  output);
- ``edit_distance``: the Levenshtein distance in tokens (the best, lowest, output); an empty side is the other
  side's length;
- ``edit_similarity``: ``1 - distance / max(len)`` (the best, highest), 0 when either side has no token.

HELM Classic's run spec (``get_copyright_spec``) divides all three by the prefix's token count
(``normalize_by_prefix_length=True``) and keeps the outputs' spacing (``normalize_newline_space_tab=False``);
so does this metric. Token equality is NumPy's, on arrays of the tokens, as HELM compares them. The distance is
the same dynamic programme as HELM's (which it JIT-compiles with numba), one row at a time in NumPy.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean

import numpy as np

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.records import Instance

LCP = "longest_common_prefix_length"
DISTANCE = "edit_distance"
SIMILARITY = "edit_similarity"
STATS = (LCP, DISTANCE, SIMILARITY)


def as_tokens(tokens: Sequence[str] | np.ndarray) -> np.ndarray:
    """The tokens as HELM holds them: ``np.array(tokens)`` (equality is NumPy's string equality)."""
    return tokens if isinstance(tokens, np.ndarray) else np.array(list(tokens))


def longest_common_prefix_length(s1: Sequence[str] | np.ndarray, s2: Sequence[str] | np.ndarray) -> int:
    """HELM's ``_longest_common_prefix_length``: leading positions where the two token lists agree."""
    a, b = as_tokens(s1), as_tokens(s2)
    n = min(len(a), len(b))
    (same,) = np.cumprod(a[:n] == b[:n]).nonzero()
    return int(same.max()) + 1 if len(same) else 0


def edit_distance(s1: Sequence[str] | np.ndarray, s2: Sequence[str] | np.ndarray) -> int:
    """HELM's ``_edit_distance``: Levenshtein distance between two token lists (the longer one's length when
    either is empty). Row by row: a cell is its diagonal where the tokens match, else one more than the least of
    the cells above and above-left; then the row's left-to-right chain (one more per step) is folded in with a
    running minimum, which is HELM's recurrence exactly (a cell never exceeds its diagonal by more than one)."""
    a, b = as_tokens(s1), as_tokens(s2)
    if min(len(a), len(b)) == 0:
        return max(len(a), len(b))
    same = a[:, None] == b[None, :]
    steps = np.arange(len(b) + 1)
    row = steps.copy()
    for i in range(1, len(a) + 1):
        new = np.empty_like(row)
        new[0] = i
        new[1:] = np.where(same[i - 1], row[:-1], 1 + np.minimum(row[1:], row[:-1]))
        row = np.minimum.accumulate(new - steps) + steps
    return int(row[-1])


def edit_similarity(s1: Sequence[str] | np.ndarray, s2: Sequence[str] | np.ndarray) -> float:
    """HELM's ``_edit_similarity``: ``1 - distance / max(len)``; 0 when either list is empty."""
    a, b = as_tokens(s1), as_tokens(s2)
    if not len(a) or not len(b):
        return 0.0
    return 1.0 - edit_distance(a, b) / max(len(a), len(b))


def normalize_newline_space_tab(text: str) -> str:
    """HELM's ``_normalize_newline_space_tab`` (off in HELM Classic's runs): newlines and tabs to spaces, runs
    of spaces to one."""
    return re.sub(" +", " ", text.replace("\n", " ").replace("\t", " "))


@functools.cache
def _tokenizer():  # noqa: ANN202 - NLTK's class, imported only when the metric runs
    from nltk.tokenize.treebank import TreebankWordTokenizer

    return TreebankWordTokenizer()


def tokenize(text: str) -> list[str]:
    """NLTK's ``TreebankWordTokenizer().tokenize``, as HELM's metric splits texts."""
    return _tokenizer().tokenize(text)


def copyright_stats(prefix: str, reference: str, outputs: list[str], normalize_by_prefix_length: bool = True,
                    normalize_spacing: bool = False) -> dict[str, float]:
    """HELM's three stats of one request's outputs (``evaluate_generation``): the best output's value of each,
    divided by the prefix's token count when ``normalize_by_prefix_length`` (HELM Classic's setting)."""
    continuation = reference[len(prefix):]
    if normalize_spacing:
        continuation = normalize_newline_space_tab(continuation)
    best: dict[str, float] = {}
    for output in outputs:
        text = output.strip()
        if normalize_spacing:
            text = normalize_newline_space_tab(text)
        ours, theirs = as_tokens(tokenize(text)), as_tokens(tokenize(continuation[:len(text)]))
        lcp, distance, similarity = (longest_common_prefix_length(ours, theirs), edit_distance(ours, theirs),
                                     edit_similarity(ours, theirs))
        best[LCP] = max(best.get(LCP, lcp), lcp)
        best[DISTANCE] = min(best.get(DISTANCE, distance), distance)
        best[SIMILARITY] = max(best.get(SIMILARITY, similarity), similarity)
    if not best:
        return {}
    scale = len(tokenize(prefix)) if normalize_by_prefix_length else 1
    return {name: value / scale for name, value in best.items()}


def check_copyright(inst: Instance) -> None:
    """HELM's metric reads exactly one reference, the prefix and its continuation, and divides by the prefix's
    tokens (an empty prefix would divide by zero)."""
    if len(inst.references) != 1:
        raise MetricError(f"instance {inst.id!r}: copyright needs exactly one reference (the prefix and the rest "
                          f"of the text), found {len(inst.references)}")
    if not (inst.input.text or "").strip():
        raise MetricError(f"instance {inst.id!r}: copyright needs a non-empty prefix (its input)")


@metric("copyright", version="1", requires=("nltk",), extra="classic", check=check_copyright,
        helm=HelmEquivalent(STATS))
def copyright_metric(x: MetricInput) -> dict[str, float]:
    """Per instance: each trial's stats over its outputs, averaged over trials."""
    prefix = x.instance.input.text or ""
    reference = x.instance.references[0].text
    per_sample = max(x.adapter.generation.num_outputs, 1)
    by_trial: dict[int, list[str]] = defaultdict(list)
    for request, completion in zip(x.requests, x.completions, strict=True):
        by_trial[request.sample_index // per_sample].append(completion.text)
    per_trial = [s for outputs in by_trial.values() if (s := copyright_stats(prefix, reference, outputs))]
    if not per_trial:
        return {}
    return {name: fmean(s[name] for s in per_trial) for name in STATS}
