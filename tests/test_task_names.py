"""What a person reads in the Prefect UI: artifact keys, cell names, the release link (no Prefect server)."""

from __future__ import annotations

from helmflow.plan.compile import prepare
from helmflow.plan.records import cell_name
from helmflow.tasks.evaluation import artifact_key, release_link, run_artifact_key


def test_artifact_keys_follow_prefects_rules_and_name_the_cell():
    plan = prepare("demo", max_instances=2)
    keys = {run_artifact_key("demo", r) for r in plan.runs}
    assert len(keys) == len(plan.runs)  # one key per cell, none collide
    assert "demo-dyck-3-offline-solver-noisy" in keys
    assert all(k == artifact_key(k) and k.replace("-", "").isalnum() and k.islower() for k in keys)
    assert artifact_key("My Board!! v2") == "my-board-v2"
    assert {cell_name(r) for r in plan.runs} >= {"dyck-3 x offline/solver", "arithmetic-3 x offline/echo"}
    assert all(name.isascii() for name in map(cell_name, plan.runs))  # the UI graph's font has no ×


def test_release_link_prefers_the_report_then_the_storage_url(monkeypatch):
    monkeypatch.delenv("HELMFLOW_REPORT_URL", raising=False)
    assert release_link("demo", "2026-11-30-ab", "/srv/store/leaderboards/demo/2026-11-30-ab") == \
        "file:///srv/store/leaderboards/demo/2026-11-30-ab"
    assert release_link("demo", "r1", "s3://bucket/x/leaderboards/demo/r1") == "s3://bucket/x/leaderboards/demo/r1"
    monkeypatch.setenv("HELMFLOW_REPORT_URL", "https://reports.example/")
    assert release_link("demo", "r1", "s3://bucket/x") == "https://reports.example/boards/demo/r1/"
