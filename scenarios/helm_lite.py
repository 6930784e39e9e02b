"""HELM Lite's two prompt shapes (reference §B.3), in our own words: in-context generation and
multiple choice joint, both greedy with five in-context examples; and HELM's instruction-following
variant (``follow_format``), which opens the prompt with a note that input/output examples follow and
closes it with a request to answer the last one in their format (HELM's ``follow_format_instructions``
expander, §B.1). The scenarios' ``default_adapter`` builds on these; the adapters are HELM's layout.
"""

from __future__ import annotations

from helmflow.records import AdapterSpec, GenerationParams

# Our wording of HELM's IN_CONTEXT_LEARNING_INSTRUCTIONS_PREFIX/SUFFIX: the same three facts (examples
# follow, the last output is missing, write it in the examples' format), not HELM's sentences.
FOLLOW_FORMAT_PREFIX = ("Below are example inputs, each followed by its output. Study how each output is derived from "
                        "its input. The final example is missing its output: your task is to produce it.")
FOLLOW_FORMAT_SUFFIX = ("Write only the output of the final example, "
                        "in exactly the same format as the outputs shown above.")


# How these prompts compare with HELM's (``helm_wording``, printed by ``reproduce --explain``).
GENERATION_WORDING = ("the input/answer labels, the blank line between examples and the five in-context examples "
                      "follow HELM's generation adapter; with follow_format, the opening and closing requests "
                      "(global_prefix, global_suffix) are helmflow's own wording of HELM's instruction-following "
                      "prefix and suffix")
MULTIPLE_CHOICE_WORDING = ("the instructions line is helmflow's own sentence naming the topic (HELM's says that "
                           "multiple-choice questions about the topic follow), so no prompt is byte-identical to "
                           "HELM's; the Question:, lettered-option and Answer: layout and the five in-context "
                           "examples match HELM's multiple-choice adapter. A prompts file with HELM's sentence as "
                           "<scenario>.instructions replaces it")


def generation_spec(input_prefix: str, output_noun: str, max_tokens: int, stop: list[str], *, instructions: str = "",
                    follow_format: bool = False, max_train_instances: int = 5) -> AdapterSpec:
    """HELM's ``get_generation_adapter_spec``: blocks ``<input_prefix><input>\\n<Noun>: <output>\\n`` separated
    by a blank line, the query ending at ``<Noun>:``; temperature 0, one output, one trial. With
    ``follow_format``, HELM's global prefix (+ blank line) and suffix (blank line, request, newline, ``<Noun>:``)."""
    spec = AdapterSpec(
        method="generation", instructions=instructions, input_prefix=input_prefix, input_suffix="\n",
        output_prefix=f"{output_noun}: ", output_suffix="\n", instance_prefix="\n",
        max_train_instances=max_train_instances,
        generation=GenerationParams(max_tokens=max_tokens, temperature=0.0, stop=stop, num_outputs=1),
    )
    return with_follow_format(spec) if follow_format else spec


def with_follow_format(spec: AdapterSpec) -> AdapterSpec:
    """HELM's ``follow_format_instructions`` expander on any generation spec: the note (+ blank line) before
    everything, and after the query a blank line, the request, a newline and the output prefix stripped."""
    return spec.model_copy(update={"global_prefix": FOLLOW_FORMAT_PREFIX + "\n\n",
                                   "global_suffix": "\n\n" + FOLLOW_FORMAT_SUFFIX + "\n" + spec.output_prefix.strip()})


def multiple_choice_spec(topic: str) -> AdapterSpec:
    """HELM's ``get_multiple_choice_joint_adapter_spec``: ``Question: q``, lettered ``A. option`` lines,
    ``Answer: <letter>``; five examples, one output token, greedy, no stop sequence. The instructions
    name the topic (our wording)."""
    return AdapterSpec(
        method="multiple_choice_joint",
        instructions=f"Answer each multiple-choice question about {topic} with the letter of the correct option.",
        input_prefix="Question: ", input_suffix="\n", reference_prefix="A. ", reference_suffix="\n",
        output_prefix="Answer: ", output_suffix="\n", instance_prefix="\n", max_train_instances=5,
        generation=GenerationParams(max_tokens=1, temperature=0.0, stop=[], num_outputs=1),
    )
