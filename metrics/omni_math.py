"""Omni-MATH scoring: the jury's equivalence verdict (main) and a rule-based check beside it.

- ``omni_math`` (judge-backed, HELM's ``OmniMATHMetric``): ``omni_math_accuracy`` is the mean over
  the judges whose output parsed of their TRUE/FALSE equivalence judgement (an empty model output is
  not sent and counts FALSE); missing without a parsed verdict, never 0. ``omni_math_judges_parsed``
  / ``omni_math_judge_errors`` count the verdicts.
- ``omni_math_rule`` (no judge, always computed): ``omni_math_rule_equivalence`` is 1 when the content
  of the output's last ``\\boxed{}`` is equivalent to the reference answer for ``math-verify``
  (symbolic comparison through SymPy); no ``\\boxed{}`` is 0. math-verify's signal-based timeouts
  only work on the main thread, and tasks run on worker threads, so they are off; an answer longer
  than ``MAX_ANSWER_CHARS`` is not parsed (0), which bounds the work on untrusted text instead.
"""

from __future__ import annotations

import logging

from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput

from helmflow.judges import judge_counts, jury_scores

MAX_ANSWER_CHARS = 1000
# math-verify warns once that its timeouts are off: deliberate here (see above), so not shown.
logging.getLogger("math_verify").setLevel(logging.ERROR)


@metric("omni_math", version="1", judge="omni_math")
def omni_math(x: MetricInput) -> dict[str, float]:
    if not x.annotations:
        return {}
    out = judge_counts(x.annotations, "omni_math")
    samples = list(jury_scores(x.annotations, "omni_math").values())
    if samples:
        out["omni_math_accuracy"] = sum(samples) / len(samples)
    return out


def last_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``), braces balanced; None without one."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    open_at = text.find("{", start)
    if open_at < 0:
        return None
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
    return None


def rule_equivalent(output: str, reference: str) -> bool:
    """math-verify on the last boxed answer against the reference answer (both read as LaTeX)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    answer = last_boxed(output)
    if answer is None or not answer.strip() or len(answer) > MAX_ANSWER_CHARS:
        return False
    configs = [LatexExtractionConfig(), ExprExtractionConfig()]
    gold = parse(f"${reference}$", configs, parsing_timeout=None)
    pred = parse(f"${answer}$", configs, parsing_timeout=None)
    return bool(gold and pred and verify(gold, pred, timeout_seconds=None))


@metric("omni_math_rule", version="1")
def omni_math_rule(x: MetricInput) -> dict[str, float]:
    refs = x.correct_texts
    if not refs:
        raise ValueError(f"metric 'omni_math_rule' needs a correct reference answer; instance {x.instance.id!r} has none")
    values = [float(rule_equivalent(text, refs[0])) for text in x.texts]
    return {"omni_math_rule_equivalence": sum(values) / len(values)} if values else {}
