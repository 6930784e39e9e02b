"""IFEval scoring: which verifiable instructions a response follows, strict and loose.

Per instance (one prompt with its instructions, ``instance.extra`` holding ``instruction_id_list``
and ``kwargs`` as in the dataset) the metric emits:

- ``ifeval_strict_accuracy``: HELM's headline and the scenario's main metric: the fraction of the
  prompt's instructions followed by the *stripped* response (HELM strips before checking); its
  mean over prompts is neither the prompt- nor the instruction-level number of the paper.
- ``ifeval_prompt_strict_accuracy`` / ``ifeval_prompt_loose_accuracy``: 1 when every instruction is
  followed (Google's evaluation_lib: strict checks the raw response, loose passes an instruction
  when any of the 8 variants of :func:`~helmflow.metrics.ifeval_checkers.loose_variants` does).
  Their means are the paper's prompt-level accuracies.
- ``ifeval_instructions_followed_strict`` / ``..._loose`` and ``ifeval_num_instructions``: counts.
  The paper's instruction-level accuracy pools instructions over prompts, sum(followed) /
  sum(instructions), which a mean of per-prompt fractions is not; the metric declares it as the
  ratios ``ifeval_instruction_strict_accuracy`` / ``ifeval_instruction_loose_accuracy``, which the
  run summary computes as a ratio of sums (equivalently, mean(followed) / mean(num_instructions)).
- ``ifeval_instruction_strict:<id>`` / ``ifeval_instruction_loose:<id>`` for each instruction id
  in the prompt: whether it was followed. A prompt never repeats an id, so their means over the
  prompts that carry them are the per-instruction accuracies (which instructions a model fails).

With several samples per instance, each stat is the mean over samples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.ifeval_checkers import checker, follows, follows_loose
from helmflow.records import Instance

FOLLOWED_STRICT = "ifeval_instructions_followed_strict"
FOLLOWED_LOOSE = "ifeval_instructions_followed_loose"
NUM_INSTRUCTIONS = "ifeval_num_instructions"
RATIOS = (
    ("ifeval_instruction_strict_accuracy", FOLLOWED_STRICT, NUM_INSTRUCTIONS),
    ("ifeval_instruction_loose_accuracy", FOLLOWED_LOOSE, NUM_INSTRUCTIONS),
)


def instructions(inst: Instance) -> list[tuple[str, Callable[[str], bool]]]:
    """(instruction id, checker) for each instruction of the instance, kwargs validated."""
    if "instruction_id_list" not in inst.extra or "kwargs" not in inst.extra:
        raise MetricError(
            f"metric 'ifeval' scores instances whose extra has 'instruction_id_list' and 'kwargs' "
            f"(IFEval-style scenarios); instance {inst.id!r} has {sorted(inst.extra) or 'none'}"
        )
    ids = inst.extra["instruction_id_list"]
    kwargs = inst.extra["kwargs"]
    return [(i, checker(i, k)) for i, k in zip(ids, kwargs, strict=True)]


def score_response(checks: list[tuple[str, Callable[[str], bool]]], response: str) -> dict[str, float]:
    strict = [follows(check, response) for _, check in checks]
    stripped = response.strip()
    helm = strict if stripped == response else [follows(check, stripped) for _, check in checks]
    loose = [s or follows_loose(check, response) for s, (_, check) in zip(strict, checks)]
    stats: dict[str, float] = {
        "ifeval_strict_accuracy": sum(helm) / len(helm),
        "ifeval_prompt_strict_accuracy": float(all(strict)),
        "ifeval_prompt_loose_accuracy": float(all(loose)),
        FOLLOWED_STRICT: float(sum(strict)),
        FOLLOWED_LOOSE: float(sum(loose)),
        NUM_INSTRUCTIONS: float(len(checks)),
    }
    per_id: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for (instruction_id, _), s, lo in zip(checks, strict, loose):
        per_id[instruction_id].append((s, lo))
    for instruction_id, results in per_id.items():
        stats[f"ifeval_instruction_strict:{instruction_id}"] = sum(s for s, _ in results) / len(results)
        stats[f"ifeval_instruction_loose:{instruction_id}"] = sum(lo for _, lo in results) / len(results)
    return stats


IFEVAL_MODULES = ("nltk", "punkt", "langdetect")  # the reference's tokenizers and its language detector


def from_helm(helm_instance: dict) -> dict:
    """HELM keeps the instructions in ``extra_data`` as ``instruction_ids`` / ``instruction_kwargs``
    (null kwargs kept); ours are the dataset's names, null kwargs dropped (they mean absent)."""
    data = helm_instance.get("extra_data") or {}
    if "instruction_ids" not in data:
        return {}
    kwargs = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in data.get("instruction_kwargs") or []]
    return {"instruction_id_list": list(data["instruction_ids"]), "kwargs": kwargs}


def to_helm(inst: Instance) -> dict:
    if "instruction_id_list" not in inst.extra:
        return {}
    return {"extra_data": {"instruction_ids": inst.extra["instruction_id_list"],
                           "instruction_kwargs": inst.extra.get("kwargs", [])}}


@metric("ifeval", version="1", ratios=RATIOS, requires=IFEVAL_MODULES, extra="capabilities",
        helm=HelmEquivalent(("ifeval_strict_accuracy",), from_helm, to_helm), check=instructions)
def ifeval(x: MetricInput) -> dict[str, float]:
    checks = instructions(x.instance)
    samples = [score_response(checks, text) for text in x.texts]
    return {name: sum(s[name] for s in samples) / len(samples) for name in samples[0]} if samples else {}
