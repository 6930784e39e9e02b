"""HELM Classic's MATH entries: math_regular (HELM's eight official examples, read from its scenario's source
as data, and the answer alone) beside the chain-of-thought variant Lite runs; instance order and ids against
a re-computation of HELM's rules on fixture files, the prompt's shape, HELM's math_equiv by hand, and the
switches' validation and keys."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from helmflow.metrics import METRICS, MetricInput
from helmflow.pipeline import adapt_scenario, download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.records import AdapterSpec, Completion, Input, Instance, Reference, Request, RequestBody, prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.competition_math import HELM_SOURCE, official_examples
from helmflow.storage import Store
from tests.support.lite_hub_fixtures import MATH_OFFICIAL, MATH_SCHEMA, math_helm_source, math_rows, parquet_bytes


def unboxed(rows: list[dict], k: int) -> list[dict]:
    """Row ``k``'s solution without its boxed answer."""
    rows[k]["solution"] = rows[k]["solution"].replace("$\\boxed{", "${").replace("}$.", "$.")
    return rows


@pytest.fixture
def math_mirror(tmp_path, monkeypatch):
    folder = tmp_path / "math"
    folder.mkdir()
    (folder / "train.parquet").write_bytes(parquet_bytes(math_rows(700, 1), MATH_SCHEMA))
    (folder / "test.parquet").write_bytes(parquet_bytes(math_rows(500, 2), MATH_SCHEMA))
    (folder / HELM_SOURCE).write_text(math_helm_source())
    monkeypatch.setenv("HELMFLOW_MIRROR_MATH", str(folder))
    return folder


REGULAR = {"use_chain_of_thought": False, "use_official_examples": True}


def helm_get_answer(solution: str) -> str | None:
    """HELM's get_answer on the fixture's solutions, written again: the content of the last ``\\boxed{...}``."""
    start = solution.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(solution)):
        depth += {"{": 1, "}": -1}.get(solution[j], 0)
        if depth == 0:
            return solution[i + 1 : j]
    return None


def helm_sorted_shuffled(folder, name: str) -> list[dict]:
    import numpy as np

    rows = sorted(pq.read_table(folder / name).to_pylist(), key=lambda r: r["problem"])
    return [rows[k] for k in np.random.default_rng(42).permutation(len(rows))]


@pytest.mark.parametrize("subject, kind", [("algebra", "Algebra"), ("precalculus", "Precalculus")])
def test_math_regular_has_helms_official_examples_then_the_boxed_answers(math_mirror, subject, kind):
    scen = get_scenario("math", {"subject": subject, "level": 1, **REGULAR})
    assert [s.filename for s in scen.sources()] == ["train.parquet", "test.parquet", HELM_SOURCE]
    assert (scen.main_metric, scen.metrics) == ("math_equiv", ["math_equiv", "efficiency"])
    files = {n: str(math_mirror / n) for n in ("train.parquet", "test.parquet", HELM_SOURCE)}
    instances = scen.load(files)
    official = MATH_OFFICIAL
    test = [(r["problem"], helm_get_answer(r["solution"])) for r in helm_sorted_shuffled(math_mirror, "test.parquet")
            if r["type"] == kind and r["level"] == "Level 1"]
    expected = [(p, a, "train") for p, a in official] + [(p, a, "test") for p, a in test]
    assert [(i.input.text, i.references[0].text, i.split) for i in instances] == expected
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(expected))]


def test_math_chain_of_thought_keeps_its_instances_and_lites_keys(math_mirror):
    lite = get_scenario("math", {"subject": "algebra"})
    assert lite.param_dict == {"subject": "algebra", "level": 1, "follow_format": False}  # Lite's key is unchanged
    assert get_scenario("math", {"subject": "algebra", "use_chain_of_thought": True}).param_dict == lite.param_dict
    assert get_scenario("math", {"subject": "algebra", **REGULAR}).param_dict == {
        "subject": "algebra", "level": 1, "follow_format": False, **REGULAR}
    instances = lite.load({n: str(math_mirror / n) for n in ("train.parquet", "test.parquet")})
    assert all(i.references[0].text.startswith("Adding") for i in instances)  # the whole worked solution
    assert [s.filename for s in lite.sources()] == ["train.parquet", "test.parquet"]


def test_math_regular_without_official_examples_draws_boxed_answers_from_train(math_mirror):
    scen = get_scenario("math", {"subject": "geometry", "use_chain_of_thought": False})
    instances = scen.load({n: str(math_mirror / n) for n in ("train.parquet", "test.parquet")})
    train = [(r["problem"], helm_get_answer(r["solution"])) for r in helm_sorted_shuffled(math_mirror, "train.parquet")
             if r["type"] == "Geometry" and r["level"] == "Level 1"]
    assert [(i.input.text, i.references[0].text) for i in instances if i.split == "train"] == train


def test_math_regular_refuses_a_solution_without_a_boxed_answer(math_mirror, tmp_path):
    """HELM's loader skips setting such a problem's answer and then fails on it (KeyError): one line here."""
    rows = math_rows(500, 2)
    k = next(k for k, r in enumerate(rows) if r["type"] == "Algebra" and r["level"] == "Level 1")
    (tmp_path / "test.parquet").write_bytes(parquet_bytes(unboxed(rows, k), MATH_SCHEMA))
    files = {"train.parquet": str(math_mirror / "train.parquet"), "test.parquet": str(tmp_path / "test.parquet"),
             HELM_SOURCE: str(math_mirror / HELM_SOURCE)}
    with pytest.raises(ScenarioError, match=r"test problem .* has no \\boxed\{\} answer"):
        get_scenario("math", {"subject": "algebra", **REGULAR}).load(files)
    cot = get_scenario("math", {"subject": "algebra"}).load(files)  # chain of thought: the solution is the reference
    assert any(i.references[0].text == rows[k]["solution"] for i in cot)


def test_math_regular_prompt_is_helms_layout(math_mirror, tmp_path):
    entry = ScenarioEntry(name="math", params={"subject": "algebra", "level": 1, **REGULAR})
    plan = plan_scenario(entry, None)
    assert plan.adapter.generation.max_tokens == 20 and plan.adapter.generation.stop == ["$"]
    store = Store(str(tmp_path / "store"))
    prompt_set = adapt_scenario(store, plan, download_scenario(store, plan))
    prompts = [prompt_from_row(r) for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]
    first = prompts[0]
    assert first.head == "Given a mathematics problem, determine the answer. Simplify your answer as much as possible.\n###\n"
    # all eight official examples (HELM's order among them is its seeded draw), each answer between $ signs
    assert sorted(first.examples) == sorted(f"Problem: {p}\nAnswer: ${a}$\n###\n" for p, a in MATH_OFFICIAL)
    assert first.query.startswith("Problem: ") and first.query.endswith("\nAnswer: $")


def test_the_official_examples_are_read_as_data_never_run(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(math_helm_source())
    assert official_examples("math", str(good)) == MATH_OFFICIAL  # the first problem is a sum of two literals
    for name, text, why in [
        ("call.py", math_helm_source(first='(open("/etc/passwd").read(), "5")'), "not a string literal"),
        ("short.py", math_helm_source(pairs=MATH_OFFICIAL[:3]), "not a list of 8"),
        ("none.py", "x = 1\n", "0 assignments to train_instances"),
        ("broken.py", "train_instances = [(\n", "does not hold HELM's official MATH examples"),
    ]:
        (tmp_path / name).write_text(text)
        with pytest.raises(ScenarioError, match=why):
            official_examples("math", str(tmp_path / name))


def test_math_switches_are_checked():
    with pytest.raises(ScenarioError, match="use_official_examples=true needs use_chain_of_thought=false"):
        get_scenario("math", {"subject": "algebra", "use_official_examples": True})


def _score(name: str, gold: str, output: str) -> dict[str, float]:
    instance = Instance(id="i", input=Input(text="q"), references=[Reference(text=gold, correct=True)])
    body = RequestBody(model="m", prompt="q", max_tokens=20, temperature=0)
    request = Request(request_hash="h", instance_id="i", split="test", sample_index=0, body=body)
    return METRICS.get(name).fn(MetricInput(instance, [request], [Completion(request_hash="h", text=output)], AdapterSpec()))


@pytest.mark.parametrize("gold, output, expected", [
    ("\\frac{1}{2}", " 0.5", 1.0),            # stripped, then HELM's 0.5 -> \frac{1}{2}
    ("\\frac{1}{32}", "\\dfrac1{32}", 1.0),    # dfrac, \frac1{32} -> \frac{1}{32}
    ("\\sqrt{5}", "\\sqrt5", 1.0),
    ("\\sqrt{59}", "\\sqrt59", 0.0),          # HELM's _fix_sqrt braces one character only
    ("181", "181 ", 1.0),
    ("15", "\\boxed{15}", 0.0),                # the output is the answer itself: no boxed answer is taken
    ("3", "x = 3", 1.0),                       # a short "x =" prefix dropped
    ("2", "4", 0.0),
])
def test_math_equiv_is_helms_is_equiv_on_the_answers(gold, output, expected):
    assert _score("math_equiv", gold, output) == {"math_equiv": expected}
