"""HumanEval and APPS as HELM Classic reads and prompts them (``code_scenario.py``), on fixtures in the
datasets' real shapes (tests/support/code_fixtures.py)."""

from __future__ import annotations

import gzip
import json

import pytest

from helmflow.adapters import adapt
from helmflow.records import EvalSample
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.apps import reindent
from tests.support.code_fixtures import APPS_ORDER_JSON, APPS_PROBLEMS, HUMANEVAL_PROBLEMS, apps_archive, humaneval_gz


def _files(tmp_path, **named: bytes) -> dict[str, str]:
    out = {}
    for name, data in named.items():
        (tmp_path / name).write_bytes(data)
        out[name] = str(tmp_path / name)
    return out


def humaneval_files(tmp_path, data: bytes | None = None) -> dict[str, str]:
    return _files(tmp_path, **{"HumanEval.jsonl.gz": humaneval_gz() if data is None else data})


def apps_files(tmp_path, order: dict | None = None) -> dict[str, str]:
    return _files(tmp_path, **{"APPS.tar.gz": apps_archive(),
                               "code_scenario_apps_pinned_file_order.json":
                                   json.dumps(APPS_ORDER_JSON if order is None else order).encode()})


# --------------------------------------------------------------------------- HumanEval
def test_humaneval_problems_are_test_instances_prompted_by_their_own_code(tmp_path):
    scen = get_scenario("humaneval")
    instances = scen.load(humaneval_files(tmp_path))
    assert [(i.id, i.split) for i in instances] == [(f"id{k}", "test") for k in range(len(HUMANEVAL_PROBLEMS))]
    for inst, problem in zip(instances, HUMANEVAL_PROBLEMS, strict=True):
        assert inst.input.text == problem["prompt"]
        assert [(r.text, r.correct) for r in inst.references] == [(problem["canonical_solution"], True)]
        assert inst.extra["humaneval"] == {k: problem[k] for k in ("task_id", "prompt", "test", "entry_point")}
    # HELM's completion adapter: the prompt is the problem's code, nothing added
    spec = scen.default_adapter
    assert (spec.max_train_instances, spec.generation.temperature, spec.generation.max_tokens) == (0, 0.2, 600)
    assert spec.generation.stop == ["\nclass", "\ndef", "\nif", "\nprint"]
    prompts = adapt(spec, instances)
    assert [p.text() for p in prompts] == [p["prompt"] for p in HUMANEVAL_PROBLEMS]


def test_humaneval_keys_problems_by_task_id_as_helm_does(tmp_path):
    again = {**HUMANEVAL_PROBLEMS[0], "canonical_solution": "    return n * 3\n"}
    instances = get_scenario("humaneval").load(humaneval_files(tmp_path, humaneval_gz([*HUMANEVAL_PROBLEMS, again])))
    assert len(instances) == 3 and instances[0].references[0].text == "    return n * 3\n"


@pytest.mark.parametrize(("data", "error"), [  # named ids: gzip's header holds the time, and pytest-xdist's
    # workers must collect the same test names
    pytest.param(b"not gzip", "is not gzipped UTF-8 text", id="not-gzip"),
    pytest.param(gzip.compress(b'{"task_id": "x", "prompt": "def f():\\n"}\n', mtime=0),
                 "has no text field(s) canonical_solution, test", id="no-solution-or-test"),
    pytest.param(gzip.compress(b"[1, 2]\n", mtime=0), "line 1 is not a JSON object", id="not-an-object"),
])
def test_humaneval_bad_input_is_one_clear_error(tmp_path, data, error):
    with pytest.raises(ScenarioError, match="humaneval") as exc:
        get_scenario("humaneval").load(humaneval_files(tmp_path, data))
    assert error in str(exc.value)


# --------------------------------------------------------------------------- APPS
def test_reindent_turns_each_indent_unit_into_a_tab_as_helm_does():
    assert reindent("a = 1\nif a:\n  b = 2\n  if b:\n    c = 3\n   odd\n") == (
        "a = 1\nif a:\n\tb = 2\n\tif b:\n\t\tc = 3\n\t odd\n")
    assert reindent("x\n\ty\n\t\tz") == "x\n\ty\n\t\tz\n"
    assert reindent("only\r\nlines\n") == "only\nlines\n" and reindent("") == ""
    assert reindent("def f():\n    return 1\n\n    \n") == "def f():\n\treturn 1\n\n\t\n"


def apps_prompt(question: str, starter: str | None) -> str:
    """HELM's prompt, written out again."""
    kind = "Call-Based" if starter is not None else "Standard Input"
    return f"\nQUESTION:\n{question}\n{starter or ''}\n\nUse {kind} format\n\nANSWER in Python code:\n"


def test_apps_instances_follow_helms_pinned_order_and_skip_incomplete_problems(tmp_path):
    instances = get_scenario("apps").load(apps_files(tmp_path))
    # train 0001, 0000 (0002 has no solutions), test 0003, 0000 (0004 has no test cases), in the pinned order
    keys = [("train", "0001"), ("train", "0000"), ("test", "0003"), ("test", "0000")]
    assert [(i.id, i.split) for i in instances] == [(f"id{k}", s) for k, (s, _) in enumerate(keys)]
    for inst, key in zip(instances, keys, strict=True):
        files = APPS_PROBLEMS[key]
        question = files["question.txt"].replace("\r\n", "\n")
        assert inst.input.text == apps_prompt(question, files.get("starter_code.py"))
        solutions = json.loads(files.get("solutions.json", "[]"))
        assert [(r.text, r.correct) for r in inst.references] == [(reindent(solutions[0]) if solutions else "", True)]
        assert inst.extra == ({"apps_tests": files["input_output.json"]} if key[0] == "test" else {})
    assert instances[0].references[0].text == ("a, b = map(int, input().split())\nif a > b:\n\tprint(a + b)\nelse:\n"
                                               "\tprint(b + a)\n")
    # a split the order file does not list is read in sorted order
    sorted_order = get_scenario("apps").load(apps_files(tmp_path, {"test": APPS_ORDER_JSON["test"]}))
    assert [i.references[0].text.split("\n")[0] for i in sorted_order if i.split == "train"] == [
        "w = input()", "a, b = map(int, input().split())"]


def test_apps_prompt_has_helms_two_solved_examples_before_the_question(tmp_path):
    scen = get_scenario("apps")
    instances = scen.load(apps_files(tmp_path))
    spec = scen.default_adapter.override(**{"sample": EvalSample()})
    assert (spec.max_train_instances, spec.generation.temperature, spec.generation.max_tokens) == (2, 0.2, 600)
    assert spec.generation.stop == ["'''", "---", '"""', "\n\n\n"]
    prompts = adapt(spec, instances)
    assert [p.instance_id for p in prompts] == ["id2", "id3"]
    # each example: the problem's prompt, its solution and HELM's instance prefix (a newline) before the next block
    train = {i.input.text + i.references[0].text + "\n" for i in instances if i.split == "train"}
    for prompt, inst in zip(prompts, instances[2:], strict=True):
        assert set(prompt.examples) == train
        assert prompt.text() == "".join(prompt.examples) + inst.input.text


def test_apps_bad_input_is_one_clear_error(tmp_path):
    broken = {("test", "0000"): {"question.txt": "q", "input_output.json": "{\"inputs\": 1}"}}
    files = _files(tmp_path, **{"APPS.tar.gz": apps_archive(broken),
                                "code_scenario_apps_pinned_file_order.json": b"{}"})
    with pytest.raises(ScenarioError, match=r"apps.*test/0000: input_output.json has no inputs and outputs lists"):
        get_scenario("apps").load(files)
    files["APPS.tar.gz"] = files["code_scenario_apps_pinned_file_order.json"]
    with pytest.raises(ScenarioError, match="is not a readable tar archive"):
        get_scenario("apps").load(files)
