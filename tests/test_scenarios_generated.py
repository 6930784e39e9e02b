"""The locally generated scenarios: HELM's draws, determinism, and parameters in scenario_version.

The golden instances below were produced by HELM's own generation procedure (synthetic_reasoning_scenario.py
and dyck_language_scenario.py, run with their default seeds) and compared item by item for every mode
and every number of bracket pairs; a change in RNG call order moves them.
"""

from __future__ import annotations

import pytest

from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.scenarios import ScenarioError, get_scenario

SR_SMALL = {"num_valid": 1, "num_test": 2}  # train (1000) is drawn first, so the first draws are HELM's


def _rows(name: str, params: dict) -> list[tuple[str, str, str, list[tuple[str, bool]]]]:
    return [
        (i.id, i.split, i.input.text, [(r.text, r.correct) for r in i.references])
        for i in get_scenario(name, params).load({})
    ]


@pytest.mark.parametrize(
    "mode, first, first_target, valid, valid_target",
    [
        (
            "pattern_match",
            "Rules: + = X Z | X = Z + | + Z = X | X = Z + | Result: + blueberry = horse", "+ Z = X",
            "Rules: + Z = = X | Z + X = = | Z X + = = | + X = Z = | Result: zebra + pear = =", "Z + X = =",
        ),
        (
            "variable_substitution",
            'Rules: + Z = X | Substitutions: X by " horse " , Z by " blueberry "', "+ blueberry = horse",
            'Rules: = X Z - Y + | Substitutions: X by " shark " , Y by " blackberry " , Z by " blackberry "',
            "= shark blackberry - blackberry +",
        ),
        (
            "induction",
            "Two results: + blueberry = horse | + blueberry cobra = whale stork", "Rule: + Z = X",
            "Two results: = shark blackberry - blackberry + | = lion buffalo - blackberry zebra +", "Rule: = X Z - Y +",
        ),
    ],
)
def test_synthetic_reasoning_reproduces_helm_draws(mode, first, first_target, valid, valid_target):
    insts = get_scenario("synthetic_reasoning", {"mode": mode, **SR_SMALL}).load({})
    assert [i.split for i in insts] == ["train"] * 1000 + ["valid", "test", "test"]
    assert (insts[0].id, insts[0].input.text, insts[0].references[0].text) == ("id0", first, first_target)
    assert (insts[1000].input.text, insts[1000].references[0].text) == (valid, valid_target)
    assert all(len(i.references) == 1 and i.references[0].correct for i in insts)


def test_synthetic_reasoning_is_deterministic_and_seeded():
    params = {"mode": "induction", "num_train": 50, "num_valid": 10, "num_test": 10}
    assert _rows("synthetic_reasoning", params) == _rows("synthetic_reasoning", params)
    assert _rows("synthetic_reasoning", {**params, "seed": 7}) != _rows("synthetic_reasoning", params)


def test_variable_substitution_targets_follow_their_rules():
    for inst in get_scenario("synthetic_reasoning", {"mode": "variable_substitution", "num_train": 200, "num_valid": 0, "num_test": 0}).load({}):
        rules, subs = inst.input.text.removeprefix("Rules: ").split(" | Substitutions: ")
        mapping = dict(part.split(' by " ') for part in subs.removesuffix(' "').split(' " , '))
        assert inst.references[0].text == " ".join(mapping.get(tok, tok) for tok in rules.split())


@pytest.mark.slow
def test_dyck_reproduces_helm_draws():
    rows = _rows("dyck_language", {"num_parenthesis_pairs": 3})
    assert len(rows) == 503 and [r[1] for r in rows] == ["train"] * 3 + ["test"] * 500
    assert rows[0] == ("id0", "train", "( { { ( { ( ) } ) }", [(" } )", True)])
    assert rows[2] == ("id2", "train", "[ ( { { }", [(" } ) ]", True)])
    assert rows[3][2].startswith("( [ ( ) ( { { ( ( { { } } ) ) }") and rows[3][3] == [(" ) ] )", True)]
    assert rows[-1][0] == "id502" and rows[-1][3] == [(" } ]", True)]


def test_dyck_instances_are_valid_unique_and_closed_by_their_answer():
    rows = _rows("dyck_language", {"num_parenthesis_pairs": 4, "num_test": 60})
    pairs = {")": "(", "]": "[", "}": "{", ">": "<"}
    train_inputs = {r[2] for r in rows if r[1] == "train"}
    test_inputs = [r[2] for r in rows if r[1] == "test"]
    assert len(set(test_inputs)) == len(test_inputs) and not train_inputs & set(test_inputs)
    for _, split, prefix, refs in rows:
        closers = refs[0][0]
        assert closers.startswith(" ") and closers.split()
        stack = []
        for sym in (prefix + closers).split():
            if sym in pairs:
                assert stack and stack.pop() == pairs[sym]
            else:
                stack.append(sym)
        assert not stack, "prefix + answer must be a complete Dyck word"
        assert len(prefix.split()) < (100 if split == "test" else 50)


@pytest.mark.parametrize("params", [{"num_parenthesis_pairs": 5}, {"num_parenthesis_pairs": 2, "prob_p": 0.8, "prob_q": 0.3}])
def test_dyck_rejects_bad_parameters(params):
    with pytest.raises(ScenarioError, match="dyck_language"):
        get_scenario("dyck_language", params)


def test_arithmetic_choices_are_deterministic_with_one_correct_option():
    rows = _rows("arithmetic", {"digits": 3, "choices": 4, "num_test": 30})
    assert rows == _rows("arithmetic", {"digits": 3, "choices": 4, "num_test": 30})
    for _, _, question, refs in rows:
        a, op, b = question.removeprefix("What is ").removesuffix("?").split()
        answer = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        assert len(refs) == 4 and len({t for t, _ in refs}) == 4
        assert [t for t, c in refs if c] == [str(answer)]
    # options are drawn after their question: the first question is the free-answer scenario's first
    assert _rows("arithmetic", {"digits": 3, "num_test": 1})[0][2] == rows[0][2]
    with pytest.raises(ScenarioError, match="choices"):
        get_scenario("arithmetic", {"choices": 1})


@pytest.mark.parametrize(
    "name, params, changed",
    [
        ("synthetic_reasoning", {"mode": "induction"}, {"mode": "pattern_match"}),
        ("synthetic_reasoning", {"mode": "induction"}, {"seed": 1}),
        ("dyck_language", {"num_parenthesis_pairs": 2}, {"num_parenthesis_pairs": 3}),
        ("dyck_language", {"num_parenthesis_pairs": 2}, {"num_test": 10}),
        ("arithmetic", {}, {"choices": 4}),
    ],
)
def test_parameters_enter_scenario_version(name, params, changed):
    base = plan_scenario(ScenarioEntry(name=name, params=params), None)
    again = plan_scenario(ScenarioEntry(name=name, params=dict(params)), None)
    other = plan_scenario(ScenarioEntry(name=name, params={**params, **changed}), None)
    assert base.scenario_version == again.scenario_version
    assert other.scenario_version != base.scenario_version
    assert base.dataset_revision == "generated" and base.checksums == {}


# sha256 over every generated instance (id, split, input, references) at HELM's default sizes, taken
# from the numpy-call generators these replaced: the faster draws must not move a single instance.
FULL_DIGESTS = {
    ("synthetic_reasoning", "pattern_match"): "a6c22dc3fea029c6291a7e49a9c70aaaac6886dc1f9b63227e9f738572c9cc4d",
    ("synthetic_reasoning", "variable_substitution"): "8caa0c7e9cbe93ed01775897bf0058157ae76f295d2c91927a1cb2d19414757a",
    ("synthetic_reasoning", "induction"): "175e7e71918bb35ee26f3733640a07c85e82d47c7599eeccb8b84bcf6071078b",
    ("dyck_language", 1): "0cf133aa47280127b7c9a1d8e3270f69d93bf996202e0de554a5fa5e07322158",
    ("dyck_language", 2): "7f591157b1bf50f9608629186350b410012f8857f5a1a2c0af0d16882c10b089",
    ("dyck_language", 3): "635f2ae6b47ce7fb7f8691478621d16ace5c23cfe2b6f4d720e4ac2a1fa0b6c0",
    ("dyck_language", 4): "c8081a94d7b986873232f58d27246c2ce915ce11be42a245ce072b47dc5f961a",
}


@pytest.mark.parametrize("name, variant", list(FULL_DIGESTS))
@pytest.mark.slow
def test_full_size_generation_is_unchanged_instance_for_instance(name, variant):
    import hashlib
    import json

    params = {"mode": variant} if name == "synthetic_reasoning" else {"num_parenthesis_pairs": variant}
    digest = hashlib.sha256()
    for i in get_scenario(name, params).load({}):
        digest.update(json.dumps([i.id, i.split, i.input.text, [(r.text, r.correct) for r in i.references]]).encode())
    assert digest.hexdigest() == FULL_DIGESTS[(name, variant)]


def test_legacy_draws_match_numpy_randomstate():
    import numpy as np

    from helmflow.scenarios.base import LegacyDraws

    ours, theirs = LegacyDraws(7), np.random.RandomState(7)
    for top in [1, 2, 3, 4, 9, 21, 1000, 2**31 + 5]:
        assert [ours.randint(0, top + 1) for _ in range(50)] == [int(theirs.randint(0, top + 1)) for _ in range(50)]
    a, b = list(range(30)), list(range(30))
    ours.shuffle(a)
    theirs.shuffle(b)
    assert a == b
    assert ours.randint(3, 4) == int(theirs.randint(3, 4)) == 3  # an empty range draws nothing ...
    assert ours.randint(0, 10**6) == int(theirs.randint(0, 10**6))  # ... so the streams stay aligned


@pytest.mark.parametrize("top", [0, 1, 2, 3, 5])
def test_a_stream_of_legacy_draws_is_randomstates_randint_call_for_call(top):
    """After a few single draws (the stream starts from what is left of their block) and across several
    blocks: the values of ``RandomState.randint(0, top + 1)`` called one at a time."""
    from itertools import islice

    import numpy as np

    from helmflow.scenarios.base import LegacyDraws

    ours, theirs = LegacyDraws(11), np.random.RandomState(11)
    assert [ours.randint(0, 7) for _ in range(5)] == [int(theirs.randint(0, 7)) for _ in range(5)]
    count = 3 * LegacyDraws.BLOCK
    assert list(islice(ours.stream(top), count)) == [int(theirs.randint(0, top + 1)) for _ in range(count)]


@pytest.mark.parametrize("params", [
    {"num_parenthesis_pairs": 2, "max_recursive_depth": 3, "num_test": 40, "min_seq_test_length": 4,
     "max_seq_test_length": 20},
    {"num_parenthesis_pairs": 4, "num_test": 30, "max_seq_test_length": 160, "min_seq_test_length": 101},
    {"num_parenthesis_pairs": 1, "prob_p": 0.3, "prob_q": 0.3, "num_test": 50, "seed": 7},
])
def test_dyck_sequences_are_helms_recursion_draw_for_draw(params):
    """The generator against HELM's recursion as HELM writes it (one call per node), off the defaults too:
    a shallow depth cap, and a length cap above the nested draws' 100."""
    import random

    from helmflow.scenarios.base import LegacyDraws
    from helmflow.scenarios.dyck import PAIRS, DyckParams, _Generator

    p = DyckParams(**params)
    ours = _Generator(p)
    py, kinds = random.Random(p.seed), LegacyDraws(p.seed).stream(p.num_parenthesis_pairs - 1)

    def helm(depth: int = 0, max_length: int = 100) -> str:
        if depth > p.max_recursive_depth:
            return ""
        draw = py.random()
        if draw < p.prob_p:
            kind = next(kinds)
            out = PAIRS[kind][0] + helm(depth + 1) + PAIRS[kind][1]
        elif draw < p.prob_p + p.prob_q:
            out = helm(depth) + helm(depth)
        else:
            return ""
        return out if len(out) <= max_length else ""

    for _ in range(300):
        assert ours.sequence(0, p.max_seq_test_length) == helm(0, p.max_seq_test_length)
