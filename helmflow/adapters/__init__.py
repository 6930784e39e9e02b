"""Adapters turn instances into prompts. Deployment-independent: window fitting happens in query.

An adapter method is a pure function ``(spec, instance, train_examples) -> Prompt`` registered with
a declared template VERSION (part of prompt_version). The evaluation sample and few-shot draws are
seeded, so the same spec always yields the same prompts.
"""

from __future__ import annotations

import importlib
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import cycle
from typing import Any

import numpy as np

from helmflow.errors import HelmflowError
from helmflow.records import AdapterSpec, ContentPart, Instance, Prompt
from helmflow.registry import Registry

AdapterFn = Callable[[AdapterSpec, Instance, list[Instance]], Prompt]


#: The wording a text adapter reads (see ``helmflow.prompts.ADAPTER_TEXTS``): each is a prompt key.
LAYOUT_TEXTS = ("global_prefix", "instructions", "input_prefix", "input_suffix", "output_prefix", "output_suffix",
                "instance_prefix", "global_suffix")
OPTION_TEXTS = ("reference_prefix", "reference_suffix")


class AdapterError(HelmflowError, ValueError):
    """An instance the adapter method cannot turn into a prompt (bad data: exit 2, naming the instance)."""


@dataclass(frozen=True)
class AdapterMethod:
    fn: AdapterFn
    version: str
    few_shot: bool = True
    texts: tuple[str, ...] = LAYOUT_TEXTS  # the AdapterSpec text fields it reads: overridable wording
    check: Callable[[Instance], None] | None = None  # raises AdapterError for an instance it cannot adapt


ADAPTERS: Registry[AdapterMethod] = Registry("adapter method")


def adapter(name: str, version: str, few_shot: bool = True, texts: tuple[str, ...] = LAYOUT_TEXTS,
            check: Callable[[Instance], None] | None = None) -> Callable[[AdapterFn], AdapterFn]:
    """Register an adapter method; ``check`` states what it needs of an instance, so data it cannot
    adapt is refused when the scenario is loaded (``helmflow run``'s pre-flight, ``--dry-run``), not
    inside a task."""
    def deco(fn: AdapterFn) -> AdapterFn:
        ADAPTERS.add(name, AdapterMethod(fn=fn, version=version, few_shot=few_shot, texts=texts, check=check))
        return fn

    return deco


def check_adaptable(spec: AdapterSpec, instances: list[Instance]) -> None:
    """Raise :class:`AdapterError` for the first instance ``spec``'s method cannot adapt."""
    check = ADAPTERS.get(spec.method).check
    if check is not None:
        for inst in instances:
            check(inst)


def template_versions(spec: AdapterSpec) -> dict[str, str]:
    return {spec.method: ADAPTERS.get(spec.method).version}


# --------------------------------------------------------------------------- sampling
def sample_eval_instances(instances: list[Instance], sample_spec: Any) -> list[Instance]:
    """HELM's downsampling: seeded ``choice`` without replacement, so N's draw is a prefix of N'>N's."""
    return [instances[k] for k in sample_positions([i.split for i in instances], sample_spec)]


def sample_positions(splits: Sequence[str], sample_spec: Any) -> list[int]:
    """:func:`sample_eval_instances` as places in the instances' list, from their splits alone: a reader of
    the stored instances builds the sampled ones only."""
    pool = [k for k, split in enumerate(splits) if split in sample_spec.splits]
    n = sample_spec.max_eval_instances
    if n is None or n >= len(pool):
        return pool
    rng = np.random.RandomState(sample_spec.seed)
    picked = rng.choice(len(pool), n, replace=False)
    return [pool[int(i)] for i in picked]


def uses_train(spec: AdapterSpec) -> bool:
    """Whether ``spec``'s prompts read the train split (few-shot examples are drawn from it)."""
    return ADAPTERS.get(spec.method).few_shot and spec.max_train_instances > 0


def sample_train_examples(train: list[Instance], k: int, seed: int) -> list[Instance]:
    """HELM's class-balanced few-shot draw (``in_context_learning_adapter.sample_examples``).

    Labels (first correct reference text) are ordered by how many train instances carry them, ties
    shuffled; one instance is drawn per label round-robin until ``k``; unlabeled instances fill the
    rest. ``random.Random(seed)`` replays HELM's ``random.seed(seed)`` stream call for call.
    """
    rng = random.Random(seed)
    wanted = min(len(train), max(k, 0))
    by_label: dict[str, list[Instance]] = defaultdict(list)
    unlabeled: list[Instance] = []
    for inst in train:
        refs = inst.correct_references
        (by_label[refs[0].text] if refs else unlabeled).append(inst)
    by_count: dict[int, list[str]] = defaultdict(list)
    for label, members in sorted(by_label.items()):
        by_count[len(members)].append(label)
    order: list[str] = []
    for count in sorted(by_count, reverse=True):
        labels = by_count[count]
        rng.shuffle(labels)
        order.extend(labels)
    examples: list[Instance] = []
    remaining = sum(len(m) for m in by_label.values())
    for label in cycle(order):
        if wanted == 0 or remaining == 0:  # HELM would spin forever once every label is used up
            break
        members = by_label[label]
        if members:
            examples.append(members.pop(rng.randrange(len(members))))
            wanted -= 1
            remaining -= 1
    return examples + rng.sample(unlabeled, min(wanted, len(unlabeled)))


def adapt(spec: AdapterSpec, instances: list[Instance]) -> list[Prompt]:
    return list(iter_prompts(spec, instances))


def iter_prompts(spec: AdapterSpec, instances: list[Instance]) -> Iterator[Prompt]:
    """:func:`adapt`'s prompts one at a time, in the same order: for readers that need only one in
    memory (a dry run counting the tokens of long prompts)."""
    train = [i for i in instances if i.split == "train"]
    return iter_sampled_prompts(spec, train, sample_eval_instances(instances, spec.sample))


def iter_sampled_prompts(spec: AdapterSpec, train: list[Instance], evaluated: list[Instance]) -> Iterator[Prompt]:
    """:func:`iter_prompts` given the train split (in stored order; may be empty when not
    :func:`uses_train`) and the evaluation sample (in drawn order)."""
    method = ADAPTERS.get(spec.method)
    for trial in range(spec.sample.trials):
        examples = (sample_train_examples(train, spec.max_train_instances, spec.train_seed + trial)
                    if uses_train(spec) else [])
        for inst in evaluated:
            prompt = method.fn(spec, inst, examples)
            yield prompt.model_copy(update={"trial": trial})


def input_text(inst: Instance) -> str:
    """The instance's input as plain text (last message of a chat; text parts joined)."""
    if inst.input.text is not None:
        return inst.input.text
    if inst.input.messages:
        return inst.input.messages[-1].content
    return "".join(p.text or "" for p in inst.input.parts or [] if p.type == "text")


#: Where an image sits in a prompt's text (Unicode's OBJECT REPLACEMENT CHARACTER, made for this).
#: ``Prompt.media`` lists the images in the order of these marks; the query stage splits the fitted
#: text at them into text and image parts. The same character in dataset text becomes U+FFFD.
MEDIA_MARK = "\ufffc"


def _clean(text: str) -> str:
    return text.replace(MEDIA_MARK, "\ufffd")


def input_with_media(inst: Instance) -> tuple[str, list[ContentPart]]:
    """The instance's input as text with a :data:`MEDIA_MARK` per image, and its images in order."""
    if inst.input.parts is None:
        return _clean(input_text(inst)), []
    text, media = "", []
    for part in inst.input.parts:
        if part.type == "text":
            text += _clean(part.text or "")
        elif part.type == "image":
            text += MEDIA_MARK
            media.append(part)
        else:
            raise AdapterError(f"instance {inst.id!r}: {part.type} parts are not supported by text adapters")
    return text, media


def check_text_input(inst: Instance) -> None:
    """A text adapter's need: an input of text and images only."""
    input_with_media(inst)


def head(spec: AdapterSpec) -> str:
    """Global prefix and instructions, which open every prompt."""
    return spec.global_prefix + (spec.instructions + "\n" if spec.instructions else "")


# One module per adapter family; add yours here.
_BUILTIN = [
    "generation",
    "multiple_choice",
    "chat",
    "chain_of_thought",
    "ranking",
    "language_modeling",
]

for _module in _BUILTIN:
    importlib.import_module(f"helmflow.adapters.{_module}")
