"""Omni-MATH scoring: the jury's equivalence verdict (main) and a rule-based check beside it.

- ``omni_math`` (judge-backed, HELM's ``OmniMATHMetric``): ``omni_math_accuracy`` is the mean over
  the judges whose output parsed of their TRUE/FALSE equivalence judgement (an empty model output is
  not sent and counts FALSE); missing without a parsed verdict, never 0. ``omni_math_judges_parsed``
  / ``omni_math_judge_errors`` count the verdicts.
- ``omni_math_rule`` (no judge, always computed): ``omni_math_rule_equivalence`` is 1 when the content
  of the output's last ``\\boxed{}`` is equivalent to the reference answer for ``math-verify``
  (symbolic comparison through SymPy, in a helper process with a time bound: see
  :mod:`helmflow.math_equivalence`); no ``\\boxed{}``, or an answer that cannot be checked in time, is 0.
"""

from __future__ import annotations

from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput

from helmflow.judges import judge_counts, jury_scores
from helmflow.math_equivalence import equivalent


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
    answer = last_boxed(output)
    return answer is not None and bool(answer.strip()) and equivalent(answer, reference)


@metric("omni_math_rule", version="1")
def omni_math_rule(x: MetricInput) -> dict[str, float]:
    refs = x.correct_texts
    if not refs:
        raise ValueError(f"metric 'omni_math_rule' needs a correct reference answer; instance {x.instance.id!r} has none")
    values = [float(rule_equivalent(text, refs[0])) for text in x.texts]
    return {"omni_math_rule_equivalence": sum(values) / len(values)} if values else {}
