"""Coming from HELM: ``import-helm``, ``export`` (bundle and ``--format helm``) and ``import``, through the CLI.

The HELM trees are written by ``tests/helm_fixtures.py`` in HELM's JSON schema, with HELM's numbers
worked out by hand, so "reproduced" means helmflow's metrics agree with values it did not produce.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.cli import REPO, run_cli
from tests.support.helm_fixtures import (
    BLEU_1,
    CLAUDE,
    GPT,
    ROUGE_L,
    broken_runs,
    calibrated_run,
    good_suite,
    lite_suite,
    mcqa_run,
    wmt_run,
)

MCQA = "toy_mcqa:method=multiple_choice_joint"
BBQ = "bbq:subject=all,method=multiple_choice_joint"


def _runs(root: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for path in root.glob("runs/*/run.json"):
        info = json.loads(path.read_text())
        out[(info["scenario"]["label"], info["deployment"]["name"])] = info
    return out


def _leaderboard(root: Path, board: str) -> dict[str, dict]:
    latest = json.loads((root / "leaderboards" / board / "latest.json").read_text())
    return {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}


def _parquet_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet")) if "/report/" not in str(p)}


@pytest.mark.slow
def test_import_helm_keeps_helms_numbers_and_reproduces_them(tmp_path: Path):
    suite = good_suite(tmp_path)
    root = tmp_path / "store"
    out = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "helm-toy")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "6 run(s) imported" in out.stdout and "0 skipped" in out.stdout and "MISMATCH" not in out.stdout
    runs = _runs(root)
    assert len(runs) == 6
    bbq = runs[(BBQ, CLAUDE)]
    checks = {(c["metric"], c["split"]): (c["helm"], c["helmflow"], c["equal"]) for c in bbq["imported"]["checks"]}
    assert checks == {("exact_match", "test"): (0.5, 0.5, True), ("bbq_accuracy", "test"): (0.5, 0.5, True),
                      ("bbq_metric_ambiguous_bias", "test"): (0.5, 0.5, True),
                      ("bbq_metric_unambiguous_bias", "test"): (0.0, 0.0, True)}
    ifeval = runs[("ifeval", CLAUDE)]
    assert [(c["metric"], c["helmflow"], c["equal"]) for c in ifeval["imported"]["checks"]] == [("ifeval_strict_accuracy", 0.5, True)]
    assert ifeval["main_metric"] == "ifeval_strict_accuracy" and ifeval["score"] == 0.5
    cot = runs[("toy_cot:subset=main", GPT)]
    assert cot["main_metric"] == "chain_of_thought_correctness" and cot["score"] == 0.5
    qa = runs[("toy_qa", GPT)]
    assert {c["metric"]: c["helmflow"] for c in qa["imported"]["checks"]} == {"exact_match": 0.0, "quasi_exact_match": 0.5,
                                                                              "f1_score": 0.75}
    # HELM's run spec verbatim, the source folder and the sha256 of every file read
    mcqa = runs[(MCQA, GPT)]
    folder = suite / f"{MCQA},model=openai_gpt-toy"
    assert mcqa["imported"]["run_spec"] == json.loads((folder / "run_spec.json").read_text())
    assert mcqa["imported"]["source"] == f"{suite}/{folder.name}"
    assert mcqa["imported"]["sha256"] == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    assert set(mcqa["imported"]["unchecked"]) == {"inference_runtime", "num_prompt_tokens"}
    assert mcqa["imported"]["skipped_request_states"] == 0
    assert all(v.startswith("imported-") for k, v in mcqa["versions"].items() if k != "run_id")
    assert mcqa["deployment"]["client"] == "helm"
    # the perturbed stat (robustness) is not the run's exact match: HELM's unperturbed 2/3 is
    summary = {(r["name"], r["split"]): r for r in pq.read_table(root / "runs" / mcqa["run_id"] / "summary.parquet").to_pylist()}
    # HELM's count is the number of train trials (1); the interval is our bootstrap over its per-instance values
    assert summary[("exact_match", "test")]["mean"] == pytest.approx(2 / 3) and summary[("exact_match", "test")]["count"] == 1
    assert (summary[("exact_match", "test")]["ci_low"], summary[("exact_match", "test")]["ci_high"]) == (0.0, 1.0)
    assert summary[("num_prompt_tokens", "test")]["ci_low"] == summary[("num_prompt_tokens", "test")]["ci_high"] == 12.0
    for info in runs.values():
        rows = pq.read_table(root / "runs" / info["run_id"] / "summary.parquet").to_pylist()
        per_instance = {r["name"] for r in pq.read_table(root / "runs" / info["run_id"] / "stats.parquet").to_pylist()}
        for r in rows:  # every stat HELM has per-instance values for gets an interval around HELM's mean
            assert (r["name"] not in per_instance) or r["ci_low"] <= r["mean"] <= r["ci_high"], (info["scenario"], r)
        assert info["ci"][0] is not None and info["ci"][0] <= info["score"] <= info["ci"][1]
    completions = pq.read_table(root / "runs" / mcqa["run_id"] / "completions.parquet").to_pylist()
    assert [c["text"] for c in completions] == ["A", " B", "B"]
    assert {(c["run_id"], c["model"], c["scenario"]) for c in completions} == {(mcqa["run_id"], GPT, MCQA)}
    references = pq.read_table(root / "runs" / mcqa["run_id"] / "references.parquet").to_pylist()
    assert [(r["instance_id"], r["correct"]) for r in references if r["correct"]] == [("id1", True), ("id2", True), ("id3", True)]
    assert len(references) == 7
    # the board: HELM's numbers on our leaderboard, labelled as imported
    board = _leaderboard(root, "helm-toy")
    assert board[GPT][MCQA] == pytest.approx(2 / 3) and board[CLAUDE][BBQ] == 0.5 and board[GPT][BBQ] is None
    assert (board[GPT][f"{MCQA} ci_low"], board[GPT][f"{MCQA} ci_high"]) == (0.0, 1.0)
    release = json.loads(next(root.glob("leaderboards/helm-toy/*/release.json")).read_text())
    assert release["imported_from"] == [str(suite)] and set(release["models"]) == {GPT, CLAUDE}
    report = run_cli("report", "helm-toy", "--storage", str(root))
    assert report.returncode == 0, report.stderr
    page = next(root.glob("leaderboards/helm-toy/*/report/index.html")).read_text()
    assert 'id="imported-badge"' in page and str(suite) in page
    run_page = (next(root.glob("leaderboards/helm-toy/*/report")) / "runs" / bbq["run_id"] / "index.html").read_text()
    assert "Imported from HELM" in run_page and "bbq_metric_ambiguous_bias" in run_page

    lineage = run_cli("lineage", "helm-toy", "--storage", str(root))
    assert lineage.returncode == 0 and lineage.stdout.count("imported from HELM:") == 6
    assert "Prefect flow run" not in lineage.stdout

    # the same tree again: nothing rewritten, the same release
    before = {p: p.stat().st_mtime_ns for p in root.glob("runs/*/*")}
    again = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "helm-toy")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("already imported") == 6
    assert {p: p.stat().st_mtime_ns for p in root.glob("runs/*/*")} == before
    assert len(list(root.glob("leaderboards/helm-toy/*/release.json"))) == 1


def test_a_partial_tree_imports_what_is_whole_and_exits_1(tmp_path: Path):
    suite = tmp_path / "runs" / "suite"
    mcqa_run(suite)
    reasons = broken_runs(suite)
    root = tmp_path / "store"
    out = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "helm-partial")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    for folder, why in reasons.items():
        assert f"skipped   {folder}: " in out.stdout and why in out.stdout.split(f"skipped   {folder}: ")[1].splitlines()[0]
    assert "1 run(s) imported" in out.stdout and "3 skipped" in out.stdout
    # never a half run: every run folder written has its run.json, and only the whole run was written
    assert [p.name for p in root.glob("runs/*/run.json")] == ["run.json"]
    assert all((d / "run.json").exists() for d in (root / "runs").iterdir())
    assert list(_leaderboard(root, "helm-partial")) == [GPT]


def test_a_number_helmflow_does_not_reproduce_is_reported(tmp_path: Path):
    suite = tmp_path / "suite"
    mcqa_run(suite, exact_match_mean=0.9)  # HELM's file claims 0.9 where its own completions give 2/3
    root = tmp_path / "store"
    out = run_cli("import-helm", str(suite), "--storage", str(root))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "MISMATCH exact_match [test]: HELM 0.9, helmflow 0.666" in out.stdout
    (info,) = _runs(root).values()
    bad = [c for c in info["imported"]["checks"] if not c["equal"]]
    assert [(c["metric"], c["helm"]) for c in bad] == [("exact_match", 0.9)]
    assert info["score"] == 0.9  # HELM's number is what it is; the run says it was not reproduced


LITE_MATH = "math:subject=algebra,level=1,use_official_examples=False,use_chain_of_thought=True"
WMT = "wmt_14:language_pair=de-en"


def test_import_helm_recomputes_helm_lites_generation_metrics(tmp_path: Path):
    """GSM8K's final number, MATH's boxed-answer equivalence and WMT14's sentence BLEU-1/BLEU-4 and ROUGE-L are
    recomputed on HELM's completions and agree with HELM's numbers (worked out by hand in the fixtures)."""
    suite = lite_suite(tmp_path)
    root = tmp_path / "store"
    out = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "helm-lite-toy", "-v")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 run(s) imported" in out.stdout and "MISMATCH" not in out.stdout
    # -v: one line per recomputed stat, with both numbers
    matched = [line.strip() for line in out.stdout.splitlines() if line.startswith("  MATCH ")]
    assert len(matched) == 6, out.stdout
    assert "MATCH math_equiv_chain_of_thought [test]: HELM 0.75, helmflow 0.75" in matched
    runs = _runs(root)

    def checks(key: tuple[str, str]) -> dict[str, tuple[float, float, bool]]:
        return {c["metric"]: (c["helm"], c["helmflow"], c["equal"]) for c in runs[key]["imported"]["checks"]}

    gsm = runs[("gsm", GPT)]
    assert checks(("gsm", GPT)) == {"final_number_exact_match": (pytest.approx(2 / 3), pytest.approx(2 / 3), True),
                                    "exact_match_indicator": (pytest.approx(1 / 3), pytest.approx(1 / 3), True)}
    assert gsm["main_metric"] == "final_number_exact_match" and gsm["imported"]["unchecked"] == []
    assert checks((LITE_MATH, GPT)) == {"math_equiv_chain_of_thought": (0.75, 0.75, True)}
    assert runs[(LITE_MATH, GPT)]["imported"]["unchecked"] == []
    wmt = checks((WMT, CLAUDE))
    assert set(wmt) == {"bleu_1", "bleu_4", "rouge_l"} and all(equal for _, _, equal in wmt.values())
    assert wmt["bleu_1"][1] == pytest.approx(sum(BLEU_1) / 3, abs=1e-12)
    assert wmt["bleu_4"][1] == pytest.approx(4 / 9, abs=1e-12)  # the no-4-gram sentence scores ~0, not a failure
    assert wmt["rouge_l"][1] == pytest.approx(sum(ROUGE_L) / 3, abs=1e-12)
    assert runs[(WMT, CLAUDE)]["main_metric"] == "bleu_4" and runs[(WMT, CLAUDE)]["imported"]["unchecked"] == []
    assert "not recomputed" not in out.stdout


def test_a_bleu_helmflow_does_not_reproduce_is_reported(tmp_path: Path):
    suite = tmp_path / "suite"
    wmt_run(suite, bleu_4_mean=0.21)  # e.g. a corpus BLEU where HELM's file should hold the sentence-BLEU mean 4/9
    root = tmp_path / "store"
    out = run_cli("import-helm", str(suite), "--storage", str(root))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "MISMATCH bleu_4 [test]: HELM 0.21, helmflow 0.444" in out.stdout
    assert "  MATCH " not in out.stdout  # without -v only the mismatches are listed
    (info,) = _runs(root).values()
    assert [(c["metric"], c["equal"]) for c in info["imported"]["checks"]] == [("bleu_1", True), ("bleu_4", False),
                                                                              ("rouge_l", True)]


def test_import_helm_bad_source_is_one_line(tmp_path: Path):
    out = run_cli("import-helm", str(tmp_path / "nowhere"), "--storage", str(tmp_path / "store"))
    assert out.returncode == 2 and "does not exist" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "empty").mkdir()
    out = run_cli("import-helm", str(tmp_path / "empty"), "--storage", str(tmp_path / "store"))
    assert out.returncode == 2 and "holds no HELM run folder" in out.stderr


@pytest.mark.slow
def test_helm_board_is_never_mixed_into_a_board_of_runs_made_here(tmp_path: Path):
    suite = tmp_path / "suite"
    mcqa_run(suite)
    root = tmp_path / "store"
    assert run_cli("import-helm", str(suite), "--storage", str(root), "--board", "mine").returncode == 0
    release = next(root.glob("leaderboards/mine/*/release.json"))
    info = json.loads(release.read_text())
    info["imported_from"] = []  # as if "mine" were a board run by helmflow
    release.write_text(json.dumps(info))
    out = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "mine")
    assert out.returncode == 2 and "holds runs made by helmflow" in out.stderr
    out = run_cli("import-helm", str(suite), "--storage", str(tmp_path / "fresh"), "--board", "demo")
    assert out.returncode == 2 and "'demo' is a helmflow board" in out.stderr
    assert not (tmp_path / "fresh" / "runs").exists()  # refused before any work


@pytest.mark.slow
def test_export_bundle_reimports_byte_for_byte_and_refuses_a_damaged_one(tmp_path: Path):
    suite = good_suite(tmp_path)
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert run_cli("import-helm", str(suite), "--storage", str(first), "--board", "helm-toy").returncode == 0
    bundle = tmp_path / "bundle"
    out = run_cli("export", "helm-toy", "--to", str(bundle), "--storage", str(first))
    assert out.returncode == 0, out.stdout + out.stderr
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["board"] == "helm-toy" and len([k for k in manifest["files"] if k.endswith("/run.json")]) == 6
    for key, digest in manifest["files"].items():
        assert hashlib.sha256((bundle / key).read_bytes()).hexdigest() == digest
    assert json.loads((bundle / "schemas" / "run.schema.json").read_text())["title"] == "helmflow run.json"
    assert (bundle / "schemas" / "release.schema.json").exists()

    out = run_cli("import", str(bundle), "--storage", str(second))
    assert out.returncode == 0, out.stdout + out.stderr
    assert _parquet_bytes(second) == _parquet_bytes(first)  # leaderboard, runs, instances: the same bytes
    assert _leaderboard(second, "helm-toy") == _leaderboard(first, "helm-toy")
    report = run_cli("report", "helm-toy", "--storage", str(second))
    assert report.returncode == 0, report.stderr

    victim = next(bundle.glob("runs/*/completions.parquet"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    out = run_cli("import", str(bundle), "--storage", str(third))
    assert out.returncode == 2 and "is damaged; nothing imported" in out.stderr and victim.parent.name in out.stderr
    assert not list(third.glob("runs/*")) and not list(third.glob("leaderboards/*"))

    out = run_cli("import", str(tmp_path / "a"), "--storage", str(third))  # a storage root is not a bundle
    assert out.returncode == 2 and "not a helmflow bundle" in out.stderr


def test_a_bundle_cannot_write_outside_its_release(tmp_path: Path):
    suite = tmp_path / "suite"
    mcqa_run(suite)
    root, bundle = tmp_path / "store", tmp_path / "bundle"
    assert run_cli("import-helm", str(suite), "--storage", str(root), "--board", "b").returncode == 0
    assert run_cli("export", "b", "--to", str(bundle), "--storage", str(root)).returncode == 0
    manifest = json.loads((bundle / "bundle.json").read_text())
    (bundle / "leaderboards" / "other").mkdir(parents=True)
    (bundle / "leaderboards" / "other" / "latest.json").write_text("{}")
    manifest["files"]["leaderboards/other/latest.json"] = hashlib.sha256(b"{}").hexdigest()
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    out = run_cli("import", str(bundle), "--storage", str(tmp_path / "target"))
    assert out.returncode == 2 and "outside its release" in out.stderr
    assert not (tmp_path / "target" / "runs").exists()


@pytest.mark.slow
def test_export_format_helm_imports_back_to_the_same_stats(tmp_path: Path):
    suite = good_suite(tmp_path)
    first = tmp_path / "a"
    assert run_cli("import-helm", str(suite), "--storage", str(first), "--board", "helm-toy").returncode == 0
    out_dir = tmp_path / "helm-out"
    out = run_cli("export", "helm-toy", "--format", "helm", "--to", str(out_dir), "--storage", str(first))
    assert out.returncode == 0, out.stdout + out.stderr
    folder = out_dir / f"{BBQ},model=anthropic_claude-toy"
    assert {p.name for p in folder.iterdir()} == {"run_spec.json", "scenario_state.json", "stats.json",
                                                 "per_instance_stats.json", "instances.json"}
    state = json.loads((folder / "scenario_state.json").read_text())
    assert state["request_states"][0]["instance"]["references"][0]["tags"][-4:] == list("CABC")
    back = tmp_path / "b"
    out = run_cli("import-helm", str(out_dir), "--storage", str(back))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "MISMATCH" not in out.stdout
    for key, info in _runs(first).items():
        again = _runs(back)[key]
        assert again["imported"]["run_spec"] == info["imported"]["run_spec"]
        assert [c for c in again["imported"]["checks"] if not c["equal"]] == []
        a = pq.read_table(first / "runs" / info["run_id"] / "summary.parquet").to_pylist()
        b = pq.read_table(back / "runs" / again["run_id"] / "summary.parquet").to_pylist()
        assert [(r["name"], r["split"], r["count"], r["mean"]) for r in a] == [(r["name"], r["split"], r["count"], r["mean"]) for r in b]


@pytest.mark.slow
def test_runs_made_here_export_as_helm_and_import_back(prefect_server, tmp_path: Path):
    root = tmp_path / "store"
    out = run_cli("eval", "arithmetic:choices=3", "--models", "offline/solver,offline/echo", "--max-instances", "6",
                  "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    (board,) = [p.name for p in (root / "leaderboards").iterdir()]
    out_dir = tmp_path / "helm-out"
    out = run_cli("export", board, "--format", "helm", "--to", str(out_dir), "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    back = tmp_path / "back"
    out = run_cli("import-helm", str(out_dir), "--storage", str(back), "--board", "ours-via-helm")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "MISMATCH" not in out.stdout and "2 run(s) imported" in out.stdout
    ours = {(i["deployment"]["name"]): i for i in (json.loads(p.read_text()) for p in root.glob("runs/*/run.json"))}
    for info in (json.loads(p.read_text()) for p in back.glob("runs/*/run.json")):
        mine = ours[info["deployment"]["name"]]
        assert info["main_metric"] == mine["main_metric"] and info["score"] == pytest.approx(mine["score"])
        assert info["imported"]["checks"] and all(c["equal"] for c in info["imported"]["checks"])
        a = pq.read_table(root / "runs" / mine["run_id"] / "summary.parquet").to_pylist()
        b = pq.read_table(back / "runs" / info["run_id"] / "summary.parquet").to_pylist()
        assert {(r["name"], r["split"]): r["mean"] for r in a} == pytest.approx({(r["name"], r["split"]): r["mean"] for r in b})


@pytest.mark.slow
def test_import_helm_over_http(tmp_path: Path):
    """A HELM suite served over HTTP (as public raw results are), read through fsspec's HTTP listing."""
    import subprocess
    import sys

    from tests.support.processes import free_port, stop_process, wait_http

    suite = good_suite(tmp_path)
    broken_runs(suite)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(suite.parent)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/", timeout=30, proc=server)
        url = f"http://127.0.0.1:{port}/{suite.name}/"
        out = run_cli("import-helm", url, "--storage", str(tmp_path / "store"), "--board", "helm-http")
    finally:
        stop_process(server)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "6 run(s) imported" in out.stdout and "3 skipped" in out.stdout and "MISMATCH" not in out.stdout
    assert "skipped   toy_qa:model=openai_gpt-partial: no stats.json" in out.stdout
    sources = {info["imported"]["source"] for info in _runs(tmp_path / "store").values()}
    assert all(s.startswith(f"http://127.0.0.1:{port}/{suite.name}/") for s in sources) and len(sources) == 6
    assert set(_leaderboard(tmp_path / "store", "helm-http")) == {GPT, CLAUDE}


@pytest.mark.slow
def test_import_export_and_round_trip_on_s3(s3_root: str, moto_s3: str, tmp_path: Path):
    import fsspec

    suite = good_suite(tmp_path)
    s3 = fsspec.filesystem("s3", client_kwargs={"endpoint_url": moto_s3})
    source = f"{s3_root}/benchmark_output/runs/toy-suite"
    s3.put(str(suite), source.removeprefix("s3://"), recursive=True)
    store_a, bundle, store_b = f"{s3_root}/store-a", f"{s3_root}/bundle", f"{s3_root}/store-b"
    out = run_cli("import-helm", source, "--storage", store_a, "--board", "helm-toy")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "6 run(s) imported" in out.stdout and "MISMATCH" not in out.stdout
    sources = {json.loads(s3.cat_file(p))["imported"]["source"] for p in s3.find(store_a.removeprefix("s3://"))
               if p.endswith("/run.json")}
    assert f"{source}/ifeval:model=anthropic_claude-toy" in sources and len(sources) == 6, sources
    assert run_cli("export", "helm-toy", "--to", bundle, "--storage", store_a).returncode == 0
    out = run_cli("import", bundle, "--storage", store_b)
    assert out.returncode == 0, out.stdout + out.stderr

    def parquet(prefix: str) -> dict[str, bytes]:
        base = prefix.removeprefix("s3://")
        return {p.removeprefix(base): s3.cat_file(p) for p in s3.find(base) if p.endswith(".parquet")}

    a, b = parquet(store_a), parquet(store_b)
    assert a and a == b
    helm_out = f"{s3_root}/helm-out"
    assert run_cli("export", "helm-toy", "--format", "helm", "--to", helm_out, "--storage", store_a).returncode == 0
    out = run_cli("import-helm", helm_out, "--storage", str(tmp_path / "local"))
    assert out.returncode == 0 and "6 run(s) imported" in out.stdout and "MISMATCH" not in out.stdout


@pytest.mark.slow
def test_a_bundle_carries_the_images_its_runs_show(prefect_server, tmp_path: Path):
    root, bundle, other = tmp_path / "store", tmp_path / "bundle", tmp_path / "other"
    env = {"HF_HUB_OFFLINE": "1"}
    out = run_cli("eval", "vision_shapes:format=image_choice", "--models", "offline/vision", "--max-instances", "4",
                  "--storage", str(root), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    (board,) = [p.name for p in (root / "leaderboards").iterdir()]
    assert run_cli("export", board, "--to", str(bundle), "--storage", str(root)).returncode == 0
    images = sorted(p.name for p in (bundle / "media").iterdir())
    assert images and set(images) <= {p.name for p in (root / "media").iterdir()}
    out = run_cli("import", str(bundle), "--storage", str(other))
    assert out.returncode == 0, out.stdout + out.stderr
    assert all((other / "media" / name).read_bytes() == (root / "media" / name).read_bytes() for name in images)
    assert _parquet_bytes(other) == {k: v for k, v in _parquet_bytes(root).items() if k in _parquet_bytes(other)}
    assert any(k.startswith("leaderboards/") for k in _parquet_bytes(other))


@pytest.mark.slow
def test_log_likelihood_multiple_choice_exports_one_helm_request_state_per_option(prefect_server, tmp_path: Path):
    root, out_dir, back = tmp_path / "store", tmp_path / "helm-out", tmp_path / "back"
    out = run_cli("eval", "arithmetic:choices=3", "--models", "offline/solver", "--adapter",
                  "method=multiple_choice_separate_original,max_train_instances=0", "--max-instances", "4", "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    (board,) = [p.name for p in (root / "leaderboards").iterdir()]
    assert run_cli("export", board, "--format", "helm", "--to", str(out_dir), "--storage", str(root)).returncode == 0
    (folder,) = out_dir.iterdir()
    states = json.loads((folder / "scenario_state.json").read_text())["request_states"]
    assert len(states) == 4 * 3 and {s["request_mode"] for s in states} == {"original"}
    assert sorted({s["reference_index"] for s in states}) == [0, 1, 2] and all(s["request"]["echo_prompt"] for s in states)
    out = run_cli("import-helm", str(out_dir), "--storage", str(back))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1/1 of HELM's numbers reproduced" in out.stdout  # exact match from the options' logprobs, not the echoed text


def _forge_completions(bundle: Path) -> tuple[str, Path]:
    """Change one run's completions and update its hashes in run.json and bundle.json to match."""
    import pyarrow as pa

    victim = sorted(bundle.glob("runs/*/completions.parquet"))[0]
    run_json = victim.parent / "run.json"
    table = pq.read_table(victim)
    column = table.column_names.index("text")
    table = table.set_column(column, "text", pa.array(["FORGED"] * table.num_rows, table.schema.field("text").type))
    pq.write_table(table, victim)
    info = json.loads(run_json.read_text())
    info["sha256"]["completions.parquet"] = hashlib.sha256(victim.read_bytes()).hexdigest()
    run_json.write_text(json.dumps(info))
    manifest = json.loads((bundle / "bundle.json").read_text())
    for path in (victim, run_json):
        manifest["files"][str(path.relative_to(bundle))] = hashlib.sha256(path.read_bytes()).hexdigest()
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    return info["run_id"], victim


@pytest.mark.slow
def test_a_forged_bundle_never_replaces_a_run_already_held(tmp_path: Path):
    suite = tmp_path / "suite"
    mcqa_run(suite)
    genuine, target, bundle = tmp_path / "genuine", tmp_path / "target", tmp_path / "bundle"
    assert run_cli("import-helm", str(suite), "--storage", str(genuine), "--board", "b").returncode == 0
    assert run_cli("export", "b", "--to", str(bundle), "--storage", str(genuine)).returncode == 0
    assert run_cli("import", str(bundle), "--storage", str(target)).returncode == 0
    assert run_cli("import", str(bundle), "--storage", str(target)).returncode == 0  # the same bytes again: fine
    before = {str(p.relative_to(target)): p.read_bytes() for p in target.rglob("*") if p.is_file()}

    run_id, victim = _forge_completions(bundle)
    out = run_cli("import", str(bundle), "--storage", str(target))
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and f"runs/{run_id}/completions.parquet" in out.stderr
    assert "--overwrite" in out.stderr
    after = {str(p.relative_to(target)): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    assert after == before  # nothing written, the pointer not moved
    assert b"FORGED" not in (target / "runs" / run_id / "completions.parquet").read_bytes()

    out = run_cli("import", str(bundle), "--storage", str(target), "--overwrite")
    assert out.returncode == 0, out.stdout + out.stderr
    assert (target / "runs" / run_id / "completions.parquet").read_bytes() == victim.read_bytes()


def test_a_run_whose_content_cannot_have_its_id_is_refused(tmp_path: Path):
    suite = tmp_path / "suite"
    mcqa_run(suite)
    genuine, bundle = tmp_path / "genuine", tmp_path / "bundle"
    assert run_cli("import-helm", str(suite), "--storage", str(genuine), "--board", "b").returncode == 0
    assert run_cli("export", "b", "--to", str(bundle), "--storage", str(genuine)).returncode == 0
    run_json = next(bundle.glob("runs/*/run.json"))
    info = json.loads(run_json.read_text())
    info["imported"]["sha256"]["scenario_state.json"] = "0" * 64  # another source than the id was made from
    run_json.write_text(json.dumps(info))
    manifest = json.loads((bundle / "bundle.json").read_text())
    manifest["files"][str(run_json.relative_to(bundle))] = hashlib.sha256(run_json.read_bytes()).hexdigest()
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    for target in (tmp_path / "fresh", tmp_path / "fresh2"):
        args = ["import", str(bundle), "--storage", str(target)] + (["--overwrite"] if target.name == "fresh2" else [])
        out = run_cli(*args)
        assert out.returncode == 2, out.stdout + out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and f"runs/{info['run_id']}/run.json" in out.stderr
        assert "cannot have run id" in out.stderr
        assert not (target / "runs").exists() and not (target / "leaderboards").exists()


# --------------------------------------------------------------------------- a tree HELM itself wrote
REAL = Path(__file__).parent / "data" / "helm_tree" / "real"  # tests/data/helm_tree/make_tree.sh
TYPOS_QA = "simple_short_answer_qa:data_augmentation=typo0.5"
SIMPLE1 = "simple1:max_eval_instances=3"


def _helm_stats(folder: Path) -> dict[str, dict]:
    """HELM's stats.json entries by their whole name (metric, split, sub-split, perturbation and its
    parameters), the empty ones (count 0, no mean: HELM's training costs of a model it has no figures for)
    included."""
    return {json.dumps(e["name"], sort_keys=True): e for e in json.loads((folder / "stats.json").read_text())}


def _summary(root: Path, info: dict) -> dict[str, dict]:
    return {r["name"]: r for r in pq.read_table(root / "runs" / info["run_id"] / "summary.parquet").to_pylist()}


@pytest.mark.slow
def test_a_real_helm_tree_imports_with_intervals_and_helms_worst_cases(tmp_path: Path):
    root = tmp_path / "store"
    out = run_cli("import-helm", str(REAL), "--storage", str(root), "--board", "helm-real", "-v")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 run(s) imported" in out.stdout and "0 skipped" in out.stdout and "MISMATCH" not in out.stdout
    assert "no accuracy metric (HELM's generic statistics)" in out.stdout  # simple1: three trials, no accuracy
    runs = {label: info for (label, _), info in _runs(root).items()}
    assert set(runs) == {TYPOS_QA, SIMPLE1}
    helm = _helm_stats(REAL / "simple_short_answer_qa:model=simple_model1,data_augmentation=typo0.5")
    qa = _summary(root, runs[TYPOS_QA])
    assert len(qa) == len(helm)  # every stat HELM wrote, perturbed and empty ones included
    # every summary row has an interval around HELM's number; an empty stat has neither (count 0)
    empty = 0
    for label, info in runs.items():
        for name, row in _summary(root, info).items():
            if row["count"] == 0:
                empty += 1
                assert math.isnan(row["mean"]) and math.isnan(row["ci_low"]), (label, row)
                continue
            assert row["ci_low"] <= row["mean"] + 1e-12 and row["mean"] <= row["ci_high"] + 1e-12, (label, row)
    assert empty == sum(not e["count"] for f in REAL.iterdir() for e in _helm_stats(f).values()) > 0
    assert _summary(root, runs[SIMPLE1])["num_instances"]["count"] == 3  # HELM's count: its three train trials
    assert runs[SIMPLE1]["main_metric"] == "" and runs[SIMPLE1]["score"] is None
    # the perturbation stats are HELM's numbers, named <metric>~<perturbation>~<computed_on>
    for entry in helm.values():
        p = entry["name"].get("perturbation")
        name = entry["name"]["name"] + (f"~{p['name']}~{p['computed_on']}" if p else "")
        assert qa[name]["count"] == entry["count"], name
        assert qa[name]["mean"] == entry["mean"] if entry["count"] else "mean" not in entry, name
    main = runs[TYPOS_QA]["main_metric"]
    worst = helm[json.dumps({"name": main, "split": "test", "perturbation": {
        "name": "robustness", "robustness": True, "fairness": False, "computed_on": "worst"}}, sort_keys=True)]["mean"]
    assert worst < runs[TYPOS_QA]["score"]  # typos cost the echo model its right answers
    info = runs[TYPOS_QA]["imported"]
    assert info["perturbations"]["typos"] == {"name": "typos", "robustness": True, "fairness": False, "prob": 0.5}
    assert f"{main}~typos~worst" not in info["unchecked"]
    # per-instance perturbed rows, as HELM wrote them
    rows = pq.read_table(root / "runs" / runs[TYPOS_QA]["run_id"] / "stats.parquet").to_pylist()
    perturbed = {r["instance_id"]: r["value"] for r in rows if r["name"] == f"{main}~typos~perturbed"}
    per_instance = json.loads((REAL / "simple_short_answer_qa:model=simple_model1,data_augmentation=typo0.5"
                               / "per_instance_stats.json").read_text())
    assert perturbed == {p["instance_id"]: s["mean"] for p in per_instance if p.get("perturbation")
                         for s in p["stats"] if s["name"]["name"] == main}
    # the board: the robustness column our own perturbation runs get, with HELM's worst case and its interval
    board = _leaderboard(root, "helm-real")["simple/model1"]
    assert board[f"{TYPOS_QA}/robustness"] == worst
    assert board[f"{TYPOS_QA}/robustness ci_low"] <= worst <= board[f"{TYPOS_QA}/robustness ci_high"]
    assert board[TYPOS_QA] == runs[TYPOS_QA]["score"] and board[SIMPLE1] is None
    release = json.loads(next(root.glob("leaderboards/helm-real/*/release.json")).read_text())
    # a fairness column only for a run with a fairness perturbation, as on our boards (HELM's number stays)
    assert [g["name"] for g in release["metric_groups"]] == ["robustness"]
    assert f"{TYPOS_QA}/fairness" not in board and f"{main}~fairness~worst" in qa
    matched = [line for line in out.stdout.splitlines() if line.startswith("  MATCH ")]
    assert matched and all("HELM " in line and ", helmflow " in line for line in matched)


@pytest.mark.slow
def test_a_real_helm_tree_exports_as_helm_and_imports_back_losing_no_stat(tmp_path: Path):
    first, out_dir, back = tmp_path / "a", tmp_path / "helm-out", tmp_path / "b"
    assert run_cli("import-helm", str(REAL), "--storage", str(first), "--board", "helm-real").returncode == 0
    out = run_cli("export", "helm-real", "--format", "helm", "--to", str(out_dir), "--storage", str(first))
    assert out.returncode == 0, out.stdout + out.stderr
    for folder in REAL.iterdir():
        original, exported = _helm_stats(folder), _helm_stats(out_dir / folder.name)
        assert set(exported) == set(original), folder.name
        for key, entry in original.items():
            assert exported[key]["count"] == entry["count"], key
            if entry["count"]:
                assert exported[key]["mean"] == pytest.approx(entry["mean"]), key
            else:  # HELM's empty stat, written back in HELM's shape
                assert exported[key] == entry, key
        per_instance = json.loads((out_dir / folder.name / "per_instance_stats.json").read_text())
        assert any(p.get("perturbation") for p in per_instance) == ("typo" in folder.name)
    out = run_cli("import-helm", str(out_dir), "--storage", str(back), "--board", "helm-real")
    assert out.returncode == 0, out.stdout + out.stderr
    for key, info in _runs(first).items():
        again = _runs(back)[key]
        assert again["imported"]["perturbations"] == info["imported"]["perturbations"]
        a, b = _summary(first, info), _summary(back, again)
        assert {n: (r["count"], r["mean"]) for n, r in a.items() if r["count"]} == {
            n: (r["count"], pytest.approx(r["mean"])) for n, r in b.items() if r["count"]}
        assert {n for n, r in a.items() if not r["count"]} == {n for n, r in b.items() if not r["count"]} != set()
    assert _leaderboard(back, "helm-real") == _leaderboard(first, "helm-real")


@pytest.mark.slow
def test_a_run_helm_wrote_per_sub_split_imports_merged_as_helm_summarizes_and_exports_back(tmp_path: Path):
    """Before: every stat of a run whose instances have sub-splits was skipped, so the run was refused
    ("no metric helmflow knows") and exported nothing back. crfm-helm 0.5.16's own helm-summarize lookup
    (``get_unique_stat_by_matcher``) on this stats.json gives exact_match 0.75 with count 2."""
    from tests.support.helm_fixtures import sub_split_run

    suite, root, out_dir, back = tmp_path / "suite", tmp_path / "a", tmp_path / "helm-out", tmp_path / "b"
    folder = sub_split_run(suite)
    out = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "helm-subs", "-v")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 run(s) imported" in out.stdout and "MISMATCH" not in out.stdout
    for line in ("MATCH exact_match:sub_split=toxic [test]: HELM 1.0, helmflow 1.0",
                 "MATCH exact_match:sub_split=non-toxic [test]: HELM 0.5, helmflow 0.5",
                 "MATCH exact_match [test]: HELM 0.75, helmflow 0.75"):  # the mean of the sub-split means
        assert line in out.stdout, out.stdout
    (info,) = _runs(root).values()
    rows = _summary(root, info)
    assert info["main_metric"] == "exact_match" and info["score"] == 0.75
    assert rows["exact_match"]["count"] == 2 and rows["exact_match:sub_split=non-toxic"]["count"] == 1
    for row in rows.values():  # every row has an interval around HELM's number
        assert row["ci_low"] <= row["mean"] <= row["ci_high"], row
    assert rows["exact_match:sub_split=toxic"]["ci_low"] == rows["exact_match:sub_split=toxic"]["ci_high"] == 1.0
    assert _leaderboard(root, "helm-subs")[GPT]["toy_toxic"] == 0.75
    per = {r["instance_id"]: r["value"] for r in
           pq.read_table(root / "runs" / info["run_id"] / "stats.parquet").to_pylist() if r["name"] == "exact_match"}
    assert per == {"s1": 1.0, "s2": 1.0, "s3": 0.0}

    assert run_cli("export", "helm-subs", "--format", "helm", "--to", str(out_dir), "--storage", str(root)).returncode == 0
    original, exported = _helm_stats(folder), _helm_stats(out_dir / folder.name)
    assert set(exported) == set(original)  # per sub-split, and no whole-split stat HELM never wrote
    assert all(exported[k]["mean"] == pytest.approx(e["mean"]) and exported[k]["count"] == e["count"]
               for k, e in original.items())
    helm_per = json.loads((out_dir / folder.name / "per_instance_stats.json").read_text())
    assert {p["instance_id"]: {s["name"]["sub_split"] for s in p["stats"]} for p in helm_per} == {
        "s1": {"toxic"}, "s2": {"non-toxic"}, "s3": {"non-toxic"}}
    out = run_cli("import-helm", str(out_dir), "--storage", str(back), "--board", "helm-subs")
    assert out.returncode == 0 and "MISMATCH" not in out.stdout, out.stdout + out.stderr
    (again,) = _runs(back).values()
    assert {n: (r["count"], r["mean"]) for n, r in _summary(back, again).items()} == {
        n: (r["count"], pytest.approx(r["mean"])) for n, r in rows.items()}


@pytest.mark.slow
def test_perturbation_stats_without_their_per_instance_values_get_no_interval(tmp_path: Path):
    """HELM's per-instance file keeps the originals only: the perturbation numbers are imported as HELM
    wrote them, and none gets an interval made from the originals alone."""
    import shutil

    folder = tmp_path / "suite" / "qa"
    shutil.copytree(REAL / "simple_short_answer_qa:model=simple_model1,data_augmentation=typo0.5", folder)
    per_instance = json.loads((folder / "per_instance_stats.json").read_text())
    (folder / "per_instance_stats.json").write_text(json.dumps([p for p in per_instance if not p.get("perturbation")]))
    root = tmp_path / "store"
    out = run_cli("import-helm", str(folder.parent), "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    (info,) = _runs(root).values()
    rows = _summary(root, info)
    main = info["main_metric"]
    assert rows[main]["ci_low"] <= rows[main]["mean"] <= rows[main]["ci_high"]
    for name in (f"{main}~typos~perturbed", f"{main}~typos~worst", f"{main}~robustness~worst"):
        assert rows[name]["mean"] is not None and math.isnan(rows[name]["ci_low"]), rows[name]


def test_non_finite_and_overlong_numbers_are_refused_naming_the_file(tmp_path: Path):
    """Before: HELM's Infinity was published as a score, and a 5,000-digit number was a ValueError traceback."""
    from tests.support.helm_fixtures import qa_run

    suite = tmp_path / "runs" / "suite"
    mcqa_run(suite)
    infinite = qa_run(suite, "openai/gpt-infinite")
    stats = infinite / "stats.json"
    stats.write_text(re.sub(r'"mean": [0-9.e-]+', '"mean": Infinity', stats.read_text(), count=1))
    assert "Infinity" in stats.read_text()
    overlong = qa_run(suite, "openai/gpt-overlong")
    stats = overlong / "stats.json"
    stats.write_text(re.sub(r'"count": [0-9]+', '"count": ' + "9" * 5000, stats.read_text(), count=1))
    assert "9" * 5000 in stats.read_text()
    root = tmp_path / "store"
    out = run_cli("import-helm", str(suite), "--storage", str(root), "--board", "helm-numbers")
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr
    assert f"skipped   {infinite.name}: stats.json holds Infinity, not a finite number" in out.stdout, out.stdout
    assert f"skipped   {overlong.name}: stats.json: Exceeds the limit" in out.stdout, out.stdout
    assert list(_leaderboard(root, "helm-numbers")) == [GPT]


@pytest.mark.slow
def test_a_bundle_is_imported_a_piece_at_a_time(tmp_path: Path):
    """A 200 MB file in a bundle: checked and copied in pieces, the import's peak memory stays far below
    the file's size (before, every bundle file was read whole before the first was written)."""
    suite = good_suite(tmp_path)
    assert run_cli("import-helm", str(suite), "--storage", str(tmp_path / "a"), "--board", "helm-toy").returncode == 0
    bundle = tmp_path / "bundle"
    assert run_cli("export", "helm-toy", "--to", str(bundle), "--storage", str(tmp_path / "a")).returncode == 0
    big = os.urandom(1 << 20) * 200  # a stored image's key is its sha256: any bytes under their own name
    name = f"{hashlib.sha256(big).hexdigest()}.png"
    (bundle / "media").mkdir(exist_ok=True)
    (bundle / "media" / name).write_bytes(big)
    manifest = json.loads((bundle / "bundle.json").read_text())
    manifest["files"][f"media/{name}"] = hashlib.sha256(big).hexdigest()
    (bundle / "bundle.json").write_text(json.dumps(manifest))
    del big
    measure = ("import resource, subprocess, sys; "
               "p = subprocess.run([sys.executable, '-m', 'helmflow.cli', 'import', sys.argv[1], '--storage', "
               "sys.argv[2]], capture_output=True, text=True); "
               "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); "
               "print(p.stdout, p.stderr, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", measure, str(bundle), str(tmp_path / "b")], capture_output=True,
                         text=True, cwd=REPO, timeout=600)
    code, peak_mb = map(int, out.stdout.split())
    assert code == 0, out.stderr
    copied = tmp_path / "b" / "media" / name
    assert copied.stat().st_size == 200 << 20
    assert hashlib.sha256(copied.read_bytes()).hexdigest() == name.split(".")[0]
    assert peak_mb < 150, f"peak {peak_mb} MB for a 200 MB file"


def test_a_helm_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path):
    """Before: every HELM file was read whole whatever its size (1.5 GB of memory for a 200 MB
    per_instance_stats.json). Past the documented limit a run is skipped, naming the file and the setting."""
    suite = good_suite(tmp_path)
    sizes = sorted(p.stat().st_size for p in suite.glob("*/scenario_state.json"))
    limit_mb = (sizes[0] - 1) / 1e6  # every scenario_state.json is over it
    out = run_cli("import-helm", str(suite), "--storage", str(tmp_path / "s"), "--board", "helm-toy",
                  env={"HELMFLOW_IMPORT_MAX_MB": repr(limit_mb)})
    assert out.returncode == 1, out.stdout + out.stderr
    text = " ".join((out.stdout + out.stderr).split())
    assert "0 run(s) imported" in text and "Traceback" not in text
    assert f"scenario_state.json is {sizes[0]:,} bytes, over the" in text and "HELMFLOW_IMPORT_MAX_MB" in text
    assert not (tmp_path / "s" / "runs").exists()

    out = run_cli("import-helm", str(suite), "--storage", str(tmp_path / "s"), "--board", "helm-toy",
                  env={"HELMFLOW_IMPORT_MAX_MB": "lots"})
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "$HELMFLOW_IMPORT_MAX_MB: Input should be a valid number" in out.stderr


def test_a_calibrated_helm_run_imports_with_its_calibration_requests_and_reproduces(tmp_path: Path):
    """HELM's multiple_choice_separate_calibrated: its calibration request states are imported as requests of
    their own, so the recomputed exact match is HELM's (0.5); without them it would be 0 (see calibrated_run)."""
    suite = tmp_path / "benchmark_output" / "runs" / "toy"
    calibrated_run(suite)
    out = run_cli("import-helm", str(suite), "-v", "--storage", str(tmp_path / "s"))
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join((out.stdout + out.stderr).split())
    assert "MATCH" in text and "MISMATCH" not in text, text
    [run_dir] = (tmp_path / "s" / "runs").iterdir()
    requests = pq.read_table(run_dir / "requests.parquet").to_pylist()
    assert sorted(r["request_mode"] or "original" for r in requests) == ["calibration"] * 4 + ["original"] * 4
    assert {r["prompt"] for r in requests if r["request_mode"]} == {"Answer: mat", "Answer: moon", "Answer: water",
                                                                    "Answer: air"}
