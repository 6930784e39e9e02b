"""The HELM MMLU board: its 57 entries and mean headline, and `helmflow run mmlu` end to end through the CLI
on mirrored fixtures (data.tar served on 127.0.0.1, mirrored by `helmflow mirror mmlu`), against an offline
baseline on a real Prefect server."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from helmflow.scenarios.mmlu import SUBJECTS
from tests.support.cli import run_cli
from tests.support.lite_fixtures import csv_text, serve, tar_bytes

# three subjects run end to end, their test keys chosen so the first-option baseline's scores are known
KEYS = {"anatomy": "AB", "virology": "AA", "world_religions": "CD"}  # exact match 0.5, 1.0, 0.0


def test_the_board_runs_all_57_subjects_with_helms_cap_and_the_mean_headline():
    from helmflow.plan.spec import load_board

    spec = load_board("mmlu")
    assert [s.params["subject"] for s in spec.scenarios] == SUBJECTS and len(SUBJECTS) == 57
    assert {s.name for s in spec.scenarios} == {"mmlu"} and not any(s.group for s in spec.scenarios)
    assert spec.max_instances == 10000 and spec.aggregation[0] == "mean"
    (accuracy,) = spec.metric_groups
    assert accuracy.aggregation == ["mean", "win_rate"] and len(accuracy.columns) == 57


def test_reproduce_mmlu_keeps_helms_10000_instance_cap():
    out = run_cli("reproduce", "mmlu", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "at most 10000 instances per scenario" in text and text.count("mmlu: data.tar") == 1


def _tar() -> bytes:
    members = {}
    for subject in SUBJECTS:
        keys = KEYS.get(subject, "AB")
        for folder, n in (("dev", 5), ("val", 1), ("test", len(keys))):
            members[f"data/{folder}/{subject}_{folder}.csv"] = csv_text(None, [
                [f"Fixture {subject} {folder} {i}: which?", *[f"option {j} of {i}" for j in range(4)],
                 keys[i] if folder == "test" else "B"] for i in range(n)])
    return tar_bytes(members)


@pytest.mark.slow
def test_helmflow_run_mmlu_end_to_end_on_mirrored_fixtures(tmp_path, prefect_server):
    root = tmp_path / "src" / "people.eecs.berkeley.edu" / "~hendrycks"
    root.mkdir(parents=True)
    (root / "data.tar").write_bytes(_tar())
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with serve(tmp_path / "src") as host:
        out = run_cli("mirror", "mmlu", "--to", str(mirror), env={"HELMFLOW_SOURCE_HOST": host.url})
    assert out.returncode == 0, out.stdout + out.stderr
    labels = [f"mmlu-{s}" for s in KEYS]
    out = run_cli("run", "mmlu", "--scenarios", ",".join(labels), "--storage", str(storage),
                  env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/mmlu/latest-subset.json").read_text())
    (row,) = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    assert [row[lab] for lab in labels] == pytest.approx([0.5, 1.0, 0.0])
    assert row["mean_score"] == pytest.approx(0.5) and row["accuracy mean"] == pytest.approx(0.5)
    assert "accuracy mean_win_rate" in row  # beside the mean (None: one model wins against no one)
    release = json.loads((storage / "leaderboards/mmlu" / latest["release_id"] / "release.json").read_text())
    assert release["metric_groups"][0]["aggregation"] == ["mean", "win_rate"]
