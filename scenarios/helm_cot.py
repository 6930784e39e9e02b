"""The zero-shot chain-of-thought prompt of HELM Capabilities' multiple-choice scenarios (MMLU-Pro,
GPQA), in our own words, and its v2 variant (HELM's reasoning_v2 entries). Used by those scenarios'
``default_adapter``; the adapter itself is ``multiple_choice_joint_chain_of_thought``.

The four sentences are declared prompt texts (:data:`COT_TEXTS`), so a board's ``prompts:`` or
``--prompts FILE`` can replace any of them per scenario (e.g. with HELM's exact wording).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from helmflow.prompts import PromptText
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
V2_FORMAT_SUFFIX = ('In your response, put the single capital letter of your chosen option '
                    'in place of "insert answer here".')
V1_MAX_TOKENS = 4096
V2_EXTRA_TOKENS = 10_000
# HELM v1 never set a temperature for MMLU-Pro/GPQA, so its AdapterSpec default (1.0) applied. We keep
# that for comparability; a board sets ``adapter: {temperature: 0}`` for greedy decoding.
HELM_V1_TEMPERATURE = 1.0

COT_TEXTS = {
    "question_lead_in": PromptText(COT_INPUT_PREFIX, "the sentence before each question", field="input_prefix"),
    "choices_line": PromptText(COT_INPUT_SUFFIX, "after the question, before the lettered options",
                               field="input_suffix"),
    "cot_suffix": PromptText(COT_SUFFIX, "after the options: the request to reason step by step and the answer form "
                             "the chain_of_thought_correctness metric extracts", field="global_suffix"),
    "answer_format": PromptText(V2_FORMAT_SUFFIX, "variant v2 only: the answer-format line after cot_suffix "
                                "(joined by a blank line)", field="global_suffix"),
}

# How these texts compare with HELM's (its capabilities run specs), for ``reproduce --explain``.
COT_WORDING = (
    "the question lead-in, the step-by-step request and its answer-form sentence (and, for v2, the "
    "answer-format line) are helmflow's own wording of HELM's requests, so no prompt is byte-identical to HELM's; "
    'the "Choices:" line, the option lettering and the "The correct answer is (X)" form the metric reads match HELM. '
    "A prompts file with HELM's sentences as question_lead_in, cot_suffix and answer_format replaces them "
    "(the rest of the layout already matches)"
)


def capabilities_cot_spec(reference_prefix: str, variant: Variant = "v1",
                          text: Callable[[str], str] = lambda name: COT_TEXTS[name].default) -> AdapterSpec:
    """The zero-shot CoT adapter spec HELM Capabilities uses for MMLU-Pro ("A. ") and GPQA ("(A) ");
    ``text(name)`` gives the wording of each of :data:`COT_TEXTS` (a scenario's :meth:`text`)."""
    suffix = text("cot_suffix") + (f"\n\n{text('answer_format')}" if variant == "v2" else "")
    max_tokens = V1_MAX_TOKENS + (V2_EXTRA_TOKENS if variant == "v2" else 0)
    return AdapterSpec(
        method="multiple_choice_joint_chain_of_thought",
        input_prefix=text("question_lead_in"),
        input_suffix=text("choices_line"),
        reference_prefix=reference_prefix,
        reference_suffix="\n",
        output_prefix="",
        output_suffix="\n",
        instance_prefix="\n",
        global_suffix=suffix,
        max_train_instances=0,
        generation=GenerationParams(max_tokens=max_tokens, temperature=HELM_V1_TEMPERATURE, num_outputs=1),
    )
