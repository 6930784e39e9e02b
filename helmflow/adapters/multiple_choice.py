"""HELM's ``multiple_choice_joint``: all options lettered in one prompt; the letter maps back. And its
``multiple_choice_separate_original``: each option scored by its log-likelihood (at the end).

Each example lists its references as ``A. text`` lines (the letter replaces the first letter of
``reference_prefix``, so ``"(A) "`` gives ``(B) ``; ``reference_prefix_characters`` names the labels
instead, e.g. Arabic letters), then ``output_prefix`` and the correct letter.
The query ends at ``output_prefix`` (right-stripped). ``output_mapping`` (letter -> reference text)
travels with the request so metrics score the option the model picked.
"""

from __future__ import annotations

from helmflow.adapters import (
    LAYOUT_TEXTS,
    MEDIA_MARK,
    OPTION_TEXTS,
    AdapterError,
    adapter,
    check_text_input,
    head,
    input_with_media,
)
from helmflow.adapters.generation import layout
from helmflow.records import AdapterSpec, ContentPart, Instance, Prompt

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def option_label(reference_prefix: str, index: int, characters: list[str] | None = None) -> str:
    """The label of option ``index``: ``characters[index]`` when the spec names them (HELM's
    ``reference_prefix_characters``), else HELM's reference-prefix character, its first letter or digit, shifted
    by the index (``A. `` gives A, B…; ``1. "`` gives 1, 2…)."""
    if characters:
        if index >= len(characters):
            raise AdapterError(f"option {index + 1} has no label: reference_prefix_characters names {len(characters)}")
        return characters[index]
    first = next((c for c in reference_prefix if c.isalnum()), "A")
    return chr(ord(first) + index)


def option_prefix(reference_prefix: str, index: int, characters: list[str] | None = None) -> str:
    first = next((c for c in reference_prefix if c.isalnum()), None)
    if first is None:
        return reference_prefix
    return reference_prefix.replace(first, option_label(reference_prefix, index, characters), 1)


def options_block(spec: AdapterSpec, inst: Instance) -> str:
    """The lettered options; an image-valued option shows its image (``MEDIA_MARK``) after its letter."""
    return "".join(
        option_prefix(spec.reference_prefix, i, spec.reference_prefix_characters)
        + (MEDIA_MARK if ref.image else ref.text) + spec.reference_suffix
        for i, ref in enumerate(inst.references)
    )


def option_images(inst: Instance) -> list[ContentPart]:
    return [ref.image for ref in inst.references if ref.image]


def correct_letters(spec: AdapterSpec, inst: Instance) -> str:
    letters = [option_label(spec.reference_prefix, i, spec.reference_prefix_characters)
               for i, r in enumerate(inst.references) if r.correct]
    return letters[0] if letters else "n/a"


def output_mapping(spec: AdapterSpec, inst: Instance) -> dict[str, str]:
    return {option_label(spec.reference_prefix, i, spec.reference_prefix_characters): ref.text
            for i, ref in enumerate(inst.references)}


def check_options(inst: Instance) -> None:
    """A lettered multiple-choice adapter's need: 1 to 26 options and a text-and-images input."""
    if not inst.references:
        raise AdapterError(f"instance {inst.id!r} has no references: multiple_choice_joint needs options")
    if len(inst.references) > len(LETTERS):
        raise AdapterError(f"instance {inst.id!r} has {len(inst.references)} options; "
                           f"at most {len(LETTERS)} can be lettered")
    check_text_input(inst)


@adapter("multiple_choice_joint", version="1", texts=LAYOUT_TEXTS + OPTION_TEXTS, check=check_options)
def multiple_choice_joint(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    check_options(inst)

    def block(example: Instance, with_answer: bool) -> tuple[str, list[ContentPart]]:
        body, media = input_with_media(example)
        text = spec.input_prefix + body + spec.input_suffix + options_block(spec, example)
        media = media + option_images(example)
        if with_answer:
            return text + spec.output_prefix + correct_letters(spec, example) + spec.output_suffix, media
        return text + spec.output_prefix.rstrip(), media

    return layout(spec, inst, train, block, output_mapping=output_mapping(spec, inst))


def check_text_options(inst: Instance) -> None:
    """Log-likelihood multiple choice needs text options appended to a text prompt."""
    check_options(inst)
    if any(ref.image for ref in inst.references):
        raise AdapterError(f"instance {inst.id!r} has image options: "
                           "multiple_choice_separate_original scores text options")
    if input_with_media(inst)[1]:
        raise AdapterError(f"instance {inst.id!r} has images: multiple_choice_separate_original scores text prompts")


@adapter("multiple_choice_separate_original", version="1", few_shot=False,
         texts=("global_prefix", "instructions", "input_prefix", "input_suffix", "instance_prefix"),
         check=check_text_options)
def multiple_choice_separate_original(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    """HELM's log-likelihood multiple choice (``MultipleChoiceSeparateAdapter``, the method lm-eval is
    built on): zero-shot, each option appended to ``input_prefix + input + input_suffix`` as its own
    request, echoed with logprobs and nothing generated; the option with the highest log-likelihood
    per token wins (see ``metrics/reference.py``). Options are text: image-valued ones cannot be
    appended to a prompt."""
    check_text_options(inst)
    body, _ = input_with_media(inst)
    return Prompt(
        instance_id=inst.id,
        split=inst.split,
        head=head(spec) + (spec.instance_prefix if spec.instructions else ""),
        query=spec.input_prefix + body + spec.input_suffix,
        continuations=[ref.text for ref in inst.references],
    )


@adapter("multiple_choice_separate_calibrated", version="1", few_shot=False,
         texts=("global_prefix", "instructions", "input_prefix", "input_suffix", "instance_prefix"),
         check=check_text_options)
def multiple_choice_separate_calibrated(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    """HELM's ``MultipleChoiceCalibratedAdapter`` (GPT-3's calibrated scoring, its paper's section 2.4):
    each option is scored as in ``multiple_choice_separate_original`` and again after an answer-free
    prompt, ``Answer:`` in place of the input (no examples); the option's score is its log-likelihood
    after the input minus its log-likelihood after ``Answer:`` (see ``metrics/reference.py``)."""
    prompt = multiple_choice_separate_original(spec, inst, train)
    return prompt.model_copy(update={"calibration": prompt.head + spec.input_prefix + "Answer:" + spec.input_suffix})
