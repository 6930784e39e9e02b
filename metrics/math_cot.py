"""MATH with chain of thought, scored as HELM Lite scores it (``math_equiv_chain_of_thought``), and
math-verify beside it.

HELM's rule (``scenarios/math_scenario.py``, from Hendrycks et al.'s MATH code): take the last
``\\boxed{...}`` of the reference solution and of the model output (``\\fbox{...}`` only when there
is no ``\\boxed``), braces matched; strip each with ``_strip_string`` (below, rule for rule) and
compare the strings. No boxed answer on one side is 0; on neither side HELM says 1 (its "Both
None" case); a normalization that raises compares the raw answers. These quirks are kept on
purpose: the number must be HELM's.

- ``math_equiv_chain_of_thought`` (main, no dependency): the rule above, first completion.
- ``math_equiv`` (HELM Classic's math_regular, no chain of thought): ``is_equiv`` of the reference answer and
  the output as it is (stripped), no boxed answer taken from either.
- ``math_verify_chain_of_thought`` (recorded beside it, ``lite`` extra): the same two boxed
  answers compared symbolically by math-verify (time-bounded helper process, see
  :mod:`helmflow.metrics.math_equivalence`); stat ``math_verify_equiv``. It forgives forms the
  string rule does not (``0.25`` vs ``\\frac14``), so it is a diagnostic, never the headline.
"""

from __future__ import annotations

from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.reference import reference_stats


def last_boxed_only_string(text: str) -> str | None:
    r"""The last ``\boxed...{...}`` (else ``\fbox...{...}``) with its braces balanced, command included."""
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def remove_boxed(boxed: str) -> str | None:
    r"""The content of ``\boxed{...}``; None for anything else (``\fbox{}``, ``\boxed 5``), as HELM."""
    left = "\\boxed{"
    if boxed.startswith(left) and boxed.endswith("}"):
        return boxed[len(left) : -1]
    return None


def boxed_answer(solution: str | None) -> str | None:
    """HELM's ``get_answer``: the last boxed answer of a solution, or None."""
    if solution is None:
        return None
    boxed = last_boxed_only_string(solution)
    return None if boxed is None else remove_boxed(boxed)


def _fix_fracs(text: str) -> str:
    r"""``\frac12`` -> ``\frac{1}{2}``, ``\frac1{72}`` -> ``\frac{1}{72}``; unchanged if a ``\frac``
    has < 2 chars after it."""
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part[0] == "{":  # an empty part raises IndexError, as in HELM (is_equiv then compares raw strings)
            out += part
            continue
        if len(part) < 2:
            return text
        a, b, rest = part[0], part[1], part[2:]
        out += "{" + a + "}{" + b + "}" + rest if b != "{" else "{" + a + "}" + b + rest
    return out


def _fix_a_slash_b(text: str) -> str:
    r"""``3/4`` -> ``\frac{3}{4}`` when both sides are plain integers written canonically."""
    pieces = text.split("/")
    if len(pieces) != 2:
        return text
    try:
        a, b = int(pieces[0]), int(pieces[1])
    except ValueError:
        return text
    return "\\frac{" + str(a) + "}{" + str(b) + "}" if text == f"{a}/{b}" else text


def _remove_right_units(text: str) -> str:
    r"""Drop a right-hand ``\text{ unit}``; two of them raise (HELM's assert), so raw strings are compared."""
    if "\\text{ " in text:
        pieces = text.split("\\text{ ")
        if len(pieces) != 2:
            raise ValueError("more than one \\text{ } unit")
        return pieces[0]
    return text


def _fix_sqrt(text: str) -> str:
    r"""``\sqrt3`` -> ``\sqrt{3}`` (a trailing bare ``\sqrt`` raises IndexError, as in HELM)."""
    if "\\sqrt" not in text:
        return text
    parts = text.split("\\sqrt")
    out = parts[0]
    for part in parts[1:]:
        out += "\\sqrt{" + part[0] + "}" + part[1:] if part[0] != "{" else "\\sqrt" + part
    return out


def strip_string(text: str) -> str:
    """HELM's (Hendrycks') ``_strip_string``, step for step and in its order."""
    text = text.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    text = text.replace("tfrac", "frac").replace("dfrac", "frac")
    text = text.replace("\\left", "").replace("\\right", "")
    text = text.replace("^{\\circ}", "").replace("^\\circ", "")
    text = text.replace("\\$", "")
    text = _remove_right_units(text)
    text = text.replace("\\%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # "k = 5" -> " 5"
        text = sides[1]
    text = _fix_sqrt(text)
    text = text.replace(" ", "")
    text = _fix_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_a_slash_b(text)


def is_equiv(a: str | None, b: str | None) -> float:
    """HELM's ``is_equiv`` on two extracted answers."""
    if a is None and b is None:
        return 1.0
    if a is None or b is None:
        return 0.0
    try:
        return float(strip_string(a) == strip_string(b))
    except (IndexError, ValueError):  # HELM catches every exception here; these are the ones the rules raise
        return float(a == b)


def math_equiv_chain_of_thought_score(gold: str, pred: str) -> float:
    """HELM's ``is_equiv_chain_of_thought(gold solution, output)``."""
    return is_equiv(boxed_answer(gold), boxed_answer(pred))


@metric("math_equiv_chain_of_thought", version="1", helm=HelmEquivalent(("math_equiv_chain_of_thought",)))
def math_equiv_chain_of_thought(x: MetricInput) -> dict[str, float]:
    return reference_stats("math_equiv_chain_of_thought", x, math_equiv_chain_of_thought_score)


@metric("math_equiv", version="1", helm=HelmEquivalent(("math_equiv",)))
def math_equiv(x: MetricInput) -> dict[str, float]:
    """HELM's ``math_equiv`` (MATH without chain of thought, HELM Classic's math_regular): ``is_equiv`` of the
    reference answer and the stripped output (already the answer: it stops at the closing ``$``)."""
    return reference_stats("math_equiv", x, is_equiv)


def math_verify_score(gold: str, pred: str) -> float:
    from helmflow.metrics.math_equivalence import equivalent

    gold_answer, answer = boxed_answer(gold), boxed_answer(pred)
    if not gold_answer or not answer or not answer.strip():
        return 0.0
    return float(equivalent(answer, gold_answer))


@metric("math_verify_chain_of_thought", version="1", requires=("math_verify",), extra="lite")
def math_verify_chain_of_thought(x: MetricInput) -> dict[str, float]:
    return reference_stats("math_verify_equiv", x, math_verify_score)
