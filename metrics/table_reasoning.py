"""ToRR's per-instance scores, as unitxt computes them after each card template's post-processors.

- ``f1_strings`` (WikiTQ; unitxt's ``F1Strings``): the output and each reference go through
  ``take_first_non_empty_line``, ``to_list_by_comma_space`` (a list split on ", ") and
  ``str_to_float_format``, which cannot turn a list into a float and so returns the list's ``str``
  (``['26']``). The references are joined by spaces, both sides are tokenised with spaCy's English
  tokenizer, lower-cased, and F1 is taken over the token multisets. The brackets and quotes of the list's
  ``str`` are tokens too, so a wrong one-word answer still scores 0.8 (4 of 5 tokens): HELM's number.
- ``f1_strings_answers``: the same F1 over the answers' own tokens (the list's items, not its ``str``), so
  a wrong answer scores 0. helmflow's corrected number beside HELM's.
- ``accuracy`` (TabFact, TURL; unitxt's ``Accuracy`` after ``take_first_non_empty_line`` and
  ``lower_case_till_punc``): 1 when the processed output equals a processed reference.

- ``rougeL`` of the TableBench sets (metric ``tablebench_rougeL``): the same ROUGE-L after their cards'
  post-processors (first line, lower case, punctuation and articles removed, whitespace fixed) on both sides.
- ``f1_micro`` (TURL; unitxt's ``F1MicroMultiLabel`` on one instance): the output's and the reference's
  first line, lower-cased, split on ","; the reference's types are the only classes.

- ``rougeL`` (SciGen; unitxt's ``Rouge``, the card's template lower-casing both sides): Google's
  rouge-score ROUGE-L F-measure **without** a stemmer, the best over the references (``score_multi``).
  HELM's other boards' ``rouge_l`` stems (Porter), so the two differ on inflected words.

spaCy's tokenizer is ``spacy.blank("en")``: the rules ``en_core_web_sm``'s tokenizer is built from (unitxt
loads that model with every other component disabled), without the model download.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import cache
from typing import Any

from helmflow.metrics import HelmEquivalent, across_runs, metric
from helmflow.metrics.base import MetricInput


def first_line(text: str) -> str:
    """unitxt's ``TakeFirstNonEmptyLine`` (which takes the first line of the stripped text)."""
    return str(text).strip().split("\n")[0].strip()


def comma_list(text: str) -> list[str]:
    """unitxt's ``ToListByCommaSpace``: split on ", ", each item stripped."""
    return [part.strip() for part in text.split(", ")]


def float_format(value: Any) -> str:
    """unitxt's ``StrToFloatFormat``: ``str(float(v))``, else ``str(v)`` (a list: its ``str``)."""
    try:
        return str(float(value))
    except (TypeError, ValueError):
        return str(value)


def lower_till_punctuation(text: str) -> str:
    """unitxt's ``LowerCaseTillPunc``: lower-cased, cut at the first of ``. , ! ? ;``."""
    low = text.lower()
    found = re.search(r"[.,!?;]", low)
    return low[: found.start()] if found else low


@cache
def _tokenizer() -> Any:
    import spacy

    return spacy.blank("en")


def tokens(text: str) -> Counter[str]:
    return Counter(t.text.lower() for t in _tokenizer()(text))


def token_f1(references: list[str], prediction: str) -> float:
    """unitxt's ``F1Strings.compute``: token-multiset F1 of the prediction against the joined references."""
    ref, pred = tokens(" ".join(references)), tokens(prediction)
    hits = sum((ref & pred).values())
    if hits == 0:
        return 0.0
    precision, recall = hits / sum(pred.values()), hits / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def wikitq_f1(golds: list[str], output: str) -> float:
    """HELM's ``f1_strings`` on one output: each side as WikiTQ's template leaves it (the list's ``str``)."""
    processed = [float_format(comma_list(first_line(g))) for g in golds]
    return token_f1(processed, float_format(comma_list(first_line(output))))


def answers_f1(golds: list[str], output: str) -> float:
    """The corrected F1: the answers' own items, joined by spaces, without the list's brackets and quotes."""
    items = [" ".join(float_format(a) for a in comma_list(first_line(g))) for g in golds]
    return token_f1(items, " ".join(float_format(a) for a in comma_list(first_line(output))))


def _output(x: MetricInput) -> str | None:
    return x.completions[0].text if x.completions else None


@metric("f1_strings", version="1", requires=("spacy",), extra="torr", helm=HelmEquivalent(("f1_strings",)))
def f1_strings(x: MetricInput) -> dict[str, float]:
    output = _output(x)
    return {} if output is None or not x.correct_texts else {"f1_strings": wikitq_f1(x.correct_texts, output)}


@metric("f1_strings_answers", version="1", requires=("spacy",), extra="torr")
def f1_strings_answers(x: MetricInput) -> dict[str, float]:
    output = _output(x)
    return {} if output is None or not x.correct_texts else {"f1_strings_answers": answers_f1(x.correct_texts, output)}


def label_accuracy(golds: list[str], output: str) -> float:
    said = lower_till_punctuation(first_line(output))
    return float(said in [lower_till_punctuation(first_line(g)) for g in golds])


@metric("accuracy", version="1", helm=HelmEquivalent(("accuracy",)))
def accuracy(x: MetricInput) -> dict[str, float]:
    output = _output(x)
    return {} if output is None or not x.correct_texts else {"accuracy": label_accuracy(x.correct_texts, output)}


@cache
def _rouge_l_unstemmed() -> Any:
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeL"], use_stemmer=False)


def unitxt_rouge_l(golds: list[str], output: str) -> float:
    """unitxt's ``Rouge`` rougeL of one output (after the card's lower-casing), best over the references."""
    return float(_rouge_l_unstemmed().score_multi([g.lower() for g in golds], output.lower())["rougeL"].fmeasure)


@metric("rougeL", version="1", requires=("rouge_score",), extra="torr", helm=HelmEquivalent(("rougeL",)))
def rouge_l_unitxt(x: MetricInput) -> dict[str, float]:
    output = _output(x)
    return {} if output is None or not x.correct_texts else {"rougeL": unitxt_rouge_l(x.correct_texts, output)}


def tablebench_answer(text: str) -> str:
    """The TableBench cards' post-processors: ``take_first_non_empty_line``, ``lower_case``,
    ``remove_punctuations`` (every ``string.punctuation`` character dropped), ``remove_articles`` (each
    whole-word a / an / the becomes a space) and ``fix_whitespace`` (runs of whitespace become one space)."""
    low = first_line(text).lower()
    bare = "".join(c for c in low if c not in _PUNCTUATION)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", bare).split())


_PUNCTUATION = frozenset(string.punctuation)


def tablebench_rouge_l(golds: list[str], output: str) -> float:
    """unitxt's ``Rouge`` rougeL on the TableBench cards' processed output and references, best over them."""
    scores = _rouge_l_unstemmed().score_multi([tablebench_answer(g) for g in golds], tablebench_answer(output))
    return float(scores["rougeL"].fmeasure)


@metric("tablebench_rougeL", version="1", requires=("rouge_score",), extra="torr")
def tablebench_rouge(x: MetricInput) -> dict[str, float]:
    """The ``rougeL`` stat of the TableBench sets (HELM's column name), after their cards' post-processors."""
    output = _output(x)
    return {} if output is None or not x.correct_texts else {"rougeL": tablebench_rouge_l(x.correct_texts, output)}


def comma_items(text: str) -> list[str]:
    """The TURL card's post-processors: ``take_first_non_empty_line``, ``lower_case``, ``to_list_by_comma``
    (split on ",", each item stripped)."""
    return [part.strip() for part in first_line(text).lower().split(",")]


def f1_micro_one(golds: list[str], output: str) -> float | None:
    """unitxt's ``F1MicroMultiLabel`` on one instance: the classes are the reference's types only, so a
    predicted type outside them is dropped (never a false positive): 2 TP / (2 TP + FN), or 0 with no hit;
    None (unitxt's NaN) when the reference has no type."""
    reference = set(comma_items(golds[0]))
    if not reference:
        return None
    hits = len(reference & set(comma_items(output)))
    return 2 * hits / (2 * hits + len(reference) - hits) if hits else 0.0


@metric("f1_micro", version="1", helm=HelmEquivalent(("f1_micro",)))
def f1_micro(x: MetricInput) -> dict[str, float]:
    output = _output(x)
    score = None if output is None or not x.correct_texts else f1_micro_one(x.correct_texts, output)
    return {} if score is None else {"f1_micro": score}


@across_runs("variant_robustness", version="1",
             description="ToRR's robustness: per instance, 1 - (max - min) of the main metric over the group's runs")
def variant_robustness(values: list[float]) -> float:
    """HELM's ``ToRRRobustnessSummarizer``: an instance scored by one run only counts as 1."""
    return 1.0 - (max(values) - min(values))
