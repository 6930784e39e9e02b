"""The HELM ThaiExam board: the Hub archive's JSON Lines (a tar.gz we wrote in its layout, with Thai sentences of
our own) become one exam's instances as HELM reads them; Thai text reaches the prompt and the stored instances
byte for byte (no Unicode normalisation); the board's five columns and their mean; `reproduce --explain`; and
`helmflow mirror thai` from a local Hub, then `helmflow run thai` on the mirror through the CLI on a real Prefect
server."""

from __future__ import annotations

import io
import json
import tarfile
import unicodedata
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from helmflow.adapters import ADAPTERS
from helmflow.scenarios import ScenarioError, get_scenario
from tests.support.cli import run_cli
from tests.support.hub_server import HubServer

# our own questions; "น้ำ" and "ทองคำ" hold SARA AM (U+0E33), which NFKC rewrites as NIKHAHIT + SARA AA
ONET_TRAIN = [{"question": "กรุงเทพมหานครเป็นเมืองหลวงของประเทศใด", "a": "ลาว", "b": "ไทย", "c": "พม่า",
               "d": "กัมพูชา", "e": "มาเลเซีย", "answer": "B", "subject": "สังคมศึกษา"}]
ONET_TEST = [{"question": "น้ำแข็งละลายเป็นน้ำที่อุณหภูมิกี่องศาเซลเซียส", "a": "0", "b": "100", "c": "50", "d": "-10",
              "e": "25", "answer": "a", "subject": "วิทยาศาสตร์"},
             {"question": "ข้อใดเป็นสัตว์เลี้ยงลูกด้วยนม", "a": "ปลาทู", "b": "ช้าง", "c": "กบ", "d": "ไก่", "e": "",
              "answer": "b", "subject": "วิทยาศาสตร์"}]
IC_TEST = [{"question": "หุ้นกู้เป็นตราสารประเภทใด", "a": "ตราสารหนี้", "b": "ตราสารทุน", "c": "ทองคำ",
            "d": "ตราสารหนี้", "answer": "d"}]  # four options; the keyed text is also option a


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def thai_tar(top: str = "thai_exam/", ic: list[dict] = IC_TEST, every_exam: bool = False) -> bytes:
    members = {f"{top}onet/onet_train.jsonl": jsonl(ONET_TRAIN), f"{top}onet/onet_test.jsonl": jsonl(ONET_TEST),
               f"{top}ic/ic_test.jsonl": jsonl(ic)}
    if every_exam:  # the other three exams, for the board's mirror (it loads every entry)
        members |= {f"{top}{exam}/{exam}_test.jsonl": jsonl(IC_TEST) for exam in ("tgat", "tpat1", "a_level")}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _files(tmp_path, data: bytes) -> dict[str, str]:
    (tmp_path / "thai_exam.tar.gz").write_bytes(data)
    return {"thai_exam.tar.gz": str(tmp_path / "thai_exam.tar.gz")}


def test_an_exam_reads_train_then_test_under_the_archives_top_folder_as_helm(tmp_path):
    onet = get_scenario("thai_exam", {"exam": "onet"}).load(_files(tmp_path, thai_tar()))
    assert [(i.id, i.split) for i in onet] == [("id0", "train"), ("id1", "test"), ("id2", "test")]
    assert [r.text for r in onet[0].references if r.correct] == ["ไทย"]  # "B": the letter's case does not matter
    assert [r.text for r in onet[2].references] == ["ปลาทู", "ช้าง", "กบ", "ไก่"]  # the empty option e is left out
    # no train file: the split is skipped; every option equal to the keyed text is correct (HELM's rule)
    ic = get_scenario("thai_exam", {"exam": "ic"}).load(_files(tmp_path, thai_tar(top="")))
    assert [(i.split, [r.correct for r in i.references]) for i in ic] == [("test", [True, False, False, True])]
    with pytest.raises(ScenarioError, match="holds no tgat/tgat_test.jsonl"):
        get_scenario("thai_exam", {"exam": "tgat"}).load(_files(tmp_path, thai_tar()))
    no_option = thai_tar(ic=[dict(IC_TEST[0], answer="e")])  # a letter that names no option
    with pytest.raises(ScenarioError, match="answer 'e' names none of its 4 options"):
        get_scenario("thai_exam", {"exam": "ic"}).load(_files(tmp_path, no_option))


def test_thai_text_reaches_the_prompt_and_the_stored_instances_unnormalised(tmp_path):
    from helmflow.datasets import read_instances, store_instances
    from helmflow.storage import Store

    scen = get_scenario("thai_exam", {"exam": "onet"})
    instances = scen.load(_files(tmp_path, thai_tar()))
    question = ONET_TEST[0]["question"]
    assert unicodedata.normalize("NFKC", question) != question  # the fixture would show a normalisation
    assert instances[1].input.text == question
    plan = SimpleNamespace(key="thai_exam", name=scen.name, params=scen.param_dict, scenario_version="v",
                           dataset_revision=scen.dataset_revision(), loader_version=scen.VERSION)
    key = store_instances(Store(str(tmp_path / "store")), plan, instances)
    stored = read_instances(Store(str(tmp_path / "store")), key)
    assert [i.input.text for i in stored] == [i.input.text for i in instances]
    assert [r.text for r in stored[1].references] == ["0", "100", "50", "-10", "25"]
    prompt = ADAPTERS.get("multiple_choice_joint").fn(scen.default_adapter, stored[1], [stored[0]])
    text = prompt.head + "".join(prompt.examples) + prompt.query
    assert f"Question: {question}\nA. 0\nB. 100\n" in text and text.endswith("E. 25\nAnswer:")
    assert "Question: กรุงเทพมหานครเป็นเมืองหลวงของประเทศใด\nA. ลาว\nB. ไทย\n" in text and "Answer: B\n" in text
    assert prompt.output_mapping["A"] == "0"


def test_the_board_runs_the_five_exams_with_their_mean_as_the_headline():
    from helmflow.plan.spec import load_board

    spec = load_board("thai")
    assert [s.params["exam"] for s in spec.scenarios] == ["onet", "ic", "tgat", "tpat1", "a_level"]
    accuracy, efficiency = spec.metric_groups
    assert accuracy.aggregation == ["mean"] and spec.aggregation == ["mean"]
    assert [c.scenario for c in accuracy.columns] == [s.label for s in spec.scenarios]
    assert {c.metric for c in accuracy.columns} == {"exact_match"} and efficiency.columns[0].lower_is_better


def test_reproduce_thai_explains_the_runs_and_the_wording():
    out = run_cli("reproduce", "thai", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "HELM ships no run_entries conf for ThaiExam" in text and "instructions line is helmflow's own" in text


@pytest.mark.slow
def test_helmflow_mirror_and_run_thai_end_to_end(tmp_path, prefect_server):
    from helmflow.scenarios.thai_exam import ARCHIVE, REPO, REVISION

    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file(REPO, REVISION, ARCHIVE, thai_tar(every_exam=True))
        out = run_cli("mirror", "thai", "--to", str(mirror), env={"HF_ENDPOINT": hub.url, "HELMFLOW_MIRROR": ""})
    assert out.returncode == 0, out.stdout + out.stderr
    out = run_cli("run", "thai", "--scenarios", "thai_exam_onet,thai_exam_ic", "--storage", str(storage),
                  env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/thai/latest-subset.json").read_text())
    (row,) = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    # the first-option baseline answers A: right on ONET's first test question of two, and on IC's (its option A
    # has the keyed text too)
    assert (row["thai_exam_onet/exact_match"], row["thai_exam_ic/exact_match"]) == (0.5, 1.0)
    assert row["accuracy mean"] == row["mean_score"] == 0.75
    runs = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    onet = next(r for r in runs if r["scenario"]["label"] == "thai_exam_onet")
    prompts = pq.read_table(storage / "runs" / onet["run_id"] / "requests.parquet")["prompt"].to_pylist()
    question = ONET_TEST[0]["question"]
    assert any(f"Question: {question}\nA. 0\n" in p for p in prompts)  # the same code points as the file's
