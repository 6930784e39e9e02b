"""Reference matching, as HELM's ``evaluate_reference_metrics``: compare outputs with correct references.

Each completion is stripped and, when the request carries an ``output_mapping`` (multiple choice),
mapped to the option it names (after the adapter's ``output_mapping_pattern``, when it has one, picks the label
out of the answer, as HELM's); an unmapped answer scores 0. Per train trial HELM scores the first
sample (``name``) and, with several samples, the best one (``name@k``); trials are then averaged.

Log-likelihood multiple choice (``multiple_choice_separate_original``): each option was sent as a
continuation of the prompt and echoed with logprobs; its score is HELM's, the mean logprob of the
option's tokens (those overlapping the option's characters, located by the tokens' text offsets, or
from the end by their lengths when a provider sends no offsets), and the prediction is the option
with the highest score (the first of equal ones). A trial without logprobs for every option has no
prediction, so no score (never a 0). ``multiple_choice_separate_calibrated`` sends each option a second
time after the answer-free prompt ``Answer:``; its score is then HELM's difference of the two summed
logprobs (not per token).
"""

from __future__ import annotations

import math
import re
import string
from collections import defaultdict
from collections.abc import Callable
from statistics import fmean

from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.records import Completion, Request

MatchFn = Callable[[str, str], float]

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_LETTER = re.compile(r"^\(?([A-Z])\)?(?:[.:)\]]|\s|$)")


def normalize_text(text: str, remove_articles: bool = True) -> str:
    """HELM's (QuAC's) normalization: lowercase, drop punctuation, drop articles, collapse spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join((_ARTICLES.sub(" ", text) if remove_articles else text).split())


def exact_match_score(gold: str, pred: str) -> float:
    return float(bool(pred) and gold.strip() == pred.strip())


def quasi_exact_match_score(gold: str, pred: str) -> float:
    return float(bool(pred) and normalize_text(gold) == normalize_text(pred))


def quasi_leave_articles_exact_match_score(gold: str, pred: str) -> float:
    """Quasi exact match that keeps the articles ("a cat" != "cat")."""
    return float(bool(pred) and normalize_text(gold, False) == normalize_text(pred, False))


def prefix_exact_match_score(gold: str, pred: str) -> float:
    """The output starts with the reference (a model may keep talking after the answer)."""
    return float(bool(pred) and pred.strip().startswith(gold.strip()))


def quasi_prefix_exact_match_score(gold: str, pred: str) -> float:
    return float(bool(pred) and normalize_text(pred).startswith(normalize_text(gold)))


def f1_score_value(gold: str, pred: str) -> float:
    """F1 of the normalized token *sets* (HELM uses NLTK's ``f_measure`` on sets; empty -> 0)."""
    gold_tokens, pred_tokens = set(normalize_text(gold).split()), set(normalize_text(pred).split())
    common = len(gold_tokens & pred_tokens)
    if not gold_tokens or not pred_tokens or not common:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match_indicator_score(gold: str, pred: str, indicator: str = " ") -> float:
    """Exact match of what follows the last ``indicator`` (HELM's Dyck metric: the last word)."""
    return exact_match_score(gold.split(indicator)[-1].strip(), pred.split(indicator)[-1].strip())


_FINAL_NUMBER = re.compile(r"-?[\d,]+(?:.\d+)?")  # HELM's pattern verbatim: its "." is unescaped (any character)


def final_number(text: str) -> str:
    """The last number-like match in ``text``, commas removed ("" when none): HELM's GSM8K extraction.

    The pattern also matches a lone "," (-> "") and, through the unescaped ".", "3x4" as one number."""
    matches = _FINAL_NUMBER.findall(text)
    return matches[-1].replace(",", "") if matches else ""


def final_number_exact_match_score(gold: str, pred: str) -> float:
    """HELM's ``final_number_exact_match``: exact match of the two final numbers (no number -> 0)."""
    return exact_match_score(final_number(gold), final_number(pred))


def extract_set(text: str) -> set[str]:
    """HELM's ``extract_set_from_text``: "Nothing." is the empty set; otherwise periods are dropped
    and what follows the last " is " is split on " and " (so "" is the set of one empty string)."""
    if text == "Nothing.":
        return set()
    return set(text.replace(".", "").split(" is ")[-1].split(" and "))


def _sets(gold: str, pred: str) -> tuple[set[str], set[str]]:
    return extract_set(gold), extract_set(pred.split("\n")[0])  # the prediction's first line only


def exact_set_match_score(gold: str, pred: str) -> float:
    gold_set, pred_set = _sets(gold, pred)
    return float(gold_set == pred_set)


def iou_set_match_score(gold: str, pred: str) -> float:
    """Intersection over union of the two sets; an empty gold set scores whether the prediction's is empty."""
    gold_set, pred_set = _sets(gold, pred)
    if not gold_set:
        return float(gold_set == pred_set)
    return len(gold_set & pred_set) / len(gold_set | pred_set)


def f1_set_match_score(gold: str, pred: str) -> float:
    gold_set, pred_set = _sets(gold, pred)
    if not gold_set:
        return float(gold_set == pred_set)
    return 2 * len(gold_set & pred_set) / (len(gold_set) + len(pred_set))


def _int_or_zero(text: str) -> float:
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return 0.0


def absolute_value_difference_score(gold: str, pred: str) -> float:
    """HELM's: |gold - pred| as integers (commas ignored), an unparsable side counting as 0. HELM takes
    the max over references and samples like for every reference metric, although lower is better."""
    return float(abs(_int_or_zero(gold) - _int_or_zero(pred)))


def continuation_logprob(request: Request, completion: Completion) -> tuple[float, int] | None:
    """(sum of logprobs, token count) of the option an echo request appended to its prompt."""
    option = request.continuation or ""
    start = len(request.body.prompt or "") - len(option)
    tokens, logprobs, offsets = completion.tokens, completion.logprobs, completion.text_offsets
    if not option or not logprobs or len(logprobs) != len(tokens):
        return None
    if offsets and len(offsets) == len(tokens):
        ends = [*offsets[1:], math.inf]
        picked = [lp for lp, end in zip(logprobs, ends, strict=True) if end > start]
    else:
        n, covered = 0, 0
        while n < len(tokens) and covered < len(option):
            n += 1
            covered += len(tokens[-n])
        picked = logprobs[len(logprobs) - n:]
    return (sum(picked), len(picked)) if picked else None


def is_separate(x: MetricInput) -> bool:
    return any(r.continuation is not None for r in x.requests)


def option_scores(x: MetricInput) -> dict[int, tuple[list[str], list[float]]]:
    """Per trial of a log-likelihood multiple-choice instance: the options and their scores; trials
    missing a score are left out. HELM's ``separate_original`` scores an option by its mean logprob per
    token; ``separate_calibrated`` by its summed logprob after the prompt minus its summed logprob after
    the answer-free calibration prompt (its ``request_mode="calibration"`` request)."""
    options: dict[int, list[str]] = defaultdict(list)
    scores: dict[int, list[float | None]] = defaultdict(list)
    calibration: dict[tuple[int, str], tuple[float, int] | None] = {}
    for request, completion in zip(x.requests, x.completions, strict=True):
        if request.request_mode == "calibration":
            calibration[(request.sample_index, request.continuation or "")] = continuation_logprob(request, completion)
    for request, completion in zip(x.requests, x.completions, strict=True):
        if request.request_mode == "calibration":
            continue
        found = continuation_logprob(request, completion)
        options[request.sample_index].append(request.continuation or "")
        if not calibration:
            scores[request.sample_index].append(found[0] / found[1] if found else None)
        else:
            base = calibration.get((request.sample_index, request.continuation or ""))
            scores[request.sample_index].append(found[0] - base[0] if found and base else None)
    return {t: (options[t], s) for t, s in scores.items() if all(v is not None for v in s)}  # type: ignore[misc]


def mapped_label(pattern: re.Pattern[str], answer: str) -> str:
    """HELM's ``_apply_output_mapping_pattern``: the first match's first group (else the whole match) in the
    answer, "" without a match; the label is then looked up among the options."""
    found = pattern.search(answer)
    if not found:
        return ""
    return found.group(1) if found.groups() else found.group(0)


def predictions(x: MetricInput) -> list[tuple[int, str]]:
    """(trial, prediction) per completion: stripped, then mapped through the option letters if any;
    for log-likelihood multiple choice, (trial, the best-scored option) per trial."""
    if is_separate(x):
        return [(t, opts[max(range(len(s)), key=s.__getitem__)]) for t, (opts, s) in sorted(option_scores(x).items())]
    per_sample = max(x.adapter.generation.num_outputs, 1)
    pattern = re.compile(x.adapter.output_mapping_pattern) if x.adapter.output_mapping_pattern else None
    out = []
    for request, completion in zip(x.requests, x.completions, strict=True):
        pred = completion.text.strip()
        if request.output_mapping:
            if pattern is not None:
                pred = mapped_label(pattern, pred)
            pred = request.output_mapping.get(pred, "")
        out.append((request.sample_index // per_sample, pred))
    return out


def reference_stats(name: str, x: MetricInput, fn: MatchFn) -> dict[str, float]:
    golds = x.correct_texts
    by_trial: dict[int, list[float]] = defaultdict(list)
    for trial, pred in predictions(x):
        by_trial[trial].append(max((fn(g, pred) for g in golds), default=0.0))
    if not by_trial:
        return {}
    stats = {name: fmean(scores[0] for scores in by_trial.values())}
    if any(len(scores) > 1 for scores in by_trial.values()):
        stats[f"{name}@k"] = fmean(max(scores) for scores in by_trial.values())
    return stats


def _register(name: str, fn: MatchFn, version: str = "1") -> None:
    metric(name, version=version, helm=HelmEquivalent((name,)))(lambda x: reference_stats(name, x, fn))


_register("exact_match", exact_match_score, version="2")
_register("quasi_exact_match", quasi_exact_match_score)
_register("quasi_leave_articles_exact_match", quasi_leave_articles_exact_match_score)
_register("prefix_exact_match", prefix_exact_match_score)
_register("quasi_prefix_exact_match", quasi_prefix_exact_match_score)
_register("f1_score", f1_score_value)
_register("exact_match_indicator", exact_match_indicator_score)
_register("final_number_exact_match", final_number_exact_match_score)
_register("exact_set_match", exact_set_match_score)
_register("iou_set_match", iou_set_match_score)
_register("f1_set_match", f1_set_match_score)
_register("absolute_value_difference", absolute_value_difference_score)


def chosen_option(text: str, mapping: dict[str, str]) -> str | None:
    """The option a multiple-choice answer names: the whole answer if it is a letter, else a leading
    letter such as ``B``, ``B.``, ``(B)`` or ``B) text``; None when no option letter is found."""
    stripped = text.strip()
    if stripped in mapping:
        return mapping[stripped]
    found = _LETTER.match(stripped)
    return mapping.get(found.group(1)) if found else None


@metric("multiple_choice_accuracy", version="1")
def multiple_choice_accuracy(x: MetricInput) -> dict[str, float]:
    """Did the first sample pick a correct option? (Instances without options: exact match.)"""
    golds = set(x.correct_texts)
    if is_separate(x):
        picks = [float(pred in golds) for _, pred in predictions(x)]
        return {"multiple_choice_accuracy": fmean(picks)} if picks else {}
    scores = []
    for request, completion in zip(x.requests, x.completions, strict=True):
        if request.sample_index % max(x.adapter.generation.num_outputs, 1):
            continue  # first sample of each trial only, like the headline reference metrics
        if request.output_mapping:
            scores.append(float(chosen_option(completion.text, request.output_mapping) in golds))
        else:
            scores.append(float(bool(completion.text.strip())
                                and completion.text.strip() in {g.strip() for g in golds}))
    return {"multiple_choice_accuracy": fmean(scores)} if scores else {}
