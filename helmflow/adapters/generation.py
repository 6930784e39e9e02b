"""The generation adapter, and HELM's prompt layout that every in-context method shares.

HELM joins ``[instructions, *train blocks, eval block]`` with ``instance_prefix`` and wraps the
result in the global prefix and suffix. Here the same text is kept in pieces (head, examples, query)
so window fitting can drop examples from the end: each example carries the separator that follows
it, and the head carries the one after the instructions.
"""

from __future__ import annotations

from collections.abc import Callable

from helmflow.adapters import adapter, check_text_input, head, input_with_media
from helmflow.records import AdapterSpec, ContentPart, Instance, Prompt

Block = Callable[[Instance, bool], tuple[str, list[ContentPart]]]


def layout(spec: AdapterSpec, inst: Instance, train: list[Instance], block: Block, **extra) -> Prompt:
    """A prompt in HELM's layout; ``block(instance, with_answer)`` renders one example or the query
    as text (images as ``MEDIA_MARK``) and its images, so examples may carry images too."""
    opening = head(spec)
    examples, media = [], []
    for e in train:
        if e.id == inst.id:
            continue
        text, images = block(e, True)
        examples.append(text + spec.instance_prefix)
        media += images
    query, images = block(inst, False)
    return Prompt(
        instance_id=inst.id,
        split=inst.split,
        head=opening + spec.instance_prefix if spec.instructions else opening,
        examples=examples,
        query=query + spec.global_suffix,
        media=media + images,
        **extra,
    )


def first_correct(inst: Instance) -> str:
    """The answer an example shows: its first correct reference (HELM writes "n/a" when none)."""
    return inst.correct_references[0].text if inst.correct_references else "n/a"


@adapter("generation", version="2", check=check_text_input)
def generation(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    def block(example: Instance, with_answer: bool) -> tuple[str, list[ContentPart]]:
        body, media = input_with_media(example)
        text = spec.input_prefix + body + spec.input_suffix
        if with_answer:
            return text + spec.output_prefix + first_correct(example) + spec.output_suffix, media
        return text + spec.output_prefix.rstrip(), media

    return layout(spec, inst, train, block)


def raw_prompt_spec(max_tokens: int) -> AdapterSpec:
    """The prompt is the instance's text and nothing else (HELM Safety's judged scenarios): no
    instructions or prefixes, zero-shot, greedy, one output, no stop sequence."""
    from helmflow.records import GenerationParams

    return AdapterSpec(
        method="generation", input_prefix="", input_suffix="", output_prefix="", output_suffix="", instance_prefix="",
        max_train_instances=0, generation=GenerationParams(max_tokens=max_tokens, temperature=0.0, num_outputs=1),
    )
