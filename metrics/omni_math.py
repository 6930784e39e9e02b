"""Omni-MATH scoring: the jury's equivalence verdict (main; the judge template and its parser live
here) and a rule-based check beside it.

- ``omni_math`` (judge-backed, HELM's ``OmniMATHMetric``): ``omni_math_accuracy`` is the mean over
  the judges whose output parsed of their TRUE/FALSE equivalence judgement (an empty model output is
  not sent and counts FALSE); missing without a parsed verdict, never 0. ``omni_math_judges_parsed``
  / ``omni_math_judge_errors`` count the verdicts.
- ``omni_math_rule`` (no judge, always computed): ``omni_math_rule_equivalence`` is 1 when the content
  of the output's last ``\\boxed{}`` is equivalent to the reference answer for ``math-verify``
  (symbolic comparison through SymPy, in a helper process with a time bound: see
  :mod:`helmflow.metrics.math_equivalence`); no ``\\boxed{}``, or an answer that cannot be checked in time, is 0.
"""

from __future__ import annotations

from helmflow.errors import MetricError
from helmflow.judges import TEMPLATES, JudgeParseError, JudgeTemplate, Verdict, jury_metric
from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.math_equivalence import equivalent
from helmflow.records import Instance

OMNI_MATH_TEXT = """\
You are a mathematics teacher grading a student's answer to a competition problem. You are given \
the problem, the reference answer (which is correct) and the student's solution. Decide only \
whether the student's final answer is mathematically equivalent to the reference answer.

- The student's final answer is the content of the last \\boxed{} in the solution; if there is \
none, it is the answer the solution clearly commits to at the end.
- Equivalent forms are equal: equal algebraic expressions, an exact decimal for a fraction, other \
LaTeX notation for the same object, the elements of an unordered set in another order.
- Judge the final answer, not the reasoning. An approximation of an exact answer, an incomplete \
answer (for example, some solutions missing) or an answer with any mistake is not equivalent. No \
final answer is not equivalent.

# Problem
{$problem}

# Reference answer
{$reference_answer}

# Student's solution
{$solution}

Reply in Markdown with exactly these three sections, in this order:

## Student Final Answer
<the student's final answer, copied on one line>

## Justification
<a short comparison with the reference answer>

## Equivalence Judgement
<TRUE or FALSE>
"""


def omni_math_fields(instance: Instance, output: str) -> dict[str, str]:
    refs = instance.correct_references
    if instance.input.text is None or not refs:
        raise MetricError(
            f"judge template 'omni_math' needs a text problem with a correct reference answer (the omni_math "
            f"scenario); instance {instance.id!r} is not one"
        )
    return {"problem": instance.input.text, "reference_answer": refs[0].text, "solution": output}


def _sections(text: str) -> dict[str, str]:
    """Markdown ``## Title`` sections: title -> the line after it (Justification: its whole body)."""
    out: dict[str, str] = {}
    for part in text.split("## ")[1:]:
        lines = part.strip().split("\n")
        title = lines[0].strip()
        out[title] = ("\n".join(lines[1:]).strip() if title == "Justification"
                      else (lines[1].strip() if len(lines) > 1 else ""))
    return out


def parse_omni_math(text: str) -> Verdict:
    """``## Equivalence Judgement`` must be TRUE or FALSE (any case); the score is 1.0 or 0.0."""
    sections = _sections(text)
    if "Equivalence Judgement" not in sections:
        raise JudgeParseError("no '## Equivalence Judgement' section in the judge output")
    judgement = sections["Equivalence Judgement"].strip().upper()
    if judgement not in ("TRUE", "FALSE"):
        raise JudgeParseError(f"Equivalence Judgement is {sections['Equivalence Judgement'][:40]!r}, not TRUE or FALSE")
    details = {
        "student_final_answer": sections.get("Student Final Answer", ""),
        "justification": sections.get("Justification", ""),
        "equivalence_judgement": judgement,
    }
    return Verdict(1.0 if judgement == "TRUE" else 0.0, details)


TEMPLATES.add(
    "omni_math",
    JudgeTemplate(
        name="omni_math",
        version="1",
        text=OMNI_MATH_TEXT,
        fields=omni_math_fields,
        parse=parse_omni_math,
        on_empty=Verdict(0.0, {"equivalence_judgement": "FALSE", "justification": "The model output is empty."}),
        max_tokens=4096,
    ),
)


omni_math = metric("omni_math", version="1", judge="omni_math")(
    jury_metric("omni_math", lambda score: {"omni_math_accuracy": score})
)


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


def reference_answer(instance: Instance) -> str:
    refs = instance.correct_references
    if not refs:
        raise MetricError("metric 'omni_math_rule' needs a correct reference answer; "
                          f"instance {instance.id!r} has none")
    return refs[0].text


@metric("omni_math_rule", version="1", requires=("math_verify",), extra="capabilities", check=reference_answer)
def omni_math_rule(x: MetricInput) -> dict[str, float]:
    reference = reference_answer(x.instance)
    values = [float(rule_equivalent(text, reference)) for text in x.texts]
    return {"omni_math_rule_equivalence": sum(values) / len(values)} if values else {}
