"""``helmflow fetch-assets reeval`` against the local Hugging Face Hub double with a stand-in difficulty table
(HELM's schema, ``request.prompt`` and ``z``; prompts our adapter builds for some dyck items plus a few that
match nothing): the matched count is printed, the file and its sha256 land in the store, a refetch changes
nothing, a changed upstream table is refused in one line (exit 2), and ``run --adaptive`` asks the matched
items only, with the fetched difficulties."""

from __future__ import annotations

import hashlib
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helmflow import layout
from helmflow.reeval import REPO, SPLIT_PATH
from helmflow.storage import Store
from tests.support.cli import run_cli
from tests.support.hub_server import HubServer

REV = "0123456789abcdef0123456789abcdef01234567"
SPLIT = "dyck_language_np_3"  # HELM's split name for dyck_language


def _our_prompts() -> dict[str, str]:
    """instance id -> the prompt text our adapter sends offline/solver for the demo board's dyck-3 items."""
    from helmflow.adapters import iter_prompts
    from helmflow.dryrun import load_instances
    from helmflow.plan.compile import prepare
    from helmflow.request_builder import build_requests, prompt_text

    plan = prepare("demo", scenarios=["dyck-3"], models=["offline/solver"], check_credentials=False)
    scenario = plan.scenarios[0]
    dep = plan.runs[0].deployment
    out = {}
    for prompt in iter_prompts(scenario.adapter, load_instances(scenario)):
        for r in build_requests([prompt], scenario.adapter, dep):
            out.setdefault(r.instance_id, prompt_text(r.body))
    return out


ONE_FETCH = [f"GET /api/datasets/{REPO}/revision/{REV}", f"GET /api/datasets/{REPO}/tree/{REV}/data",
             f"GET /datasets/{REPO}/resolve/{REV}/{SPLIT_PATH.format(split=SPLIT)}"]


def _dataset_requests(requests: list[str]) -> list[str]:
    """The requests for the difficulty table's repository (the client's other calls left out)."""
    return [r for r in requests if REPO in r]


def _parquet(prompts: list[str], z: list[float]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"request.prompt": prompts, "z": z}), buf)
    return buf.getvalue()


@pytest.mark.slow  # CLI subprocesses and a Prefect-run adaptive board
def test_fetch_assets_reeval_matches_by_prompt_stores_versioned_and_run_adaptive_uses_it(tmp_path, prefect_server):
    ours = _our_prompts()
    chosen = sorted(ours)[:6]
    easiness = {iid: -1.5 + 0.5 * k for k, iid in enumerate(chosen)}
    prompts = [ours[i] for i in chosen] + ["Input: ( [ {\nOutput: not one of ours", "another HELM prompt"]
    table = _parquet(prompts, [easiness[i] for i in chosen] + [0.1, 0.2])
    store_root = tmp_path / "store"
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file(REPO, REV, SPLIT_PATH.format(split=SPLIT), table)
        env = {"HF_ENDPOINT": hub.url, "HELMFLOW_STORAGE": str(store_root)}
        args = ["fetch-assets", "reeval", "--revision", REV, "--scenarios", "dyck-3"]
        first = run_cli(*args, env=env)
        assert first.returncode == 0, first.stdout + first.stderr
        assert f"dyck-3: 6 of {len(ours)} items matched by prompt (8 rows in split '{SPLIT}')" in first.stdout
        assert "(recorded)" in first.stdout
        assert _dataset_requests(hub.requests) == ONE_FETCH  # one split, read once, at the revision asked

        store = Store(str(store_root))
        name = f"{SPLIT}.{REV}.parquet"
        assert store.read_bytes(layout.asset_file("reeval", name)) == table
        files = store.read_json(layout.assets_manifest("reeval"))["files"]
        assert files[name]["sha256"] == hashlib.sha256(table).hexdigest() and files[name]["revision"] == REV
        [latest_path] = store_root.glob("items/*/*/latest.json")
        latest = json.loads(latest_path.read_text())
        assert latest["sha256"] == files[name]["sha256"] and latest["matched"] == 6
        stored = pq.read_table(latest_path.parent / f"easiness-{latest['version']}.parquet").to_pylist()
        assert {r["instance_id"]: r["z"] for r in stored} == easiness

        seen = len(hub.requests)
        again = run_cli(*args, env=env)
        assert _dataset_requests(hub.requests[seen:]) == ONE_FETCH
        assert again.returncode == 0 and "(same as first fetch)" in again.stdout, again.stdout + again.stderr
        assert store.read_json(layout.assets_manifest("reeval"))["files"] == files
        assert json.loads(latest_path.read_text()) == latest

        # upstream changes the table at that revision: refused in one line, nothing stored changes
        hub.add_file(REPO, REV, SPLIT_PATH.format(split=SPLIT), _parquet(prompts, [0.0] * len(prompts)))
        changed = run_cli(*args, env=env)
        assert changed.returncode == 2 and changed.stderr.count("\n") == 1, changed.stderr
        assert "differs from the first fetch" in changed.stderr
        assert store.read_bytes(layout.asset_file("reeval", name)) == table
        assert json.loads(latest_path.read_text()) == latest

    adaptive = run_cli("run", "demo", "--scenarios", "dyck-3", "--models", "offline/solver,offline/echo",
                       "--adaptive", "--max-instances", "4", "--storage", str(store_root), timeout=600)
    assert adaptive.returncode == 0, adaptive.stdout + adaptive.stderr
    runs = [json.loads(p.read_text()) for p in store_root.glob("runs/*/run.json")]
    adaptive_runs = [r for r in runs if "-adaptive-" in r["run_id"]]
    assert len(adaptive_runs) == 2
    for r in adaptive_runs:
        steps = pq.read_table(store_root / "runs" / r["run_id"] / "trajectory.parquet").to_pylist()
        assert len(steps) == 4 and all(s["easiness"] == easiness[s["instance_id"]] for s in steps)
        assert steps[0]["instance_id"] == min(chosen, key=lambda i: abs(easiness[i]))  # |z + 0| smallest first


def test_a_board_scenario_with_no_split_is_said_and_gets_no_difficulties(tmp_path):
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file(REPO, REV, "README.md", b"stand-in")
        out = run_cli("fetch-assets", "reeval", "--revision", REV, "--scenarios", "dyck-3",
                      env={"HF_ENDPOINT": hub.url, "HELMFLOW_STORAGE": str(tmp_path / "store")})
    assert out.returncode == 0, out.stderr
    assert f"dyck-3: no split '{SPLIT}' in the table; not asked adaptively from it" in out.stdout
    assert not list((tmp_path / "store").glob("items/*/*/latest.json"))


def test_a_scenario_with_a_declared_instance_id_mapping_matches_by_id_not_prompt(tmp_path, monkeypatch):
    from helmflow import reeval
    from helmflow.plan.compile import prepare

    plan = prepare("demo", scenarios=["dyck-3"], models=["offline/solver"], check_credentials=False)
    pool = sorted(reeval.pool_prompts(plan, plan.scenarios[0]).values())
    rows = [f"HELM's own wording of item {pool[0]}", f"HELM's own wording of item {pool[1]}", "no item of ours"]
    # the declared mapping: HELM's prompt -> our instance id (a wording that differs from ours)
    monkeypatch.setitem(reeval.INSTANCE_ID_MAPS, "dyck_language", lambda p: p.rsplit(" ", 1)[-1])
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file(REPO, REV, SPLIT_PATH.format(split=SPLIT), _parquet(rows, [0.5, -0.5, 2.0]))
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        [m] = reeval.fetch_reeval(Store(str(tmp_path / "store")), plan, REV)
    assert (m.by, m.matched, m.rows, m.pool) == ("instance id", 2, 3, len(set(pool)))
    [latest_path] = (tmp_path / "store").glob("items/*/*/latest.json")
    latest = json.loads(latest_path.read_text())
    stored = pq.read_table(latest_path.parent / f"easiness-{latest['version']}.parquet").to_pylist()
    assert {r["instance_id"]: r["z"] for r in stored} == {pool[0]: 0.5, pool[1]: -0.5}
