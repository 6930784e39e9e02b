"""HELM's summarisation metrics (``summarization_metrics.py::SummarizationMetric``) as HELM Classic runs them,
with ``device=cpu``: ROUGE-1/2/L against the reference summaries, and the extractiveness statistics coverage,
density and compression of the summary against the article.

- The texts are HELM's: a leading ``{`` and a trailing ``}`` are removed from the references, the article and
  the (stripped) output before anything is computed.
- ``rouge_1``, ``rouge_2``, ``rouge_l``: Google's ``rouge-score`` F-measure with its Porter stemmer, the max
  over the references (the functions of :mod:`helmflow.metrics.text_overlap`, which are HELM's).
- ``summarization_coverage``, ``summarization_density``, ``summarization_compression``: summ-eval's
  ``DataStatsMetric`` (Grusky et al.'s Newsroom fragments). Both texts are cut into spaCy's English tokens and
  lower-cased; the summary is matched greedily against the article, left to right, into its longest shared
  fragments. Coverage is the share of summary tokens inside a fragment, density the sum of squared fragment
  lengths over the summary's length, compression the article's length over the summary's (0 when a length is 0).
  HELM loads ``en_core_web_sm`` for the tokens; only its tokenizer runs, whose rules are spaCy's English
  defaults, so ``spacy.blank("en")`` gives the same tokens with no model download.

With ``device=cpu`` HELM switches off SummaC (faithfulness) and BERTScore, and it reads QAFactEval and the human
ratings from precomputed files of its own models' outputs: none of the four is computed here (see
the summarisation scenarios' ``helm_differences``, which ``reproduce --explain`` prints).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.first_use import first_use
from helmflow.metrics.text_overlap import rouge_1_score, rouge_2_score, rouge_l_score

ROUGE = {"rouge_1": rouge_1_score, "rouge_2": rouge_2_score, "rouge_l": rouge_l_score}
DATA_STATS = ("summarization_coverage", "summarization_density", "summarization_compression")


def remove_braces(text: str) -> str:
    """HELM's ``_remove_braces``: one leading ``{`` and one trailing ``}`` dropped."""
    if text.startswith("{"):
        text = text[1:]
    if text.endswith("}"):
        text = text[:-1]
    return text


@first_use
def _tokenizer() -> Any:
    import spacy

    return spacy.blank("en")


def spacy_tokens(text: str) -> list[str]:
    return [t.text for t in _tokenizer()(text)]


def fragments(summary: Sequence[str], text: Sequence[str]) -> list[int]:
    """The lengths of the Newsroom extractive fragments of ``summary`` in ``text`` (summ-eval's ``Fragments._match``):
    from each summary position, the longest run shared with the text (scanning the text left to right, resuming
    after each run found), then on past it; a position matching nothing moves on by one."""
    a, b = [t.lower() for t in summary], [t.lower() for t in text]
    out: list[int] = []
    i = 0
    while i < len(a):
        best, j = 0, 0
        while j < len(b):
            if a[i] == b[j]:
                k = 0
                while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                    k += 1
                best = max(best, k)
                j += k
            else:
                j += 1
        if best:
            out.append(best)
            i += best
        else:
            i += 1
    return out


def data_stats(article: str, summary: str) -> dict[str, float]:
    """summ-eval's coverage, density and compression of ``summary`` against ``article`` (spaCy tokens)."""
    text, summ = spacy_tokens(article), spacy_tokens(summary)
    lengths = fragments(summ, text)
    return {
        "summarization_coverage": sum(lengths) / len(summ) if summ else 0.0,
        "summarization_density": sum(n * n for n in lengths) / len(summ) if summ else 0.0,
        "summarization_compression": len(text) / len(summ) if summ else 0.0,
    }


def summary_stats(article: str, references: list[str], output: str) -> dict[str, float]:
    """HELM's ``SummarizationMetric.evaluate_generation`` for one output at ``device=cpu``."""
    refs = [remove_braces(r) for r in references]
    pred = remove_braces(output.strip())
    out = {name: max(fn(ref, pred) for ref in refs) for name, fn in ROUGE.items()} if refs else {}
    return out | data_stats(remove_braces(article), pred)


@metric("summarization", version="1", requires=("rouge_score", "spacy"), extra="classic",
        helm=HelmEquivalent((*ROUGE, *DATA_STATS)))
def summarization(x: MetricInput) -> dict[str, float]:
    """Per instance, HELM's stats of each trial's first output, averaged over trials."""
    article = x.instance.input.text or ""
    refs = [r.text for r in x.instance.references]  # HELM reads every reference (a summary has one)
    per_sample = max(x.adapter.generation.num_outputs, 1)
    first: dict[int, str] = {}
    for request, completion in zip(x.requests, x.completions, strict=True):
        first.setdefault(request.sample_index // per_sample, completion.text)
    per_trial: dict[int, dict[str, float]] = defaultdict(dict)
    for trial, output in first.items():
        per_trial[trial] = summary_stats(article, refs, output)
    if not per_trial:
        return {}
    names = next(iter(per_trial.values()))
    return {name: fmean(stats[name] for stats in per_trial.values()) for name in names}
