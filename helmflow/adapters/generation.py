"""The generation adapter, and HELM's prompt layout that every in-context method shares.

HELM joins ``[instructions, *train blocks, eval block]`` with ``instance_prefix`` and wraps the
result in the global prefix and suffix. Here the same text is kept in pieces (head, examples, query)
so window fitting can drop examples from the end: each example carries the separator that follows
it, and the head carries the one after the instructions.
"""

from __future__ import annotations

from collections.abc import Callable

from helmflow.adapters import adapter, head, input_text
from helmflow.records import AdapterSpec, Instance, Prompt


def layout(
    spec: AdapterSpec, inst: Instance, train: list[Instance], block: Callable[[Instance, bool], str], **extra
) -> Prompt:
    """A prompt in HELM's layout; ``block(instance, with_answer)`` renders one example or the query."""
    opening = head(spec)
    return Prompt(
        instance_id=inst.id,
        split=inst.split,
        head=opening + spec.instance_prefix if spec.instructions else opening,
        examples=[block(e, True) + spec.instance_prefix for e in train if e.id != inst.id],
        query=block(inst, False) + spec.global_suffix,
        **extra,
    )


def first_correct(inst: Instance) -> str:
    """The answer an example shows: its first correct reference (HELM writes "n/a" when none)."""
    return inst.correct_references[0].text if inst.correct_references else "n/a"


@adapter("generation", version="2")
def generation(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    def block(example: Instance, with_answer: bool) -> str:
        text = spec.input_prefix + input_text(example) + spec.input_suffix
        if with_answer:
            return text + spec.output_prefix + first_correct(example) + spec.output_suffix
        return text + spec.output_prefix.rstrip()

    return layout(spec, inst, train, block)


def raw_prompt_spec(max_tokens: int) -> AdapterSpec:
    """The prompt is the instance's text and nothing else (HELM Safety's judged scenarios): no
    instructions or prefixes, zero-shot, greedy, one output, no stop sequence."""
    from helmflow.records import GenerationParams

    return AdapterSpec(
        method="generation", input_prefix="", input_suffix="", output_prefix="", output_suffix="", instance_prefix="",
        max_train_instances=0, generation=GenerationParams(max_tokens=max_tokens, temperature=0.0, num_outputs=1),
    )
