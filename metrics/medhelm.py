"""MedHELM's rule-scored metrics, computed as HELM computes them, quirks included, with a corrected number
beside each quirk that makes HELM's number plainly wrong.

``medcalc_bench_accuracy`` (``medcalc_bench_metrics.py``): the first completion, stripped, against the one
reference. Categories ``risk``, ``severity`` and ``diagnosis``: exact string match. ``date``: a reference
shaped ``('N weeks', 'M days')`` is checked as a duration in days within [lower, upper] (same shape); any
other date is parsed ``%m/%d/%Y`` and checked within [lower, upper]. ``dosage conversion`` and ``physical``:
``float(prediction)`` within [float(lower), float(upper)]. Anything that does not parse scores 0, and so does
every other category: HELM raises "not supported" for ``lab`` (MedCalc-Bench's lab-value calculators) and
catches it as a wrong answer. ``medcalc_bench_range_accuracy`` is the same with ``lab`` (and any other
numeric category) checked within its range like ``physical``.

``medec_error_flag_accuracy`` / ``medec_error_sentence_accuracy`` (``medec_metrics.py``): the prediction is
"no error" only when it is exactly ``CORRECT``; otherwise its leading digits are the sentence id (-2 when
none). HELM parses the gold sentence id with ``int()`` of the whole reference (``"<id> <corrected
sentence>"``, full stops removed), which always fails, so its gold id is -1 and its sentence accuracy on
notes with an error is always 0. ``medec_error_sentence_id_accuracy`` reads the gold id as the reference's
leading digits (what the metric means to compare).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput

DURATION = re.compile(r"\('(\d+) weeks', '(\d+) days'\)")
EXACT_CATEGORIES = ("risk", "severity", "diagnosis")
HELM_NUMERIC_CATEGORIES = ("dosage conversion", "physical")


def _days(text: str) -> int:
    found = DURATION.match(text)
    if not found:
        raise ValueError(f"Invalid format: {text}")
    weeks, days = map(int, found.groups())
    return weeks * 7 + days


def _date(text: str) -> datetime:
    return datetime.strptime(text, "%m/%d/%Y")


def medcalc_correct(prediction: str, reference: str, extra: dict[str, Any], numeric: tuple[str, ...]) -> int:
    """HELM's ``evaluate_generation`` for one stripped prediction; ``numeric``: the categories checked as numbers."""
    category = extra.get("category")
    if category in EXACT_CATEGORIES:
        return int(prediction == reference)
    lower, upper = str(extra.get("lower_limit")), str(extra.get("upper_limit"))
    try:
        if category == "date":
            if DURATION.match(reference):
                return int(_days(lower) <= _days(prediction) <= _days(upper))
            return int(_date(lower) <= _date(prediction) <= _date(upper))
        if category in numeric:
            return int(float(lower) <= float(prediction) <= float(upper))
    except ValueError:
        return 0
    return 0  # HELM: "Category ... not supported", caught as a wrong answer


def _medcalc(x: MetricInput, name: str, numeric: tuple[str, ...] | None) -> dict[str, float]:
    if not x.completions or not x.instance.references:
        return {}
    category: Any = x.instance.extra.get("category")
    cats: tuple[str, ...] = numeric if numeric is not None else (*HELM_NUMERIC_CATEGORIES, category)
    score = medcalc_correct(x.completions[0].text.strip(), x.instance.references[0].text, x.instance.extra, cats)
    return {name: float(score)}


@metric("medcalc_bench_accuracy", version="1", helm=HelmEquivalent(("medcalc_bench_accuracy",)))
def medcalc_bench_accuracy(x: MetricInput) -> dict[str, float]:
    return _medcalc(x, "medcalc_bench_accuracy", HELM_NUMERIC_CATEGORIES)


@metric("medcalc_bench_range_accuracy", version="1")
def medcalc_bench_range_accuracy(x: MetricInput) -> dict[str, float]:
    """HELM's, with every category that is not exact-match or a date checked as a number within its range."""
    return _medcalc(x, "medcalc_bench_range_accuracy", None)


def medec_prediction(text: str) -> tuple[int, int]:
    """(error flag, sentence id) as HELM reads a prediction: ``CORRECT`` exactly, else leading digits or -2."""
    text = text.strip()
    if text == "CORRECT":
        return 0, -1
    found = re.match(r"^(\d+)", text)
    return 1, int(found.group(1)) if found else -2


def medec_gold(reference: str, helm: bool) -> tuple[int, int]:
    """(error flag, sentence id) of the reference; ``helm``: HELM's ``int()`` of the whole text (-1 on failure)."""
    text = reference.replace(".", "").strip()
    if text == "CORRECT":
        return 0, -1
    if helm:
        try:
            return 1, int(text)
        except ValueError:
            return 1, -1
    found = re.match(r"^(\d+)", text)
    return 1, int(found.group(1)) if found else -1


def medec_scores(prediction: str, reference: str, helm: bool = True) -> tuple[int, int]:
    """(flag accuracy, sentence accuracy) for one instance."""
    gold_flag, gold_id = medec_gold(reference, helm)
    flag, sentence = medec_prediction(prediction)
    flag_ok = int(flag == gold_flag)
    if gold_flag == 1 and flag == 1:
        return flag_ok, int(sentence == gold_id)
    return flag_ok, int(gold_flag == 0 and flag == 0)


def _medec(x: MetricInput, name: str, index: int, helm: bool = True) -> dict[str, float]:
    golds = x.correct_texts
    if not x.completions or not golds:
        return {}
    return {name: float(medec_scores(x.completions[0].text, golds[0], helm)[index])}


@metric("medec_error_flag_accuracy", version="1", helm=HelmEquivalent(("medec_error_flag_accuracy",)))
def medec_error_flag_accuracy(x: MetricInput) -> dict[str, float]:
    return _medec(x, "medec_error_flag_accuracy", 0)


@metric("medec_error_sentence_accuracy", version="1", helm=HelmEquivalent(("medec_error_sentence_accuracy",)))
def medec_error_sentence_accuracy(x: MetricInput) -> dict[str, float]:
    return _medec(x, "medec_error_sentence_accuracy", 1)


@metric("medec_error_sentence_id_accuracy", version="1")
def medec_error_sentence_id_accuracy(x: MetricInput) -> dict[str, float]:
    return _medec(x, "medec_error_sentence_id_accuracy", 1, helm=False)


ICD_CODE = re.compile(r"\b[A-Z]\d{1,3}(?:\.\d{1,4})?\.?\b")  # HELM's pattern, after removing "**"


def icd_codes(text: str) -> set[str]:
    """HELM's ``extract_icd_codes``: bold markers removed, codes matched, a trailing full stop dropped."""
    if not text:
        return set()
    return {code.rstrip(".").strip() for code in ICD_CODE.findall(re.sub(r"\*\*", "", text))}


def billing_scores(prediction: str, references: list[str]) -> dict[str, float]:
    """HELM's micro precision, recall and F1 of one instance's code sets (scikit-learn, zero_division=0)."""
    gold = set().union(*(icd_codes(r) for r in references if r)) if references else set()
    pred = icd_codes(prediction)
    tp, fp, fn = len(gold & pred), len(pred - gold), len(gold - pred)
    return {"mimiciv_billing_code_precision": tp / (tp + fp) if tp + fp else 0.0,
            "mimiciv_billing_code_recall": tp / (tp + fn) if tp + fn else 0.0,
            "mimiciv_billing_code_f1": 2 * tp / (2 * tp + fp + fn) if tp else 0.0}


@metric("mimiciv_billing_code_f1", version="1", helm=HelmEquivalent(
    ("mimiciv_billing_code_precision", "mimiciv_billing_code_recall", "mimiciv_billing_code_f1")))
def mimiciv_billing_code_f1(x: MetricInput) -> dict[str, float]:
    if not x.completions or not x.instance.references:
        return {}
    return billing_scores(x.completions[0].text.strip(), [r.text for r in x.instance.references])
