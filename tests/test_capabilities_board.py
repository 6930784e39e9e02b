"""The full Capabilities board: MMLU-Pro, GPQA, IFEval, WildBench and Omni-MATH through ``helmflow run``,
offline (fixture files through mirrors, the dev server scripted as the model and the judges).

Changing the judge gives the judged scenarios new run ids and re-judges them without asking the model
again; the rule-scored scenarios keep their runs. ``--no-judge`` leaves the judged cells missing.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.devserver import start_dev_server
from tests.support.capabilities_fixtures import csv_bytes, gpqa_rows, mirror_folder, mmlu_pro_files
from tests.support.cli import REPO, run_cli
from tests.support.devserver import FAST_RETRY
from tests.support.judge_fixtures import (
    OMNI_FILE,
    WILDBENCH_FILE,
    omni_jsonl,
    omni_rows,
    wildbench_parquet,
    wildbench_rows,
)

LABELS = ["mmlu_pro", "gpqa", "ifeval", "wildbench", "omni_math"]
JUDGED = {"wildbench", "omni_math"}
WB_MARKERS = ["[ans:right] [judge-a:8] [judge-b:4]", "[ans:right] [judge-a:garbage] [judge-b:7]", "[ans:empty]",
              "[ans:right] [judge-a:10] [judge-b:12]"]
OMNI_MARKERS = ["[ans:right] [judge-a:TRUE] [judge-b:TRUE]", "[ans:wrong] [judge-a:FALSE] [judge-b:TRUE]",
                "[ans:right] [judge-a:TRUE] [judge-b:garbage]"]
IFEVAL_ROWS = [{"key": 10 + k, "prompt": f"Fixture request {k}: describe a fixture without commas.",
                "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]} for k in range(25)]


def test_the_board_spec_has_the_five_scenarios_and_a_configured_jury():
    from helmflow.plan.spec import load_board
    from helmflow.scenarios import get_scenario

    spec = load_board("capabilities")
    assert [s.label for s in spec.scenarios] == LABELS and spec.aggregation == ["mean"]
    assert spec.max_instances == 1000 and spec.judges == ["openai/gpt-4o-2024-05-13"]
    mains = {s.label: get_scenario(s.name, s.params).main_metric for s in spec.scenarios}
    assert mains == {"mmlu_pro": "chain_of_thought_correctness", "gpqa": "chain_of_thought_correctness",
                     "ifeval": "ifeval_strict_accuracy", "wildbench": "wildbench_score_rescaled",
                     "omni_math": "omni_math_accuracy"}


@pytest.fixture
def mirrors(tmp_path):
    def folder(name: str, files: dict[str, bytes]) -> str:
        return mirror_folder(tmp_path / "mirror", name, files)

    ifeval = ("\n".join(json.dumps(r) for r in IFEVAL_ROWS) + "\n").encode()
    return {
        "HELMFLOW_MIRROR_MMLU_PRO": folder("mmlu_pro", mmlu_pro_files(n_test=60, n_validation=70)),
        "HELMFLOW_MIRROR_GPQA": folder("gpqa", {"gpqa_main.csv": csv_bytes(gpqa_rows(30))}),
        "HELMFLOW_MIRROR_IFEVAL": folder("ifeval", {"ifeval_input_data.jsonl": ifeval}),
        "HELMFLOW_MIRROR_WILDBENCH": folder("wildbench", {WILDBENCH_FILE: wildbench_parquet(wildbench_rows(WB_MARKERS * 6))}),
        "HELMFLOW_MIRROR_OMNI_MATH": folder("omni", {OMNI_FILE: omni_jsonl(omni_rows(OMNI_MARKERS * 8))}),
    }


@pytest.mark.slow
def test_without_a_judge_credential_the_run_stops_up_front_naming_the_variable(mirrors, tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "t/keyed-judge", "client": "openai", "model": "gpt-x", "api_key_env": "HELMFLOW_TEST_NO_SUCH_KEY"},
    ]}))  # fmt: skip
    storage = tmp_path / "store"
    common = ["--models", "offline/echo", "--models-file", str(models), "--storage", str(storage)]
    out = run_cli("run", "capabilities", "--scenarios", "omni_math", "--judge", "t/keyed-judge", *common, env=mirrors)
    assert out.returncode == 2 and "HELMFLOW_TEST_NO_SUCH_KEY" in out.stderr and "--no-judge" in out.stderr, out.stderr
    out = run_cli("run", "capabilities", "--scenarios", "wildbench", *common, env={**mirrors, "OPENAI_API_KEY": ""})
    assert out.returncode == 2 and "OPENAI_API_KEY" in out.stderr, out.stderr  # the board's default judge
    out = run_cli("run", "capabilities", "--judge", "a", "--no-judge", *common, env=mirrors)
    assert out.returncode == 2 and "exclude each other" in out.stderr
    out = run_cli("eval", "omni_math", *common, env=mirrors)  # an ad-hoc board has no judges of its own
    assert out.returncode == 2 and "omni_math need(s) a judge" in out.stderr, out.stderr
    assert not storage.exists()
    # showing the board needs no key: it lists the jury and template versions of the judged scenarios
    out = run_cli("show", "capabilities", "--scenarios", "wildbench,omni_math", env={**mirrors, "OPENAI_API_KEY": ""})
    assert out.returncode == 0, out.stderr
    assert "openai/gpt-4o-2024-05-13" in out.stdout and "wildbench v1" in out.stdout and "omni_math v1" in out.stdout


def test_reproduce_explains_what_differs_from_helm():
    out = run_cli("reproduce", "capabilities", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "at most 1000 instances" in text and "openai/gpt-4o-2024-05-13" in text
    assert "Llama-3.1-405B-Instruct-Turbo and Claude 3.5 Sonnet" in text and "judge templates" in text
    v2 = " ".join(run_cli("reproduce", "capabilities", "--variant", "v2", "--judge", "x/j", "--explain").stdout.split())
    assert "reasoning_v2" in v2 and "judges: x/j; HELM v1 used" in v2


def _runs(storage) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")}


def test_reproduce_refuses_unverified_mirrors_unless_allowed(mirrors, tmp_path):
    """The fixture mirrors have no helmflow-mirror.json: reproduce must not present them as HELM's data."""
    storage = tmp_path / "store"
    out = run_cli("reproduce", "capabilities", "--models", "offline/echo", "--no-judge", "--storage", str(storage),
                  env=mirrors)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "unverified data" in out.stderr and "--allow-unverified-data" in out.stderr
    assert "mmlu_pro" in out.stderr and "has no helmflow-mirror.json" in out.stderr
    assert not (storage / "leaderboards").exists()
    shown = run_cli("show", "capabilities", "--no-judge", env=mirrors)
    assert shown.returncode == 0, shown.stderr
    assert "UNVERIFIED" in shown.stdout and "data/test-00000-of-00001.parquet" in shown.stdout


def _latest(storage) -> tuple[list[dict], dict]:
    latest = json.loads((storage / "leaderboards/capabilities/latest-subset.json").read_text())
    release = json.loads((storage / "leaderboards/capabilities" / latest["release_id"] / "release.json").read_text())
    return pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist(), release


@pytest.mark.slow
def test_full_board_offline_then_a_new_judge_then_no_judge(mirrors, tmp_path, prefect_server):
    storage = tmp_path / "store"
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        def dep(name, model, price=0.0):
            return {"name": name, "client": "openai-compatible", "model": model, "base_url": server.openai_url,
                    "retry": FAST_RETRY, "max_concurrency": 16, "price_input_per_mtok": price, "price_output_per_mtok": price}

        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [dep("dev/model", "model-x"), dep("dev/judge-a", "judge-a", 2.0),
                                                          dep("dev/judge-b", "judge-b", 1.0)]}))

        def run(*extra: str):
            out = run_cli("run", "capabilities", "--models", "dev/model", "--max-instances", "20", "--models-file", str(models),
                          "--storage", str(storage), *extra, env=mirrors)
            assert out.returncode == 0, out.stdout + out.stderr
            return out

        run("--judge", "dev/judge-a")
        first = _runs(storage)
        by_label = {r["scenario"]["label"]: r for r in first.values()}
        assert set(by_label) == set(LABELS) and all(r["counts"]["requests"] == 20 for r in first.values())
        rows, release = _latest(storage)
        (row,) = rows
        assert all(row[label] is not None for label in LABELS)
        assert row["mean_score"] == pytest.approx(sum(row[label] for label in LABELS) / 5)
        for label in JUDGED:
            r = by_label[label]
            assert r["judges"]["deployments"][0]["name"] == "dev/judge-a" and r["judge_cost_usd"] > 0
            assert r["cost_usd"] == 0 and f"runs/{r['run_id']}/annotations.parquet" in r["files"]
            notes = pq.read_table(storage / "runs" / r["run_id"] / "annotations.parquet").to_pylist()
            assert {n["judge"] for n in notes} == {"dev/judge-a"} and len(notes) == 20
            assert r["judge_cost_usd"] == pytest.approx(sum(n["cost_usd"] for n in notes))
        assert by_label["wildbench"]["judges"]["parse_errors"] > 0  # "garbage" verdicts are counted, the run completes
        assert release["judge_cost_usd"] == pytest.approx(sum(r["judge_cost_usd"] for r in first.values()))
        assert row["judge_cost_usd"] == pytest.approx(release["judge_cost_usd"]) and release["judges"] == ["dev/judge-a"]
        assert not any((storage / "runs" / by_label[label]["run_id"] / "annotations.parquet").exists()
                       for label in ("mmlu_pro", "gpqa", "ifeval"))

        lineage = run_cli("lineage", "capabilities", "--storage", str(storage))
        assert lineage.returncode == 0, lineage.stderr
        assert "judged by dev/judge-a (wildbench v1)" in lineage.stdout and "judged by dev/judge-a (omni_math v1)" in lineage.stdout

        # a new judge: the judged scenarios get new run ids and are re-judged; the model is not asked again
        before = server.stats()["requests"]
        run("--judge", "dev/judge-b")
        second = {r["scenario"]["label"]: r for k, r in _runs(storage).items() if k not in first}
        assert set(second) == JUDGED  # mmlu_pro, gpqa and ifeval kept their runs (same ids)
        sent = sum(1 for label in JUDGED for n in pq.read_table(storage / "runs" / second[label]["run_id"] / "annotations.parquet").to_pylist()
                   if n["judge_request_hash"] is not None)
        assert server.stats()["requests"] - before == sent > 0  # only judge-b's requests reached the server
        for label in JUDGED:
            assert second[label]["lineage"]["query_key"] == by_label[label]["lineage"]["query_key"]
            assert second[label]["versions"]["metric_version"] != by_label[label]["versions"]["metric_version"]

        # --no-judge: the judged cells are missing (not 0); Omni-MATH's rule-based check is still there
        before = server.stats()["requests"]
        run("--no-judge")
        assert server.stats()["requests"] == before
        (row,), release = _latest(storage)
        assert row["wildbench"] is None and row["omni_math"] is None and release["judges"] == []
        assert row["mean_score"] == pytest.approx(sum(row[label] for label in ("mmlu_pro", "gpqa", "ifeval")) / 3)
        third = [r for k, r in _runs(storage).items() if k not in first and k not in {r["run_id"] for r in second.values()}]
        omni = next(r for r in third if r["scenario"]["label"] == "omni_math")
        summary = {s["name"]: s for s in pq.read_table(storage / "runs" / omni["run_id"] / "summary.parquet").to_pylist()}
        assert "omni_math_accuracy" not in summary and summary["omni_math_rule_equivalence"]["count"] == 20


@pytest.mark.slow
def test_reproduce_runs_the_pinned_configuration(mirrors, tmp_path, prefect_server):
    storage = tmp_path / "store"
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [
            {"name": n, "client": "openai-compatible", "model": m, "base_url": server.openai_url, "retry": FAST_RETRY,
             "context_window": 32768}  # v2 asks for 14,096 output tokens
            for n, m in (("dev/model", "model-x"), ("dev/judge-a", "judge-a"))
        ]}))  # fmt: skip
        out = run_cli("reproduce", "capabilities", "--variant", "v2", "--models", "dev/model", "--judge", "dev/judge-a",
                      "--allow-unverified-data",
                      "--models-file", str(models), "--storage", str(storage), env=mirrors)
        assert out.returncode == 0, out.stdout + out.stderr
    assert "differences from HELM's published setup" in out.stdout
    runs = {r["scenario"]["label"]: r for r in _runs(storage).values()}
    assert set(runs) == set(LABELS)
    assert {r["adapter"]["sample"]["max_eval_instances"] for r in runs.values()} == {1000}
    assert runs["mmlu_pro"]["scenario"]["params"]["variant"] == "v2" and runs["gpqa"]["scenario"]["params"]["variant"] == "v2"
    assert runs["wildbench"]["counts"]["requests"] == len(WB_MARKERS) * 6  # fewer than 1000 rows: all of them
    assert [j["name"] for j in runs["omni_math"]["judges"]["deployments"]] == ["dev/judge-a"]
    latest = json.loads((storage / "leaderboards/capabilities-v2/latest-subset.json").read_text())
    assert latest["status"] == "complete"


@pytest.mark.slow
def test_budget_covers_judge_requests_through_the_flow(mirrors, tmp_path, prefect_server):
    """A free model and a priced judge: a budget too small for one judge request stops the judged cell
    (partial release) but not the rule-scored one; a larger budget then judges without re-asking the model."""
    storage = tmp_path / "store"
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [
            {"name": "dev/model", "client": "openai-compatible", "model": "model-x", "base_url": server.openai_url,
             "retry": FAST_RETRY},
            {"name": "dev/judge-a", "client": "openai-compatible", "model": "judge-a", "base_url": server.openai_url,
             "retry": FAST_RETRY, "price_input_per_mtok": 2.0, "price_output_per_mtok": 2.0},
        ]}))  # fmt: skip
        args = ["run", "capabilities", "--scenarios", "omni_math,ifeval", "--models", "dev/model", "--judge", "dev/judge-a",
                "--max-instances", "20", "--models-file", str(models), "--storage", str(storage)]
        out = run_cli(*args, "--budget-usd", "0.001", env=mirrors)
        assert out.returncode == 1, out.stdout + out.stderr  # partial release
        model_requests = server.stats()["requests"]
        assert model_requests == 2 * 20  # every model request was sent (free); no judge request was
        latest = json.loads((storage / "leaderboards/capabilities/latest-subset-partial.json").read_text())
        release = json.loads((storage / "leaderboards/capabilities" / latest["release_id"] / "release.json").read_text())
        (failed,) = release["failed"]
        assert failed["scenario"] == "omni_math" and "budget" in failed["error"]
        out = run_cli(*args, "--budget-usd", "10", env=mirrors)
        assert out.returncode == 0, out.stdout + out.stderr
        assert server.stats()["requests"] - model_requests == 20  # only the judge's requests
    omni = next(r for r in _runs(storage).values() if r["scenario"]["label"] == "omni_math")
    assert omni["judges"]["sent"] == 20 and 0 < omni["judge_cost_usd"] < 10


@pytest.mark.slow
def test_a_jury_of_two_stub_judges_has_its_agreement_beside_the_juried_columns(mirrors, tmp_path, prefect_server):
    from starlette.testclient import TestClient

    from helmflow.web.app import create_app

    storage = tmp_path / "store"
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [
            {"name": n, "client": "openai-compatible", "model": m, "base_url": server.openai_url, "retry": FAST_RETRY}
            for n, m in (("dev/model", "model-x"), ("dev/judge-a", "judge-a"), ("dev/judge-b", "judge-b"))]}))
        out = run_cli("run", "capabilities", "--models", "dev/model", "--scenarios", "wildbench,omni_math",
                      "--judge", "dev/judge-a,dev/judge-b", "--max-instances", "12", "--models-file", str(models),
                      "--storage", str(storage), env=mirrors)
        assert out.returncode == 0, out.stdout + out.stderr
    agreed = run_cli("agreement", "capabilities", "--storage", str(storage))
    assert agreed.returncode == 0, agreed.stderr
    release = json.loads((storage / "leaderboards" / "capabilities" / "latest-subset.json").read_text())["release_id"]
    rows = {r["scenario"]: r for r in pq.read_table(
        storage / "leaderboards" / "capabilities" / release / "agreement.parquet").to_pylist()}
    assert set(rows) == JUDGED
    wb, omni = rows["wildbench"], rows["omni_math"]
    assert wb["judges"] == omni["judges"] == ["dev/judge-a", "dev/judge-b"]
    # WildBench: judge-a says 8 or 10 when it parses, judge-b 4 or 7 (its 12 is out of range); where both
    # parsed, the fixture has them at 8 and 4: always more than a point apart
    assert 8 <= wb["judge_means"][0] <= 10 and 4 <= wb["judge_means"][1] <= 7
    assert wb["units"] > 0 and wb["disagree_share"] == 1.0 and wb["binary"] is False
    # Omni-MATH: TRUE/TRUE and FALSE/TRUE where both parsed: 0/1 verdicts, nominal alpha, unweighted kappa
    assert omni["binary"] is True and omni["units"] > 0 and omni["disagree_share"] == 0.0
    assert omni["judge_means"][1] == 1.0 and omni["judge_means"][0] < 1.0
    assert omni["kappa"] is not None and omni["kappa"] <= 0  # judge-b says TRUE to everything: no agreement beyond chance
    assert "dev/judge-a" in agreed.stdout and "100%" in agreed.stdout
    page = TestClient(create_app(str(storage))).get(f"/boards/capabilities/{release}/").text
    board = page.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert board.count('class="agreement"') == 2 and "100% &gt;1 pt apart" in board
    assert page.count('<tr data-scenario="wildbench" data-deployment="dev/model">') == 1
