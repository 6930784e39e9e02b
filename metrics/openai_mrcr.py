"""OpenAI MRCR's score (HELM's ``OpenAIMRCRMetric``, after the dataset card's grader): 0 unless the output starts
with the instance's random string; else difflib's ``SequenceMatcher`` ratio of the output and the gold answer,
each with that string removed from its start. The string is the instance's ``random_string_to_prepend`` (in
``extra``; HELM's ``extra_data`` of the same name)."""

from __future__ import annotations

from difflib import SequenceMatcher

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.records import Instance

KEY = "random_string_to_prepend"


def mrcr_ratio(output: str, gold: str, prefix: str) -> float:
    if not output.startswith(prefix):
        return 0.0
    return float(SequenceMatcher(None, output.removeprefix(prefix), gold.removeprefix(prefix)).ratio())


def _needs_prefix(instance: Instance) -> None:
    if not isinstance(instance.extra.get(KEY), str):
        raise MetricError(f"openai_mrcr_accuracy reads extra[{KEY!r}] (the openai_mrcr scenario sets it); instance "
                          f"{instance.id!r} lacks it")


def from_helm(helm_instance: dict) -> dict:
    data = helm_instance.get("extra_data") or {}
    return {KEY: data[KEY]} if KEY in data else {}


def to_helm(inst: Instance) -> dict:
    return {"extra_data": {KEY: inst.extra[KEY]}} if KEY in inst.extra else {}


@metric("openai_mrcr_accuracy", version="1", check=_needs_prefix,
        helm=HelmEquivalent(("openai_mrcr_accuracy",), from_helm, to_helm))
def openai_mrcr_accuracy(x: MetricInput) -> dict[str, float]:
    if not x.completions or not x.correct_texts:
        return {}
    return {"openai_mrcr_accuracy": mrcr_ratio(x.completions[0].text, x.correct_texts[0], x.instance.extra[KEY])}
