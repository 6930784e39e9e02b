"""HELM's chain-of-thought letter extraction and scoring, and the CoT multiple-choice adapter."""

from __future__ import annotations

import pytest

from helmflow.adapters import ADAPTERS
from helmflow.metrics import METRICS, MetricInput
from helmflow.metrics.chain_of_thought import extract_answer
from helmflow.records import Completion, Input, Instance, Reference
from helmflow.scenarios.helm_cot import COT_SUFFIX, V2_FORMAT_SUFFIX, capabilities_cot_spec


@pytest.mark.parametrize(
    "text, letter",
    [
        ("Step 1 ... so the correct answer is (C).", "C"),  # the requested form
        ("Therefore the answer is D", "D"),  # no parentheses
        ("**The correct answer is (B)**", "B"),  # markdown bold around the sentence
        ("The correct answer is **(E)**", "E"),  # bold letter: pattern 1 misses, pattern 3 skips "**("
        ("The correct answer is **J**", "J"),  # bold letter without parentheses: pattern 3
        ("The correct answer is: (J)", None),  # a colon after "is" defeats every HELM pattern
        ("The correct answer is option (H)", "H"),  # words between: pattern 4 skips lower case
        ("the answer is (a)", None),  # lower-case letters are not accepted (HELM's [A-J])
        ("First I thought the answer is (A), but on reflection the correct answer is (B).", "A"),  # earliest wins
        ("The correct answer is (B) or maybe the answer is (C)", "B"),
        ("Answer: (C)", None),  # HELM's 2nd pattern is a literal-bracket bug: never matches plain "Answer:"
        ("[aA]nswer: G", "G"),  # ...it only matches its own literal text
        ("The correct answer is (K)", None),  # outside A-J
        ("I cannot decide between (A) and (B).", None),  # letters but no answer phrase
        ("", None),
    ],
)
def test_extract_answer_matches_helm_patterns(text, letter):
    assert extract_answer(text) == letter


def _input(text: str, correct_index: int) -> MetricInput:
    refs = [Reference(text=f"opt{i}", correct=i == correct_index) for i in range(4)]
    inst = Instance(id="id1", input=Input(text="q"), references=refs)
    spec = capabilities_cot_spec("(A) ")
    return MetricInput(inst, [], [Completion(request_hash="h", text=text)], spec)


def test_correctness_scores_letter_of_first_correct_reference():
    fn = METRICS.get("chain_of_thought_correctness").fn
    assert fn(_input("so the correct answer is (C)", 2)) == {"chain_of_thought_correctness": 1.0}
    assert fn(_input("so the correct answer is (C)", 1)) == {"chain_of_thought_correctness": 0.0}
    assert fn(_input("no letter here", 0)) == {"chain_of_thought_correctness": 0.0}


def test_cot_prompt_shape_and_variants():
    inst = Instance(id="id9", input=Input(text="Q?"), references=[Reference(text=t, correct=t == "b") for t in "abc"])
    spec = capabilities_cot_spec("(A) ")
    prompt = ADAPTERS.get("multiple_choice_joint_chain_of_thought").fn(spec, inst, [])
    text = prompt.text()
    assert text == spec.input_prefix + "Q?\nChoices:\n(A) a\n(B) b\n(C) c\n" + COT_SUFFIX
    assert '"The correct answer is (insert answer here)"' in text
    assert prompt.output_mapping == {"A": "a", "B": "b", "C": "c"}
    assert (spec.generation.max_tokens, spec.generation.temperature, spec.max_train_instances) == (4096, 1.0, 0)
    v2 = capabilities_cot_spec("A. ", "v2")
    assert v2.global_suffix == COT_SUFFIX + "\n\n" + V2_FORMAT_SUFFIX and v2.generation.max_tokens == 14096


def test_cot_examples_show_reasoning_then_letter():
    train = Instance(id="t", split="train", input=Input(text="TQ"), extra={"chain_of_thought": "because. "},
                     references=[Reference(text="x"), Reference(text="y", correct=True)])
    inst = Instance(id="e", input=Input(text="EQ"), references=[Reference(text="p", correct=True), Reference(text="q")])
    spec = capabilities_cot_spec("A. ").override(output_prefix="Answer: ")
    prompt = ADAPTERS.get("multiple_choice_joint_chain_of_thought").fn(spec, inst, [train])
    assert prompt.examples == [spec.input_prefix + "TQ\nChoices:\nA. x\nB. y\nAnswer: because. B\n\n"]
    assert prompt.query.startswith(spec.input_prefix + "EQ\nChoices:\nA. p\nB. q\nAnswer:")
