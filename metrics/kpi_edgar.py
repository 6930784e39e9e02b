"""HELM's KPI-EDGAR metric (``kpi_edgar_metrics.py::KPIEdgarMetric``): word-level entity-type F1, macro-averaged
over the four tags ``kpi``, ``cy``, ``py``, ``py1``.

Both texts are parsed as HELM parses them (``phrase [tag]`` items separated by commas, HELM's regular
expression); each tag's words are the set of whitespace words of its phrases, per instance. Over the run,
each tag sums its overlap (words in both sets), predicted and gold word counts, and from those sums:

- ``word_macro_f1_score``: F1 with tp = overlap, fp = predicted - overlap, fn = gold - overlap (symmetric);
- ``adjusted_macro_f1_score``: HELM's number, the KPI-EDGAR paper's partial-match adjustment (tp = overlap /
  gold, fn = 1 - tp, fp = (predicted - overlap) / predicted) **with prediction and gold swapped**, as HELM
  computes it: HELM passes (reference, completion) pairs to a function that unpacks them as (pred, gold);
- ``adjusted_macro_f1_score_corrected``: the same adjustment with the completion as the prediction and the
  reference as gold, as the paper defines it.

Each F1 is 0 when its tp + fp + fn is 0; the macro mean is over all four tags. HELM stops the run at an
output naming a tag outside the four (a KeyError); here such an item is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from helmflow.metrics import Counted, HelmEquivalent, metric
from helmflow.metrics.base import MetricInput

TAGS = ("kpi", "cy", "py", "py1")
ENTITY = re.compile(r"(?:^|(?<=\],))([^\[\]]+)\[([0-9a-z]+)\](?:$|(?=,))")  # HELM's _parse_entities pattern
PREFIX = "kpi_edgar:"
INSTANCES = f"{PREFIX}instances"


def tag_words(text: str) -> dict[str, set[str]]:
    """Each tag's set of words in ``text``'s ``phrase [tag]`` items (tags outside the four ignored)."""
    out: dict[str, set[str]] = {tag: set() for tag in TAGS}
    for phrase, tag in ENTITY.findall(text.strip()):
        if tag.strip() in out:
            out[tag.strip()].update(phrase.strip().split())
    return out


def instance_counts(gold: str, pred: str) -> dict[str, float]:
    """One instance's per-tag ``overlap``, ``pred`` and ``gold`` word counts (sparse), and a count of 1."""
    golds, preds = tag_words(gold), tag_words(pred)
    out = {INSTANCES: 1.0}
    for tag in TAGS:
        for kind, value in (("overlap", len(golds[tag] & preds[tag])), ("pred", len(preds[tag])),
                            ("gold", len(golds[tag]))):
            if value:
                out[f"{PREFIX}{kind}:{tag}"] = float(value)
    return out


def _f1(tp: float, fp: float, fn: float) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn > 0 else 0.0


def word_f1(overlap: float, pred: float, gold: float) -> float:
    return _f1(overlap, pred - overlap, gold - overlap)


def adjusted_f1(overlap: float, pred: float, gold: float) -> float:
    """The KPI-EDGAR partial-match rates: tp = overlap / gold, fn = 1 - tp, fp = (pred - overlap) / pred."""
    tp = overlap / gold if gold > 0 else 0.0
    fn = 1 - overlap / gold if gold > 0 else 0.0
    fp = (pred - overlap) / pred if pred > 0 else 0.0
    return _f1(tp, fp, fn)


def _macro(score: Callable[[float, float, float], float], swapped: bool = False):
    def fn(sums: dict[str, float]) -> float | None:
        if not sums.get(INSTANCES):
            return None
        values = []
        for tag in TAGS:
            overlap, pred, gold = (sums.get(f"{PREFIX}{kind}:{tag}", 0.0) for kind in ("overlap", "pred", "gold"))
            values.append(score(overlap, gold, pred) if swapped else score(overlap, pred, gold))
        return sum(values) / len(values)

    return fn


word_macro_f1 = _macro(word_f1)
helm_adjusted_macro_f1 = _macro(adjusted_f1, swapped=True)  # HELM's (reference, completion) read as (pred, gold)
adjusted_macro_f1 = _macro(adjusted_f1)


@metric("kpi_edgar", version="1", helm=HelmEquivalent(("word_macro_f1_score", "adjusted_macro_f1_score")),
        counted=(Counted("word_macro_f1_score", PREFIX, word_macro_f1),
                 Counted("adjusted_macro_f1_score", PREFIX, helm_adjusted_macro_f1),
                 Counted("adjusted_macro_f1_score_corrected", PREFIX, adjusted_macro_f1)))
def kpi_edgar(x: MetricInput) -> dict[str, float]:
    """One generation's per-tag word counts against the (single) reference."""
    golds = x.correct_texts
    if not golds or not x.completions:
        return {}
    return instance_counts(golds[0], x.completions[0].text)
