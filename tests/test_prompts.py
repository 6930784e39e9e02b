"""Prompt wording as declared, versioned data, through the ``helmflow`` command.

A prompts file replaces a scenario's framing sentence: the prompt bytes sent change, prompt_version
changes, and only that scenario is queried again (the dev server counts the requests it receives;
the other scenarios send nothing). Unknown keys are one clear error before any work.
"""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.capabilities_fixtures import csv_bytes, gpqa_rows, mirror_folder, mmlu_pro_files
from tests.support.cli import run_cli
from tests.support.devserver import FAST_RETRY

N = 6  # instances per scenario
IFEVAL_ROWS = [{"key": 10 + k, "prompt": f"Fixture request {k}: describe a fixture without commas.",
                "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]} for k in range(8)]
BOARD = {"name": "wording", "version": "1", "models": ["dev/model"], "aggregation": ["mean"], "max_instances": N,
         "scenarios": [{"name": n, "label": n} for n in ("mmlu_pro", "gpqa", "ifeval")]}
LEAD_IN = "Fixture lead-in, worded by the test: "


@pytest.fixture
def mirrors(tmp_path):
    def folder(name: str, files: dict[str, bytes]) -> str:
        return mirror_folder(tmp_path / "mirror", name, files)

    ifeval = ("\n".join(json.dumps(r) for r in IFEVAL_ROWS) + "\n").encode()
    return {
        "HELMFLOW_MIRROR_MMLU_PRO": folder("mmlu_pro", mmlu_pro_files(n_test=20, n_validation=70)),
        "HELMFLOW_MIRROR_GPQA": folder("gpqa", {"gpqa_main.csv": csv_bytes(gpqa_rows(20))}),
        "HELMFLOW_MIRROR_IFEVAL": folder("ifeval", {"ifeval_input_data.jsonl": ifeval}),
    }


def _write(path, data) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _prompt_versions(show_stdout: str, labels=("mmlu_pro", "gpqa", "ifeval")) -> dict[str, str]:
    """scenario label -> prompt_version, from ``helmflow show``'s scenario table (its last column)."""
    out = {}
    for line in show_stdout.splitlines():
        cells = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
        if len(cells) >= 6 and re.fullmatch(r"[0-9a-f]{16}", cells[-1]) and cells[0] in labels:
            out[cells[0]] = cells[-1]
    return out


@pytest.mark.slow
def test_unknown_keys_are_one_error_before_any_work_listing_the_valid_ones(tmp_path, mirrors):
    storage = tmp_path / "store"
    bad = _write(tmp_path / "bad.yaml", {"prompts": {"gpqa.lead_in": "x", "nosuch.text": "y"}})
    out = run_cli("run", "capabilities", "--models", "offline/echo", "--no-judge", "--prompts", bad,
                  "--storage", str(storage), env=mirrors)
    assert out.returncode == 2, out.stdout + out.stderr
    err = " ".join(out.stderr.split())
    assert "unknown prompt key(s) gpqa.lead_in, nosuch.text" in err and "Traceback" not in err
    assert "gpqa.question_lead_in" in err and "gpqa.cot_suffix" in err and "mmlu_pro" in err  # the valid keys
    assert not storage.exists()
    # a board's own prompts: section is checked the same way, and so is a judge template's placeholders
    board = _write(tmp_path / "b.yaml", {**BOARD, "prompts": {"ifeval.instruction": "x"}})
    out = run_cli("show", board, "--models", "offline/echo", env=mirrors)
    assert out.returncode == 2 and "ifeval.instructions" in out.stderr, out.stderr
    judge = _write(tmp_path / "j.yaml", {"prompts": {"judge.omni_math": "Grade {$solution} against {$answer_key}"}})
    out = run_cli("eval", "omni_math", "--models", "offline/echo", "--no-judge", "--prompts", judge,
                  "--storage", str(storage))
    assert out.returncode == 2 and "{$answer_key}" in out.stderr and "{$reference_answer}" in out.stderr, out.stderr
    out = run_cli("run", "capabilities", "--prompts", str(tmp_path / "missing.yaml"), "--dry-run")
    assert out.returncode == 2 and "prompts file" in out.stderr and "does not exist" in out.stderr
    assert not storage.exists()


@pytest.mark.slow
def test_the_printed_template_is_exact_and_a_changed_text_moves_only_its_prompt_version(tmp_path, mirrors):
    board = _write(tmp_path / "board.yaml", BOARD)
    printed = run_cli("prompts", board)
    assert printed.returncode == 0, printed.stderr
    texts = yaml.safe_load(printed.stdout)["prompts"]
    assert {"mmlu_pro.question_lead_in", "gpqa.cot_suffix", "gpqa.answer_format", "ifeval.instructions"} <= set(texts)
    assert texts["mmlu_pro.choices_line"] == "\nChoices:\n"  # exact bytes survive the YAML round trip
    changed = _write(tmp_path / "changed.yaml", {"prompts": {"gpqa.question_lead_in": LEAD_IN}})
    base = _prompt_versions(run_cli("show", board, "--models", "offline/echo", env=mirrors).stdout)
    unchanged = _prompt_versions(run_cli("show", yaml_board(tmp_path, texts), "--models", "offline/echo", env=mirrors).stdout)
    moved = _prompt_versions(run_cli("show", yaml_board(tmp_path, {"gpqa.question_lead_in": LEAD_IN}), "--models", "offline/echo",
                                         env=mirrors).stdout)
    assert len(base) == 3 and unchanged == base  # our own wording, written out, is the same prompt
    assert moved["gpqa"] != base["gpqa"] and moved["mmlu_pro"] == base["mmlu_pro"] and moved["ifeval"] == base["ifeval"]
    shown = run_cli("show", yaml_board(tmp_path, {"gpqa.question_lead_in": LEAD_IN}), "--models", "offline/echo", env=mirrors)
    assert "prompt wording replaced (`helmflow prompts` shows the texts): gpqa.question_lead_in" in shown.stdout
    shown = run_cli("prompts", board, "--prompts", changed)
    assert f'gpqa.question_lead_in: "{LEAD_IN}"' in shown.stdout


def yaml_board(tmp_path, prompts: dict[str, str]) -> str:
    return _write(tmp_path / f"board-{len(list(tmp_path.glob('board-*')))}.yaml", {**BOARD, "prompts": prompts})


def _requests(storage, label: str, prompt_version: str) -> list[str]:
    for run_json in storage.glob("runs/*/run.json"):
        run = json.loads(run_json.read_text())
        if run["scenario"]["label"] == label and run["versions"]["prompt_version"] == prompt_version:
            rows = pq.read_table(run_json.parent / "requests.parquet").to_pylist()
            return [json.dumps(r, ensure_ascii=False) for r in rows]
    raise AssertionError(f"no run of {label} with prompt_version {prompt_version}")


@pytest.mark.slow
def test_a_prompts_file_changes_the_bytes_and_requeries_only_its_scenario(tmp_path, mirrors, dev_server, prefect_server):
    storage = tmp_path / "store"
    models = _write(tmp_path / "models.yaml", {"deployments": [
        {"name": "dev/model", "client": "openai-compatible", "model": "model-x", "base_url": dev_server.openai_url,
         "retry": FAST_RETRY, "context_window": 32768}]})  # fmt: skip
    board = _write(tmp_path / "board.yaml", BOARD)
    wording = _write(tmp_path / "helm-like.yaml", {"prompts": {"gpqa.question_lead_in": LEAD_IN}})
    common = ["--models-file", models, "--storage", str(storage)]

    first = run_cli("run", "--board-file", board, *common, env=mirrors)
    assert first.returncode == 0, first.stdout + first.stderr
    assert dev_server.requests == 3 * N
    runs = {json.loads(p.read_text())["scenario"]["label"]: json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")}

    second = run_cli("run", "--board-file", board, "--prompts", wording, *common, env=mirrors)
    assert second.returncode == 0, second.stdout + second.stderr
    assert dev_server.requests == 3 * N + N  # only GPQA was asked again: zero new requests for MMLU-Pro and IFEval
    after = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    new = [r for r in after if r["run_id"] not in {r["run_id"] for r in runs.values()}]
    assert [r["scenario"]["label"] for r in new] == ["gpqa"]
    assert new[0]["versions"]["prompt_version"] != runs["gpqa"]["versions"]["prompt_version"]
    assert new[0]["adapter"]["input_prefix"] == LEAD_IN
    # the bytes sent: every new GPQA prompt opens with the file's lead-in, none of the old ones does
    sent = _requests(storage, "gpqa", new[0]["versions"]["prompt_version"])
    old = _requests(storage, "gpqa", runs["gpqa"]["versions"]["prompt_version"])
    assert len(sent) == N and all(json.dumps(LEAD_IN)[1:-1] in r for r in sent)
    assert not any(json.dumps(LEAD_IN)[1:-1] in r for r in old)
    # the release is the prompts file's own board: the board's latest.json still shows our wording
    assert (storage / "leaderboards/wording-helm-like/latest.json").exists()
    latest = json.loads((storage / "leaderboards/wording/latest.json").read_text())
    release = json.loads((storage / "leaderboards/wording" / latest["release_id"] / "release.json").read_text())
    assert runs["gpqa"]["run_id"] in json.dumps(release)


@pytest.mark.slow
def test_a_reworded_judge_template_rescores_without_requerying(tmp_path):
    """``judge.<template>``: its text's hash joins the template VERSION (metric_version), not prompt_version."""
    from tests.support.judge_fixtures import OMNI_FILE, omni_jsonl, omni_rows

    mirror = tmp_path / "omni"
    mirror.mkdir()
    (mirror / OMNI_FILE).write_bytes(omni_jsonl(omni_rows(["[ans:right] [judge-a:TRUE]"] * 3)))
    env = {"HELMFLOW_MIRROR_OMNI_MATH": str(mirror)}
    judge = _write(tmp_path / "judge.yaml", {"prompts": {"judge.omni_math": "Grade {$solution} against {$reference_answer}."}})
    common = ["--scenarios", "omni_math", "--models", "offline/echo", "--judge", "offline/echo"]
    plain = run_cli("show", "capabilities", *common, env=env)
    worded = run_cli("show", _write(tmp_path / "b.yaml", {"name": "w", "version": "1", "models": ["offline/echo"],
                                                          "scenarios": [{"name": "omni_math"}], "judges": ["offline/echo"], "max_instances": 1000,
                                                          "prompts": yaml.safe_load(open(judge))["prompts"]}),
                     "--judge", "offline/echo", env=env)
    assert plain.returncode == 0 and worded.returncode == 0, plain.stderr + worded.stderr
    assert "omni_math v1" in plain.stdout and "omni_math v1+text." not in plain.stdout
    assert re.search(r"omni_math v1\+text\.[0-9a-f]{8}", worded.stdout), worded.stdout
    # the prompt sent to the model is unchanged: the same prompt_version on both
    versions = [_prompt_versions(out.stdout, ("omni_math",)) for out in (plain, worded)]
    assert versions[0] == versions[1] and len(versions[0]) == 1


@pytest.mark.slow
def test_reproduce_explain_lists_the_wording_of_every_scenario_and_what_a_file_replaced(tmp_path):
    from helmflow.plan.spec import load_board

    for board in ("capabilities", "safety"):
        out = run_cli("reproduce", board, "--explain")
        assert out.returncode == 0, out.stderr
        text = " ".join(out.stdout.split())
        names = {e.name for e in load_board(board).scenarios}
        assert all(f"wording, {name}: " in text for name in names), text
    capabilities = " ".join(run_cli("reproduce", "capabilities", "--explain").stdout.split())
    assert "wording, gpqa: the question lead-in, the step-by-step request" in capabilities
    assert "no prompt is byte-identical to HELM's" in capabilities
    wording = _write(tmp_path / "helm.yaml", {"prompts": {"gpqa.question_lead_in": LEAD_IN,
                                                          "judge.wildbench": "Rate {$model_output} for {$user_query}."}})
    out = run_cli("reproduce", "capabilities", "--explain", "--prompts", wording)
    text = " ".join(out.stdout.split())
    assert out.returncode == 0, out.stderr
    assert "wording, gpqa: gpqa.question_lead_in from your prompts file" in text
    assert "wildbench worded by your prompts file" in text and "helmflow's own omni_math judge prompts" in text
    assert "wording, mmlu_pro: the question lead-in" in text  # untouched scenarios keep their facts


@pytest.mark.slow
def test_a_reworded_judge_template_rejudges_through_the_flow_without_asking_the_model(tmp_path, prefect_server):
    from helmflow.devserver import start_dev_server
    from helmflow.versions import stable_hash
    from tests.support.cli import REPO
    from tests.support.judge_fixtures import OMNI_FILE, omni_jsonl, omni_rows

    mirror = tmp_path / "omni"
    mirror.mkdir()
    (mirror / OMNI_FILE).write_bytes(omni_jsonl(omni_rows(["[ans:right] [judge-a:TRUE]", "[ans:wrong] [judge-a:FALSE]"] * 4)))
    env = {"HELMFLOW_MIRROR_OMNI_MATH": str(mirror)}
    storage = tmp_path / "store"
    reworded = ("Reworded by a test. Problem: {$problem}\nReference: {$reference_answer}\nSolution: {$solution}\n"
                "Reply with ## Equivalence Judgement and TRUE or FALSE.")
    wording = _write(tmp_path / "judge-wording.yaml", {"prompts": {"judge.omni_math": reworded}})
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        models = _write(tmp_path / "models.yaml", {"deployments": [
            {"name": n, "client": "openai-compatible", "model": m, "base_url": server.openai_url, "retry": FAST_RETRY}
            for n, m in (("dev/model", "model-x"), ("dev/judge-a", "judge-a"))]})  # fmt: skip
        board = _write(tmp_path / "board.yaml", {"name": "judged", "version": "1", "models": ["dev/model"],
                                                 "judges": ["dev/judge-a"], "max_instances": 8,
                                                 "scenarios": [{"name": "omni_math", "label": "omni_math"}]})
        common = ["--board-file", board, "--models-file", models, "--storage", str(storage)]
        first = run_cli("run", *common, env=env)
        assert first.returncode == 0, first.stdout + first.stderr
        (old,) = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
        before = server.requests
        second = run_cli("run", *common, "--prompts", wording, env=env)
        assert second.returncode == 0, second.stdout + second.stderr
        (new,) = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json") if p.parent.name != old["run_id"]]
        notes = pq.read_table(storage / "runs" / new["run_id"] / "annotations.parquet").to_pylist()
        judged = [n for n in notes if n["judge_request_hash"]]
        assert len(judged) == 8 and server.requests - before == 8  # the judge only: the model was not asked again
    assert new["lineage"]["query_key"] == old["lineage"]["query_key"]
    assert new["versions"]["prompt_version"] == old["versions"]["prompt_version"]
    assert new["versions"]["metric_version"] != old["versions"]["metric_version"]
    assert all(n["prompt"].startswith("Reworded by a test. Problem: Fixture problem") for n in judged)
    assert {n["template_version"] for n in notes} == {f"1+text.{stable_hash(reworded, 8)}"}
    assert sorted(n["score"] for n in judged) == [0.0] * 4 + [1.0] * 4  # the reworded prompt still parses
