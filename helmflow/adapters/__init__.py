"""Adapters turn instances into prompts. Deployment-independent: window fitting happens in query.

An adapter method is a pure function ``(spec, instance, train_examples) -> Prompt`` registered with
a declared template VERSION (part of prompt_version). The evaluation sample and few-shot draws are
seeded, so the same spec always yields the same prompts.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from helmflow.records import AdapterSpec, Instance, Prompt
from helmflow.registry import Registry


AdapterFn = Callable[[AdapterSpec, Instance, list[Instance]], Prompt]


@dataclass(frozen=True)
class AdapterMethod:
    fn: AdapterFn
    version: str
    few_shot: bool = True


ADAPTERS: Registry[AdapterMethod] = Registry("adapter method")


def adapter(name: str, version: str, few_shot: bool = True) -> Callable[[AdapterFn], AdapterFn]:
    def deco(fn: AdapterFn) -> AdapterFn:
        ADAPTERS.add(name, AdapterMethod(fn=fn, version=version, few_shot=few_shot))
        return fn

    return deco


def template_versions(spec: AdapterSpec) -> dict[str, str]:
    return {spec.method: ADAPTERS.get(spec.method).version}


# --------------------------------------------------------------------------- sampling
def sample_eval_instances(instances: list[Instance], sample_spec: Any) -> list[Instance]:
    """HELM's downsampling: seeded ``choice`` without replacement, so N's draw is a prefix of N'>N's."""
    pool = [i for i in instances if i.split in sample_spec.splits]
    n = sample_spec.max_eval_instances
    if n is None or n >= len(pool):
        return pool
    rng = np.random.RandomState(sample_spec.seed)
    picked = rng.choice(len(pool), n, replace=False)
    return [pool[int(i)] for i in picked]


def sample_train_examples(train: list[Instance], k: int, seed: int) -> list[Instance]:
    if k <= 0 or not train:
        return []
    return random.Random(seed).sample(train, min(k, len(train)))


def adapt(spec: AdapterSpec, instances: list[Instance]) -> list[Prompt]:
    method = ADAPTERS.get(spec.method)
    train = [i for i in instances if i.split == "train"]
    evaluated = sample_eval_instances(instances, spec.sample)
    prompts: list[Prompt] = []
    for trial in range(spec.sample.trials):
        examples = sample_train_examples(train, spec.max_train_instances, spec.train_seed + trial) if method.few_shot else []
        for inst in evaluated:
            prompt = method.fn(spec, inst, examples)
            prompts.append(prompt.model_copy(update={"trial": trial}))
    return prompts


def input_text(inst: Instance) -> str:
    """The instance's input as plain text (last message of a chat; text parts joined)."""
    if inst.input.text is not None:
        return inst.input.text
    if inst.input.messages:
        return inst.input.messages[-1].content
    return "".join(p.text or "" for p in inst.input.parts or [] if p.type == "text")


def head(spec: AdapterSpec) -> str:
    """Global prefix and instructions, which open every prompt."""
    return spec.global_prefix + (spec.instructions + "\n" if spec.instructions else "")


# One module per adapter family; add yours here.
_BUILTIN = [
    "generation",
]

for _module in _BUILTIN:
    importlib.import_module(f"helmflow.adapters.{_module}")
