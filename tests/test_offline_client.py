"""The offline deployments' documented behaviours, on prompts built by the real adapters."""

from __future__ import annotations

import asyncio
import math

import pytest

from helmflow.adapters import adapt
from helmflow.clients import PermanentError, load_deployments, make_client
from helmflow.clients.offline import close_dyck, induce_rule, match_pattern, substitute_rule
from helmflow.records import Deployment, RequestBody
from helmflow.request_builder import build_requests
from helmflow.scenarios import get_scenario


def answers(deployment: str, scenario: str, params: dict, n: int = 40, **adapter) -> list[tuple[str, list[str]]]:
    """(completion text, correct reference texts) for the first n evaluated instances."""
    scen = get_scenario(scenario, params)
    spec = scen.default_adapter.override(max_eval_instances=n, **adapter)
    instances = scen.load({})
    by_id = {i.id: i for i in instances}
    dep = load_deployments()[deployment]
    requests = build_requests(adapt(spec, instances), spec, dep)
    client = make_client(dep)

    async def go():
        return [await client.complete(r.body) for r in requests]

    out = []
    for req, res in zip(requests, asyncio.run(go()), strict=True):
        golds = [r.text for r in by_id[req.instance_id].correct_references]
        text = req.output_mapping.get(res.text.strip(), res.text) if req.output_mapping else res.text
        out.append((text, golds))
    return out


def accuracy(rows) -> float:
    return sum(text.strip() in [g.strip() for g in golds] for text, golds in rows) / len(rows)


SR = {"num_train": 50, "num_valid": 0, "num_test": 60}


@pytest.mark.parametrize(
    "scenario, params, at_least",
    [
        ("arithmetic", {"digits": 4, "ops": "+-*"}, 1.0),
        ("arithmetic", {"digits": 4, "choices": 4}, 1.0),
        ("synthetic_reasoning", {"mode": "variable_substitution", **SR}, 1.0),
        ("synthetic_reasoning", {"mode": "pattern_match", **SR}, 0.85),  # ties between candidate patterns
        ("dyck_language", {"num_parenthesis_pairs": 3, "num_test": 40}, 1.0),
    ],
)
def test_solver_solves_what_it_recognises(scenario, params, at_least):
    assert accuracy(answers("offline/solver", scenario, params)) >= at_least


def test_solver_induction_names_symbols_by_appearance_only():
    assert induce_rule("Two results: cat + dog = dog | kiwi + pear seal = pear seal") == "Rule: X + Y = Y"
    assert induce_rule("Two results: a | b c d") is None  # no segmentation into 1-2 word chunks
    rows = answers("offline/solver", "synthetic_reasoning", {"mode": "induction", **SR})
    assert 0.0 < accuracy(rows) < 0.5  # right only when the hidden rule uses X, Y, Z in order
    assert all(text.startswith("Rule: ") for text, _ in rows)


def test_solver_parsers():
    assert substitute_rule('Rules: X + Y = X | Substitutions: X by " a b " , Y by " c "') == "a b + c = a b"
    assert match_pattern("Rules: X + Y | Y + X = | X = | Result: a b + c") == "X + Y"
    assert close_dyck("( [ { } ( )") == " ] )"
    assert close_dyck("( ]") is None and close_dyck("( )") is None


def test_noisy_solver_is_wrong_on_about_its_error_rate_and_keeps_the_answer_shape():
    rows = answers("offline/solver-noisy", "arithmetic", {"digits": 3, "num_test": 400}, n=400)
    assert 0.62 <= accuracy(rows) <= 0.78
    assert all(text.lstrip("-").isdigit() for text, _ in rows)


def test_chain_of_thought_form_and_first_option_baseline():
    cot = {"method": "multiple_choice_joint_chain_of_thought", "global_suffix": 'Answer "The correct answer is (X)".',
           "max_train_instances": 0, "max_tokens": 50}
    solver = answers("offline/solver", "arithmetic", {"choices": 4}, n=10, **cot)
    assert all(text.startswith("The correct answer is (") for text, _ in solver)
    first = answers("offline/first-option", "arithmetic", {"choices": 4}, n=10, **cot)
    assert {text for text, _ in first} == {"The correct answer is (A)."}
    assert _complete({"behavior": "first_option"}, "Question: Q\nA. x\nB. y\nAnswer:").text == "A"
    assert {t for t, _ in answers("offline/first-option", "arithmetic", {"digits": 2}, n=5)} == {""}  # no options


def _complete(options: dict, prompt: str = "Question: What is 2 + 3?\nAnswer:", **body) -> object:
    client = make_client(Deployment(name="t/x", client="offline", model="x", options=options))
    return asyncio.run(client.complete(RequestBody(model="x", prompt=prompt, max_tokens=body.pop("max_tokens", 5),
                                                   temperature=0, **body)))


def test_echo_constant_logprobs_stop_and_max_tokens():
    assert _complete({"behavior": "echo"}, "Input: a b c\nOutput:").text == "Output:"
    assert _complete({"behavior": "echo"}, "first\nLabel: x y").text == "x y"
    res = _complete({"behavior": "constant", "answer": "one two three four"}, max_tokens=2)
    assert (res.text, res.finish_reason, res.tokens) == ("one two", "length", ["one", "two"])
    assert len(res.logprobs) == 2 and all(math.log(0.5) <= lp < 0 for lp in res.logprobs)
    assert _complete({"behavior": "constant", "answer": "yes.\nmore"}, stop=["\n"]).text == "yes."
    solved = _complete({"behavior": "solver", "accuracy": 0.8})
    assert solved.tokens and solved.logprobs == [pytest.approx(math.log(0.8))] * len(solved.tokens)
    assert _complete({"behavior": "solver"}).logprobs == [0.0]


def test_fail_semantics_and_bad_options():
    with pytest.raises(PermanentError, match="fail: always"):
        _complete({"behavior": "echo", "fail": "always"})
    client = make_client(Deployment(name="t/after", client="offline", model="x", options={"fail": "after:1"}))
    body = RequestBody(model="x", prompt="p", max_tokens=3, temperature=0)
    asyncio.run(client.complete(body))
    with pytest.raises(PermanentError, match="after:1"):
        asyncio.run(client.complete(body))
    with pytest.raises(PermanentError, match="bad offline options"):
        make_client(Deployment(name="t/bad", client="offline", model="x", options={"behavior": "psychic"}))


def test_calls_of_a_batch_are_counted_in_storage_before_the_batch_returns(store):
    """The offline client counts its own calls (no caller flushes them): a gathered batch is one
    counter file, readable from storage as soon as the batch has returned."""
    from helmflow import layout
    from helmflow.clients.offline import offline_call_count

    client = make_client(load_deployments()["offline/echo"], store)
    body = RequestBody(model="echo", prompt="Say: hi", max_tokens=5, temperature=0)

    async def batch(n: int):
        return await asyncio.gather(*(client.complete(body) for _ in range(n)))

    asyncio.run(batch(5))
    assert offline_call_count(store, "offline/echo") == 5
    assert len(store.find(layout.offline_counters("offline/echo"))) == 1
    asyncio.run(batch(3))
    assert offline_call_count(store, "offline/echo") == 8
    assert offline_call_count(store, "offline/solver") == 0
