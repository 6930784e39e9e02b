"""HELM's ``multiple_choice_joint_chain_of_thought`` (the prompts that use it live with their scenarios).

Same layout as ``multiple_choice_joint`` (lettered options in one prompt, ``output_mapping`` back to
the option text). An in-context example shows its reasoning (``extra["chain_of_thought"]``, e.g.
a dataset's explanation column) before its letter, as HELM's adapter does with empty CoT prefix/suffix. The
query ends at ``output_prefix``; ``global_suffix`` asks for reasoning and the final
"The correct answer is (X)" line that ``chain_of_thought_correctness`` extracts.
"""

from __future__ import annotations

from helmflow.adapters import LAYOUT_TEXTS, OPTION_TEXTS, adapter, input_with_media
from helmflow.adapters.generation import layout
from helmflow.adapters.multiple_choice import (
    check_options,
    correct_letters,
    option_images,
    options_block,
    output_mapping,
)
from helmflow.records import AdapterSpec, ContentPart, Instance, Prompt


@adapter("multiple_choice_joint_chain_of_thought", version="1", texts=LAYOUT_TEXTS + OPTION_TEXTS,
         check=check_options)
def multiple_choice_joint_chain_of_thought(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    check_options(inst)

    def block(example: Instance, with_answer: bool) -> tuple[str, list[ContentPart]]:
        body, media = input_with_media(example)
        text = spec.input_prefix + body + spec.input_suffix + options_block(spec, example)
        media = media + option_images(example)
        if not with_answer:
            return text + spec.output_prefix.rstrip(), media
        reasoning = str(example.extra.get("chain_of_thought", ""))
        return text + spec.output_prefix + reasoning + correct_letters(spec, example) + spec.output_suffix, media

    return layout(spec, inst, train, block, output_mapping=output_mapping(spec, inst))
