"""The zero-shot chain-of-thought prompt of HELM Capabilities' multiple-choice scenarios (MMLU-Pro,
GPQA), in our own words, and its v2 variant (HELM's reasoning_v2 entries). Used by those scenarios'
``default_adapter``; the adapter itself is ``multiple_choice_joint_chain_of_thought``.
"""

from __future__ import annotations

from typing import Literal

from helmflow.records import AdapterSpec, GenerationParams

Variant = Literal["v1", "v2"]

# The shape of HELM Capabilities' MMLU-Pro/GPQA prompt in our own words: question, a "Choices:" line,
# lettered options, then a request to reason step by step and answer "The correct answer is (X)".
COT_INPUT_PREFIX = "Which of the choices below correctly answers this question? "
COT_INPUT_SUFFIX = "\nChoices:\n"
COT_SUFFIX = (
    "Work through the problem step by step. Then, based on that reasoning, pick the one answer choice "
    'that is most likely correct and state it in this exact form: "The correct answer is (insert answer here)".'
)
# HELM v2 (run_entries_capabilities_reasoning_v2) appends an output-format instruction to the suffix
# and raises the token budget by 10,000 (``increase_max_tokens``).
V2_FORMAT_SUFFIX = 'In your response, put the single capital letter of your chosen option in place of "insert answer here".'
V1_MAX_TOKENS = 4096
V2_EXTRA_TOKENS = 10_000
# HELM v1 never set a temperature for MMLU-Pro/GPQA, so its AdapterSpec default (1.0) applied. We keep
# that for comparability; a board sets ``adapter: {temperature: 0}`` for greedy decoding.
HELM_V1_TEMPERATURE = 1.0


def capabilities_cot_spec(reference_prefix: str, variant: Variant = "v1") -> AdapterSpec:
    """The zero-shot CoT adapter spec HELM Capabilities uses for MMLU-Pro ("A. ") and GPQA ("(A) ")."""
    suffix = COT_SUFFIX + (f"\n\n{V2_FORMAT_SUFFIX}" if variant == "v2" else "")
    max_tokens = V1_MAX_TOKENS + (V2_EXTRA_TOKENS if variant == "v2" else 0)
    return AdapterSpec(
        method="multiple_choice_joint_chain_of_thought",
        input_prefix=COT_INPUT_PREFIX,
        input_suffix=COT_INPUT_SUFFIX,
        reference_prefix=reference_prefix,
        reference_suffix="\n",
        output_prefix="",
        output_suffix="\n",
        instance_prefix="\n",
        global_suffix=suffix,
        max_train_instances=0,
        generation=GenerationParams(max_tokens=max_tokens, temperature=HELM_V1_TEMPERATURE, num_outputs=1),
    )
