"""Omni-MATH: rows -> instances as HELM builds them, the rule-based check (math-verify on the last
\\boxed{}), bad rows refused, and a run judged on the dev server with the rule-based check beside it.

Fixture rows are written here in the dataset's schema (judge_fixtures.py); none comes from Omni-MATH.
"""

from __future__ import annotations

import pytest

from helmflow.clients import load_deployments
from helmflow.devserver import start_dev_server
from helmflow.metrics.omni_math import last_boxed, rule_equivalent
from helmflow.pipeline import adapt_scenario, download_scenario, publish_run, query_pair, score_pair
from helmflow.plan.compile import plan_board, plan_scenario
from helmflow.plan.spec import ScenarioEntry, load_board
from helmflow.records import prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.storage import Store
from tests.support.cli import REPO
from tests.support.devserver import dev_deployment
from tests.support.judge_fixtures import OMNI_FILE, OMNI_REV, omni_jsonl, omni_rows

MARKERS = [
    "[ans:right] [judge-a:TRUE]",
    "[ans:right] [judge-a:FALSE]",  # the judge disagrees with the rule (answer \frac{8}{2} vs boxed 4)
    "[ans:wrong] [judge-a:FALSE]",
    "[ans:empty] [judge-a:TRUE]",  # not sent: FALSE
    "[ans:right] [judge-a:garbage]",  # unparsable: missing
]


@pytest.mark.parametrize(("output", "reference", "equal"), [
    ("so \\boxed{4}", "4", True),
    ("\\boxed{\\frac{8}{2}}", "4", True),
    ("\\boxed{0.5}", "\\frac{1}{2}", True),
    ("\\boxed{(x+1)^2}", "x^2+2x+1", True),
    ("\\boxed{\\{2, 1\\}}", "\\{1,2\\}", True),
    ("\\boxed{\\sqrt{2}}", "\\sqrt 2", True),
    ("first \\boxed{3}, finally \\boxed{5}", "5", True),  # the last box counts
    ("first \\boxed{5}, finally \\boxed{3}", "5", False),
    ("\\boxed{5.0001}", "5", False),
    ("the answer is 4", "4", False),  # no box
    ("\\boxed{}", "4", False),
    ("\\boxed{4", "4", False),  # unbalanced
])  # fmt: skip
def test_rule_based_equivalence(output, reference, equal):
    assert rule_equivalent(output, reference) is equal


@pytest.mark.slow
def test_an_answer_that_does_not_finish_is_not_equivalent_and_the_checker_recovers(monkeypatch):
    """A boxed power tower: math-verify's own step timeout in the helper, then the hard timeout
    (shortened here) that kills a helper which stops answering; a fresh helper takes over."""
    import time

    import helmflow.metrics.math_equivalence as meq

    tower = "\\boxed{2^{2^{2^{2^{10}}}}}"
    started = time.monotonic()
    assert rule_equivalent(tower, "5") is False
    assert time.monotonic() - started < meq.HARD_TIMEOUT_S + 5
    first = meq._helper
    monkeypatch.setattr(meq, "HARD_TIMEOUT_S", 0.5)
    assert rule_equivalent(tower, "5") is False
    assert first.proc.poll() is not None and meq._helper is None  # killed, not reused
    assert rule_equivalent("\\boxed{\\frac{10}{4}}", "2.5") is True  # a fresh helper answers


def test_last_boxed_balances_braces():
    assert last_boxed("x \\boxed{\\frac{a}{b^{2}}} y") == "\\frac{a}{b^{2}}"
    assert last_boxed("\\fbox{7}") == "7" and last_boxed("none") is None


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    folder = tmp_path / "omni"
    folder.mkdir()
    (folder / OMNI_FILE).write_bytes(omni_jsonl(omni_rows(MARKERS)))
    monkeypatch.setenv("HELMFLOW_MIRROR_OMNI_MATH", str(folder))
    return folder


def test_rows_become_helm_instances_and_prompts(mirror, tmp_path):
    instances = get_scenario("omni_math").load({OMNI_FILE: str(mirror / OMNI_FILE)})
    assert [i.id for i in instances] == [f"id{k}" for k in range(5)]
    assert [r.text for r in instances[1].references] == ["\\frac{8}{2}"] and instances[1].references[0].correct
    assert instances[0].extra == {"domain": ["Mathematics -> Algebra -> Fixture"], "difficulty": 1.0, "source": "fixture"}
    (source,) = get_scenario("omni_math").sources()
    assert source.url == f"hf://datasets/KbsdJames/Omni-MATH@{OMNI_REV}/test.jsonl"
    plan = plan_scenario(ScenarioEntry(name="omni_math"), None)
    gen = plan.adapter.generation
    assert (gen.max_tokens, gen.temperature, plan.main_metric) == (4096, 0.0, "omni_math_accuracy")
    store = Store(str(tmp_path / "store"))
    prompts = store.read_parquet(adapt_scenario(store, plan, download_scenario(store, plan)).prompts_key).to_pylist()
    text = prompt_from_row(prompts[0]).text()
    assert text == ("Answer the question, giving your reasoning beforehand. Wrap the final answer with the \\boxed{} "
                    f"command.\nFixture problem 0: what is 3 times 0 plus 1? {MARKERS[0]}\n")  # HELM's exact layout


def test_bad_rows_are_refused(tmp_path):
    path = tmp_path / OMNI_FILE
    rows = omni_rows(["a", "b"])
    del rows[1]["answer"]
    path.write_bytes(omni_jsonl(rows))
    with pytest.raises(ScenarioError, match="line 2: answer"):
        get_scenario("omni_math").load({OMNI_FILE: str(path)})


@pytest.mark.slow
def test_judged_on_the_dev_server_with_the_rule_beside_it(mirror, tmp_path):
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        deps = load_deployments()
        deps["dev/model"] = dev_deployment(server, name="dev/model", model="model-x")
        deps["dev/judge-a"] = dev_deployment(server, name="dev/judge-a", model="judge-a")
        board = load_board({"name": "om", "version": "t", "models": ["dev/model"], "scenarios": [{"name": "omni_math"}]})
        (run,) = plan_board(board, deps, judges=["dev/judge-a"]).runs
        store = Store(str(tmp_path / "store"))
        data = download_scenario(store, run.scenario)
        query = query_pair(store, run, adapt_scenario(store, run.scenario, data))
        out = publish_run(store, run, query, score_pair(store, run, data, query))
        assert server.stats()["requests"] == 5 + 4
    stats = {(r["instance_id"], r["name"]): r["value"] for r in store.read_parquet(f"runs/{run.run_id}/stats.parquet").to_pylist()}
    judge = {k: stats.get((f"id{k}", "omni_math_accuracy")) for k in range(5)}
    rule = {k: stats[(f"id{k}", "omni_math_rule_equivalence")] for k in range(5)}
    assert judge == {0: 1.0, 1: 0.0, 2: 0.0, 3: 0.0, 4: None}
    assert rule == {0: 1.0, 1: 1.0, 2: 0.0, 3: 0.0, 4: 1.0}  # both stored, side by side
    assert out.score == 0.25 and stats[("id4", "omni_math_judge_errors")] == 1
