"""HELM's ``chain_of_thought_correctness`` (GPQAChainOfThoughtMetric): the letter a reasoning answer ends on.

The letter is extracted with HELM's four patterns, tried in order, each with ``re.search`` (so the
earliest match of the first pattern that matches anywhere wins). The second pattern is HELM's
verbatim, literal-bracket bug included (``\\[aA\\]nswer:`` matches "[aA]nswer:", i.e. almost never).
Score 1 iff the letter is the first correct reference's letter (A = first reference); no letter is 0.
"""

from __future__ import annotations

import re

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.records import Instance

PATTERNS = [
    re.compile(r"answer is \(?([A-J])\)?"),
    re.compile(r"\.*\[aA\]nswer:\s*\(?([A-J])\)?"),
    re.compile(r"correct answer is [^A-Za-z]*([A-J])"),
    re.compile(r"correct answer is [^A-Z]*([A-J])"),
]


def extract_answer(text: str) -> str | None:
    """The answer letter A-J a chain-of-thought output commits to, or None."""
    for pattern in PATTERNS:
        found = pattern.search(text)
        if found:
            return found.group(1)
    return None


def correct_letter(instance: Instance) -> str:
    for index, ref in enumerate(instance.references):
        if ref.correct:
            return chr(ord("A") + index)
    raise MetricError("metric 'chain_of_thought_correctness' needs a correct reference; "
                      f"instance {instance.id!r} has none")


@metric("chain_of_thought_correctness", version="1", helm=HelmEquivalent(("chain_of_thought_correctness",)),
        check=correct_letter)
def chain_of_thought_correctness(x: MetricInput) -> dict[str, float]:
    """HELM scores the first completion only."""
    text = x.completions[0].text if x.completions else ""
    return {"chain_of_thought_correctness": float(extract_answer(text) == correct_letter(x.instance))}
