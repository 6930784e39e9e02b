"""Golden prompts for every adapter method, HELM's class-balanced few-shot draw, and window fitting.

Expected strings are written out by hand from HELM's rules: ``instance_prefix.join([instructions + "\\n",
*example blocks, query block])`` between the global prefix and suffix.
"""

from __future__ import annotations

from collections import Counter

from helmflow.adapters import ADAPTERS, adapt, sample_train_examples
from helmflow.records import AdapterSpec, ChatMessage, Deployment, GenerationParams, Input, Instance, Reference
from helmflow.request_builder import build_requests, fit_prompt
from helmflow.scenarios import get_scenario


def inst(id: str, text: str, answer: str | None = None, split: str = "test", options: list[str] | None = None, correct: int = 0):
    if options is not None:
        refs = [Reference(text=o, correct=i == correct) for i, o in enumerate(options)]
    else:
        refs = [Reference(text=answer, correct=True)] if answer is not None else []
    return Instance(id=id, split=split, input=Input(text=text), references=refs)


def prompt(spec: AdapterSpec, instance: Instance, train: list[Instance]):
    return ADAPTERS.get(spec.method).fn(spec, instance, train)


def test_generation_golden_prompt_synthetic_reasoning_spec():
    spec = get_scenario("synthetic_reasoning", {"mode": "variable_substitution"}).default_adapter
    train = [inst("t1", "Rules: X + Y | Substitutions: X by \" cat \" , Y by \" dog \"", "cat + dog", "train"),
             inst("t2", "Rules: Z = Z | Substitutions: Z by \" kiwi \"", "kiwi = kiwi", "train")]
    p = prompt(spec, inst("e1", "Rules: X - X | Substitutions: X by \" seal \""), train)
    assert p.text() == (
        "Please solve the following problem.\n"
        "\n"
        "Rules: X + Y | Substitutions: X by \" cat \" , Y by \" dog \"\nTarget: cat + dog\n"
        "\n"
        "Rules: Z = Z | Substitutions: Z by \" kiwi \"\nTarget: kiwi = kiwi\n"
        "\n"
        "Rules: X - X | Substitutions: X by \" seal \"\nTarget:"
    )
    # dropping examples from the end keeps HELM's layout exactly
    assert p.text(1) == (
        "Please solve the following problem.\n\nRules: X + Y | Substitutions: X by \" cat \" , Y by \" dog \"\n"
        "Target: cat + dog\n\nRules: X - X | Substitutions: X by \" seal \"\nTarget:"
    )
    assert p.text(0) == "Please solve the following problem.\n\nRules: X - X | Substitutions: X by \" seal \"\nTarget:"


def test_generation_golden_prompt_dyck_completion_spec():
    spec = get_scenario("dyck_language", {"num_parenthesis_pairs": 2}).default_adapter
    p = prompt(spec, inst("e", "( [ [ ]"), [inst("t", "( [", " ] )", "train"), inst("u", "[", " ]", "train")])
    assert p.text() == (
        "Please complete the rest of the following Dyck sequences, making sure that the parentheses are closed properly.\n"
        "\nInput: ( [ ] )\nInput: [ ]\nInput: ( [ [ ]"
    )


def test_generation_without_instructions_has_no_leading_separator_and_keeps_global_affixes():
    spec = AdapterSpec(global_prefix="<<", global_suffix=">>", input_prefix="Q: ", output_prefix="A: ")
    p = prompt(spec, inst("e", "2+2?"), [inst("t", "1+1?", "2", "train")])
    assert p.text() == "<<Q: 1+1?\nA: 2\n\nQ: 2+2?\nA:>>"
    assert prompt(spec, inst("e", "x"), [inst("t", "y", None, "train")]).text() == "<<Q: y\nA: n/a\n\nQ: x\nA:>>"


def test_multiple_choice_joint_golden_prompt_and_output_mapping():
    spec = get_scenario("arithmetic", {"choices": 3}).default_adapter
    train = [inst("t", "What is 1 + 1?", split="train", options=["3", "2"], correct=1)]
    p = prompt(spec, inst("e", "What is 2 + 2?", options=["4", "5", "ünï"], correct=0), train)
    assert p.text() == (
        "The following are multiple choice questions (with answers) about arithmetic.\n"
        "\n"
        "Question: What is 1 + 1?\nA. 3\nB. 2\nAnswer: B\n"
        "\n"
        "Question: What is 2 + 2?\nA. 4\nB. 5\nC. ünï\nAnswer:"
    )
    assert p.output_mapping == {"A": "4", "B": "5", "C": "ünï"}
    # the option letter replaces the first letter of the reference prefix, whatever surrounds it
    paren = spec.override(reference_prefix="(A) ", instructions="", max_train_instances=0)
    assert prompt(paren, inst("e", "Q", options=["x", "y"]), []).text() == "Question: Q\n(A) x\n(B) y\nAnswer:"


def test_multiple_choice_joint_requests_carry_the_mapping():
    spec = get_scenario("arithmetic", {"choices": 4}).default_adapter.override(max_eval_instances=3)
    insts = get_scenario("arithmetic", {"choices": 4, "num_test": 5}).load({})
    dep = Deployment(name="d", client="offline", model="m")
    reqs = build_requests(adapt(spec, insts), spec, dep)
    assert len(reqs) == 3 and all(set(r.output_mapping) == {"A", "B", "C", "D"} for r in reqs)
    assert all(r.num_train_instances == 3 and not r.prompt_truncated for r in reqs)


def test_chat_golden_messages():
    spec = AdapterSpec(method="chat", instructions="Answer with a number.", input_prefix="Question: ", input_suffix="")
    p = prompt(spec, inst("e", "What is 2 + 2?"), [inst("t", "What is 1 + 1?", "2", "train")])
    assert p.messages == [
        ChatMessage(role="system", content="Answer with a number."),
        ChatMessage(role="user", content="Question: What is 1 + 1?"),
        ChatMessage(role="assistant", content="2"),
        ChatMessage(role="user", content="Question: What is 2 + 2?"),
    ]
    history = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="hello"),
               ChatMessage(role="user", content="bye?")]
    chat_inst = Instance(id="c", input=Input(messages=history))
    assert prompt(AdapterSpec(method="chat"), chat_inst, []).messages == history
    req = build_requests([p], spec, Deployment(name="d", client="offline", model="m"))[0]
    assert req.body.prompt is None and req.body.messages == p.messages


def test_few_shot_is_class_balanced_as_helm():
    # HELM's docstring example: with labels yes (2) and no (1), two examples are one of each, yes first
    train = [inst("n", "say no", "no", "train"), inst("y1", "say yes", "yes", "train"), inst("y2", "say yes", "yes", "train")]
    picked = sample_train_examples(train, 2, seed=0)
    assert [e.correct_references[0].text for e in picked] == ["yes", "no"]
    big = [inst(f"{lab}{i}", f"q{lab}{i}", lab, "train") for lab, n in (("a", 6), ("b", 4), ("c", 1)) for i in range(n)]
    labels = Counter(e.correct_references[0].text for e in sample_train_examples(big, 5, seed=3))
    assert labels == {"a": 2, "b": 2, "c": 1}  # round-robin by frequency: a, b, c, a, b
    assert sample_train_examples(big, 5, seed=3) == sample_train_examples(big, 5, seed=3)
    assert {e.id for e in sample_train_examples(big, 5, seed=4)} != {e.id for e in sample_train_examples(big, 5, seed=3)}


def test_few_shot_fills_from_unlabeled_and_never_exceeds_the_pool():
    train = [inst("l", "q", "x", "train"), inst("u1", "q1", None, "train"), inst("u2", "q2", None, "train")]
    assert {e.id for e in sample_train_examples(train, 2, seed=0)} < {"l", "u1", "u2"}
    assert "l" in {e.id for e in sample_train_examples(train, 2, seed=0)}
    assert len(sample_train_examples(train, 10, seed=0)) == 3
    assert sample_train_examples(train, 0, seed=0) == [] and sample_train_examples([], 3, seed=0) == []


def test_window_fitting_drops_examples_from_the_end_then_truncates():
    spec = AdapterSpec(input_prefix="Q: ", output_prefix="A: ", generation=GenerationParams(max_tokens=4))
    train = [inst(f"t{i}", "one two three four", "five", "train") for i in range(3)]
    p = prompt(spec, inst("e", "six seven"), train)
    words = len(p.text().split())
    roomy = Deployment(name="d", client="offline", model="m", context_window=words + 4)
    assert fit_prompt(p, roomy, 4) == (p.text(), 3, False)
    one_less = Deployment(name="d", client="offline", model="m", context_window=words + 3)
    text, kept, truncated = fit_prompt(p, one_less, 4)
    assert (text, kept, truncated) == (p.text(2), 2, True)
    long = prompt(spec, inst("e", " ".join(f"w{i}" for i in range(20))), train)
    tiny = Deployment(name="d", client="offline", model="m", context_window=16)
    req = build_requests([long], spec, tiny)[0]
    assert req.num_train_instances == 0 and req.prompt_truncated
    assert len(req.body.prompt.split()) == 16 - 4 and long.text(0).startswith(req.body.prompt)
