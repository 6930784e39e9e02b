"""IFEval scenario: rows -> instances as HELM builds them, the pinned hf:// source, bad rows refused at
load time, and an evaluation end to end through the CLI with an offline model whose answer is crafted.

The fixture rows are written here in the dataset's format (JSON lines: key, prompt,
instruction_id_list, kwargs); none comes from the real data set.
"""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.pipeline import adapt_scenario, download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.records import prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.storage import Store
from tests.support.hub_server import HubServer

REV = "966cd89545d6b6acfd7638bc708b98261ca58e84"
FILE = "ifeval_input_data.jsonl"
ALL_KWARGS = ["num_highlights", "relation", "num_words", "keywords", "end_phrase", "prompt_to_repeat", "language"]

ROWS = [
    {"key": 1000, "prompt": "Describe a quiet harbour at dawn. Do not use any commas.  \n",
     "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 1001, "prompt": "Write a short note about tea. Wrap the title in double angular brackets, and "
                            "finish with the exact phrase \"Any other questions?\"",
     "instruction_id_list": ["detectable_format:title", "startend:end_checker"],
     "kwargs": [{}, {"end_phrase": "Any other questions?"}]},
    {"key": 1002, "prompt": "List three fruits. Use at least 40 words and highlight at least 2 sections.",
     "instruction_id_list": ["length_constraints:number_words", "detectable_format:number_highlighted_sections"],
     "kwargs": [{"num_words": 40, "relation": "at least"}, {"num_highlights": 2}]},
    {"key": 1003, "prompt": "First repeat the request word for word without change, then answer: name a colour.",
     "instruction_id_list": ["combination:repeat_prompt", "change_case:english_lowercase", "keywords:existence"],
     "kwargs": [{"prompt_to_repeat": "Name a colour."}, {}, {"keywords": ["blue"]}]},
]
# what the offline model answers to every prompt: a title, two highlights, no comma, the end phrase
ANSWER = "<<Tea Notes>>\nTea is *calm* and *warm* today.\nAny other questions?"
# followed / instructions per instance: 1000 1/1; 1001 2/2; 1002 1/2 (11 words < 40); 1003 0/3
EXPECTED_FOLLOWED = {"1000": (1, 1), "1001": (2, 2), "1002": (1, 2), "1003": (0, 3)}


def jsonl(rows: list[dict], union: bool = False) -> bytes:
    """The file's format; ``union`` writes every kwarg name in every dict, absent ones null (as HF's table)."""
    out = []
    for row in rows:
        row = dict(row)
        if union:
            row["kwargs"] = [{k: kw.get(k) for k in ALL_KWARGS} for kw in row["kwargs"]]
        out.append(json.dumps(row, ensure_ascii=False))
    return ("\n".join(out) + "\n").encode()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    folder = tmp_path / "mirror"
    folder.mkdir()
    (folder / FILE).write_bytes(jsonl(ROWS, union=True))
    monkeypatch.setenv("HELMFLOW_MIRROR_IFEVAL", str(folder))
    return folder


def test_rows_become_helm_instances(mirror):
    instances = get_scenario("ifeval").load({FILE: str(mirror / FILE)})
    assert [i.id for i in instances] == ["1000", "1001", "1002", "1003"]
    assert {i.split for i in instances} == {"test"} and all(i.references == [] for i in instances)
    assert instances[0].input.text == "Describe a quiet harbour at dawn. Do not use any commas."  # stripped
    assert instances[2].extra == {
        "key": 1002,
        "instruction_id_list": ["length_constraints:number_words", "detectable_format:number_highlighted_sections"],
        "kwargs": [{"num_words": 40, "relation": "at least"}, {"num_highlights": 2}],  # nulls dropped
    }


def test_source_is_pinned_and_prompts_are_the_bare_prompt(mirror, tmp_path):
    scen = get_scenario("ifeval")
    assert scen.sources()[0].url == f"hf://datasets/google/IFEval@{REV}/{FILE}"
    assert scen.sources()[0].sha256 is None  # pinned in the manifest on first download
    plan = plan_scenario(ScenarioEntry(name="ifeval"), None)
    assert plan.dataset_revision == REV
    gen = plan.adapter.generation
    assert (gen.max_tokens, gen.temperature, gen.num_outputs, gen.stop) == (4096, 0.0, 1, [])
    store = Store(str(tmp_path / "store"))
    prompt_set = adapt_scenario(store, plan, download_scenario(store, plan))
    prompts = [prompt_from_row(r) for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]
    # HELM: input prefix "" + the stripped prompt + input suffix "\n" + output prefix ""
    assert {p.instance_id: p.text() for p in prompts} == {str(r["key"]): r["prompt"].strip() + "\n" for r in ROWS}


def test_real_hf_path_through_a_local_hub(tmp_path, monkeypatch):
    for var in ("HELMFLOW_MIRROR", "HELMFLOW_MIRROR_IFEVAL"):
        monkeypatch.delenv(var, raising=False)
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file("google/IFEval", REV, FILE, jsonl(ROWS))
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        plan = plan_scenario(ScenarioEntry(name="ifeval"), None)
        store = Store(str(tmp_path / "store"))
        data = download_scenario(store, plan)
    instances = store.read_parquet(data.instances_key).to_pylist()
    assert [r["id"] for r in instances] == ["1000", "1001", "1002", "1003"]
    assert len(plan.checksums[FILE]) == 64


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"instruction_id_list": ["keywords:teleport"], "kwargs": [{}]},
         "unknown IFEval instruction id 'keywords:teleport'"),
        ({"instruction_id_list": ["punctuation:no_comma", "detectable_format:title"], "kwargs": [{}]},
         "2 instructions but 1 kwargs"),
        ({"instruction_id_list": ["detectable_format:number_highlighted_sections"],
          "kwargs": [{"num_highlights": None}]}, "num_highlights"),  # absent: the reference draws a random count
        ({"instruction_id_list": [], "kwargs": []}, "instruction_id_list"),
    ],
)  # fmt: skip
def test_bad_rows_fail_at_load_naming_line_and_key(tmp_path, row, message):
    path = tmp_path / FILE
    path.write_bytes(jsonl([ROWS[0], {"key": 7, "prompt": "p", **row}]))
    with pytest.raises(ScenarioError) as err:
        get_scenario("ifeval").load({FILE: str(path)})
    assert f"{path} line 2" in str(err.value) and message in str(err.value)


def test_not_json_is_refused(tmp_path):
    path = tmp_path / FILE
    path.write_bytes(jsonl(ROWS[:1]) + b"{not json\n")
    with pytest.raises(ScenarioError, match="line 2 is not JSON"):
        get_scenario("ifeval").load({FILE: str(path)})


@pytest.mark.slow
@pytest.mark.parametrize("command", [["eval", "ifeval"], ["run", "capabilities", "--scenarios", "ifeval"]])
def test_cli_with_a_crafted_offline_answer(command, mirror, tmp_path, cli, prefect_server):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [{
        "name": "fixture/crafted", "client": "offline", "model": "crafted",
        "options": {"behavior": "constant", "answer": ANSWER},
    }]}))  # fmt: skip
    storage = tmp_path / "store"
    out = cli(*command, "--models", "fixture/crafted", "--models-file", str(models), "--storage", str(storage),
              env={"HELMFLOW_MIRROR_IFEVAL": str(mirror)})
    assert out.returncode == 0, out.stdout + out.stderr
    (run_json,) = list(storage.glob("runs/*/run.json"))
    run = json.loads(run_json.read_text())
    assert run["main_metric"] == "ifeval_strict_accuracy" and run["dataset"]["revision"] == REV
    headline = sum(f / n for f, n in EXPECTED_FOLLOWED.values()) / 4
    assert run["score"] == pytest.approx(headline)

    def table(name):
        return pq.read_table(io.BytesIO((run_json.parent / name).read_bytes())).to_pylist()

    summary = {r["name"]: r for r in table("summary.parquet")}
    followed = sum(f for f, _ in EXPECTED_FOLLOWED.values())
    total = sum(n for _, n in EXPECTED_FOLLOWED.values())
    assert summary["ifeval_instruction_strict_accuracy"]["mean"] == pytest.approx(followed / total)
    assert summary["ifeval_prompt_strict_accuracy"]["mean"] == pytest.approx(0.5)
    assert summary["ifeval_instruction_strict:detectable_format:title"]["mean"] == 1.0
    assert summary["ifeval_instruction_strict:length_constraints:number_words"]["mean"] == 0.0
    stats = {(r["instance_id"], r["name"]): r["value"] for r in table("stats.parquet")}
    for iid, (f, n) in EXPECTED_FOLLOWED.items():
        assert (stats[(iid, "ifeval_instructions_followed_strict")], stats[(iid, "ifeval_num_instructions")]) == (f, n)
    requests = table("requests.parquet")
    assert {r["instance_id"]: r["prompt"] for r in requests}["1000"] == ROWS[0]["prompt"].strip() + "\n"


def test_capabilities_board_lists_ifeval_with_helms_main_metric():
    from helmflow.plan.spec import load_board

    (entry,) = [s for s in load_board("capabilities").scenarios if s.name == "ifeval"]
    assert entry.label == "ifeval" and not entry.adapter  # HELM's run spec is the scenario's default
    assert get_scenario("ifeval").main_metric == "ifeval_strict_accuracy"
