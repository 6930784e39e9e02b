"""Batch mode end to end: a board run with ``--batch`` through the CLI, Prefect, the real openai and anthropic
SDKs (Files + Batches, Message Batches) and the dev server, counted at the server: the same leaderboard as
real-time at half the published cost, every request in exactly one batch line across SIGKILLs, and an expired
batch's finished lines kept while only the rest are resubmitted."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.paid_board import run_cli_text, start_cli

pytestmark = pytest.mark.slow

SCENARIOS, PER_SCENARIO = 2, 50  # x 2 deployments: 200 requests
PRICES = {"price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0}
ENV = {"HELMFLOW_BATCH_KEY": "sk-batch-test"}


def wait_s(base: float = 240.0) -> float:
    """How long a CLI run may take to submit and poll its batches: ``base`` seconds, longer on a loaded machine."""
    return base * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def board_args(tmp_path: Path, openai_server, anthropic_server, store: str = "store", scenarios: int = SCENARIOS,
               per_scenario: int = PER_SCENARIO, **deployment) -> list[str]:
    key = {"api_key_env": "HELMFLOW_BATCH_KEY", "batch_poll_s": 0.1, **PRICES, **deployment}
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/gpt", "client": "openai", "model": "gpt-dev", "base_url": openai_server.openai_url, **key},
        {"name": "dev/claude", "client": "anthropic", "model": "claude-dev", "base_url": anthropic_server.url,
         "context_window": 200000, **key},
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "batched", "version": "1", "models": ["dev/gpt", "dev/claude"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": per_scenario, "seed": k},
                       "label": f"arith-{k}"} for k in range(scenarios)],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(tmp_path / store)]


def leaderboard(root: Path) -> list[dict]:
    latest = json.loads((root / "leaderboards/batched/latest.json").read_text())
    rows = pq.read_table(root / f"leaderboards/batched/{latest['release_id']}/leaderboard.parquet").to_pylist()
    return sorted(rows, key=lambda r: r["deployment"])


def run_costs(root: Path) -> dict[str, float]:
    costs: dict[str, float] = {}
    for run_json in root.glob("runs/*/run.json"):
        name = json.loads(run_json.read_text())["deployment"]["name"]
        table = pq.read_table(run_json.parent / "completions.parquet", columns=["cost_usd"])
        costs[name] = costs.get(name, 0.0) + sum(table.column("cost_usd").to_pylist())
    return costs


def task_runs(state_name: str | None = None, ids: set[str] | None = None, since: datetime | None = None) -> list:
    """Task runs as the Prefect API has them: in a state named ``state_name``, of ``ids``, started after ``since``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        TaskRunFilter,
        TaskRunFilterId,
        TaskRunFilterStartTime,
        TaskRunFilterState,
        TaskRunFilterStateName,
    )

    wanted = TaskRunFilter(
        state=TaskRunFilterState(name=TaskRunFilterStateName(any_=[state_name])) if state_name else None,
        id=TaskRunFilterId(any_=sorted(ids)) if ids else None,
        start_time=TaskRunFilterStartTime(after_=since) if since else None)
    with get_client(sync_client=True) as client:
        return client.read_task_runs(task_run_filter=wanted)


def state_names(task_run_id: str) -> list[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        states = client.read_task_run_states(task_run_id)
    return [s.name for s in sorted(states, key=lambda s: s.timestamp)]


def test_a_batched_board_matches_real_time_at_half_the_cost(prefect_server, dev_server, tmp_path):
    realtime, batched = dev_server.scoped("realtime-" + dev_server.scope), dev_server.scoped("batch-" + dev_server.scope)
    batched.configure(batch_delay_s=1.0)  # each batch is still running at its first poll
    total = SCENARIOS * PER_SCENARIO
    done = run_cli_text(*board_args(tmp_path, realtime, realtime, "rt"), env=ENV)
    assert done.returncode == 0, done.stdout
    done = run_cli_text(*board_args(tmp_path, batched, batched, "batch"), "--batch", env=ENV)
    assert done.returncode == 0, done.stdout
    rt, b = realtime.stats(), batched.stats()
    assert rt["requests"] == 2 * total and rt["batches"] == 0
    # nothing real-time, every request in exactly one batch line, each line answered once
    assert b["requests"] == 0 and b["by_endpoint"].get("chat", 0) == 0 and b["by_endpoint"].get("messages", 0) == 0
    assert b["batch_lines"] == b["batch_line_ids"] == b["batch_answered"] == 2 * total
    assert b["batch_line_repeats"] == 0
    assert b["batches"] == 2 * SCENARIOS  # one per pair: 100-request chunks are far below either provider's limit
    # the same leaderboard (scores and tokens); the cost column halved
    rows_rt, rows_b = leaderboard(tmp_path / "rt"), leaderboard(tmp_path / "batch")
    assert [r["deployment"] for r in rows_b] == ["dev/claude", "dev/gpt"]
    for a, c in zip(rows_rt, rows_b, strict=True):
        assert {k: v for k, v in a.items() if k != "cost_usd"} == {k: v for k, v in c.items() if k != "cost_usd"}
        assert a["cost_usd"] > 0 and c["cost_usd"] == pytest.approx(0.5 * a["cost_usd"], rel=1e-9)
    costs_rt, costs_b = run_costs(tmp_path / "rt"), run_costs(tmp_path / "batch")
    for name, usd in costs_rt.items():
        assert costs_b[name] == pytest.approx(0.5 * usd, rel=1e-9)
    # the batch records in storage: ids and hashes, every one ended
    records = [json.loads(p.read_text()) for p in (tmp_path / "batch/batches").rglob("*.json")]
    assert len(records) == 2 * SCENARIOS and all(r["state"] == "ended" for r in records)
    assert sum(len(r["hashes"]) for r in records) == 2 * total
    print(f"real-time ${sum(costs_rt.values()):.6f}, batch ${sum(costs_b.values()):.6f}")
    # each cell's wait is a progress artifact of its query task run in Prefect, at 100% once collected
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterType

    lineage = [json.loads(p.read_text())["lineage"] for p in (tmp_path / "batch").glob("runs/*/run.json")]
    with get_client(sync_client=True) as client:
        bars = client.read_artifacts(artifact_filter=ArtifactFilter(type=ArtifactFilterType(any_=["progress"])))
    bars = [a for a in bars if str(a.task_run_id) in {run["query_task_run_id"] for run in lineage}]
    assert len(bars) == 2 * SCENARIOS and all(a.data == 100.0 for a in bars), bars
    assert {a.description.split(":")[0] for a in bars} == {"dev/gpt", "dev/claude"}
    assert all(f"{PER_SCENARIO} of {PER_SCENARIO} batched request(s) done" in a.description for a in bars)
    # and while it waited, its task run was in a Running state named AwaitingBatch, then Running again, then done
    queried = {run["query_task_run_id"] for run in lineage}
    deadline = time.monotonic() + 60  # Prefect records task run states from events, a moment later
    while (histories := [state_names(t) for t in queried]) and not all(h[-1:] == ["Completed"] for h in histories):
        assert time.monotonic() < deadline, histories
        time.sleep(0.2)
    for history in histories:
        assert history[history.index("AwaitingBatch") - 1:] == ["Running", "AwaitingBatch", "Running", "Completed"]


def test_sigkill_while_batches_run_then_rerun_pays_each_request_once(prefect_server, dev_server, tmp_path):
    """Three SIGKILLs while batches are pending; the rerun polls the recorded batches and submits nothing twice."""
    total = 2 * SCENARIOS * PER_SCENARIO
    args = board_args(tmp_path, dev_server, dev_server)
    dev_server.configure(batch_delay_s=3600)  # batches stay pending until told otherwise
    for _ in range(3):
        before = batch_calls(dev_server)
        proc = start_cli([*args, "--batch"], env=ENV)
        deadline = time.monotonic() + wait_s()
        # the first run submits every batch; each run polls every batch (a retrieve each) before it is killed
        while dev_server.stats()["batches"] < 2 * SCENARIOS or batch_calls(dev_server) < before + 4 * SCENARIOS:
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "no batches polled"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stats = dev_server.stats()
        assert stats["batches"] == 2 * SCENARIOS and stats["batch_lines"] == total, stats
        records = [json.loads(p.read_text()) for p in (tmp_path / "store/batches").rglob("*.json")]
        assert len(records) == 2 * SCENARIOS and all(r["state"] == "live" for r in records)
    dev_server.configure(batch_delay_s=0)
    done = run_cli_text(*args, "--batch", env=ENV)
    assert done.returncode == 0, done.stdout
    final = dev_server.stats()
    assert final["requests"] == 0  # nothing went real-time
    assert final["batches"] == 2 * SCENARIOS
    assert final["batch_lines"] == final["batch_line_ids"] == final["batch_answered"] == total
    assert final["batch_line_repeats"] == 0 and final["batch_answered_repeats"] == 0
    assert sum(r["missing"] for r in leaderboard(tmp_path / "store")) == 0


def batch_calls(server) -> int:
    calls = server.stats()["by_endpoint"]
    return calls.get("batches", 0) + calls.get("message_batches", 0) + calls.get("files", 0)


def test_ctrl_c_leaves_the_batches_running_and_the_rerun_collects_them(prefect_server, dev_server, tmp_path):
    total = 2 * SCENARIOS * PER_SCENARIO
    args = board_args(tmp_path, dev_server, dev_server)
    dev_server.configure(batch_delay_s=3600)
    proc = start_cli([*args, "--batch"], env=ENV, fresh=True)  # SIGINT below: a new interpreter's own handling
    deadline = time.monotonic() + wait_s()
    while dev_server.stats()["batches"] < 2 * SCENARIOS or batch_calls(dev_server) < 8 * SCENARIOS:
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no batches polled"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    started = time.monotonic()
    out = proc.communicate(timeout=120)[0]
    print(f"exit {proc.returncode} {time.monotonic() - started:.1f} s after SIGINT")
    assert proc.returncode == 130, out
    assert "Traceback" not in out, out
    assert f"{2 * SCENARIOS} provider batch(es) keep running" in out and "run the same command again" in out, out
    stats = dev_server.stats()
    assert stats["batches"] == 2 * SCENARIOS and stats["batch_answered"] == 0  # nothing cancelled, nothing new
    records = [json.loads(p.read_text()) for p in (tmp_path / "store/batches").rglob("*.json")]
    assert len(records) == 2 * SCENARIOS and all(r["state"] == "live" for r in records)
    # `batches list` names each; `batches cancel --batch ID` stops one at the provider, an unknown id is one line
    store = ["--storage", str(tmp_path / "store")]
    listed = run_cli_text("batches", "list", *store, env=ENV)
    assert listed.returncode == 0 and all(r["batch_id"] in listed.stdout for r in records), listed.stdout
    assert f"{2 * SCENARIOS} batch(es) running" in listed.stdout
    wrong = run_cli_text("batches", "cancel", "--batch", "batch_nope", *store, env=ENV)
    assert wrong.returncode == 2 and wrong.stdout.strip().count("\n") == 0 and "batch_nope" in wrong.stdout
    gone = next(r for r in records if r["deployment"] == "dev/gpt")
    cancelled = run_cli_text("batches", "cancel", "--batch", gone["batch_id"], "--models-file",
                             str(tmp_path / "models.yaml"), *store, env=ENV)
    assert cancelled.returncode == 0 and "1 of 1 batch(es) cancelled" in cancelled.stdout, cancelled.stdout
    # the provider bills a cancelled batch for the lines it finished: the dev server's first half
    assert dev_server.stats()["batch_answered"] == len(gone["hashes"]) // 2
    dev_server.configure(batch_delay_s=0)
    done = run_cli_text(*args, "--batch", env=ENV)
    assert done.returncode == 0, done.stdout
    final = dev_server.stats()
    # the cancelled batch finished its first half (the dev server's batch_done_fraction): the rerun kept those and
    # sent the other half once more, in one new batch; the three others were collected whole
    unfinished = len(gone["hashes"]) // 2
    assert final["batches"] == 2 * SCENARIOS + 1 and final["batch_line_repeats"] == unfinished
    assert final["batch_lines"] == total + unfinished and final["batch_answered"] == total
    assert final["batch_answered_repeats"] == 0 and final["requests"] == 0
    assert "no provider batch" in run_cli_text("batches", "list", *store, env=ENV).stdout


def test_cancel_batches_on_ctrl_c_cancels_them_and_the_rerun_sends_only_what_they_did_not_finish(
        prefect_server, dev_server, tmp_path):
    """``--cancel-batches``: Ctrl-C cancels the pending batches (while each cell's task run is AwaitingBatch in
    Prefect); the provider bills their finished lines, and the rerun keeps those and sends the rest once."""
    per = 10
    args = board_args(tmp_path, dev_server, dev_server, scenarios=1, per_scenario=per)
    dev_server.configure(batch_delay_s=3600)
    since = datetime.now(UTC)
    proc = start_cli([*args, "--batch", "--cancel-batches"], env=ENV, fresh=True)  # SIGINT below
    deadline = time.monotonic() + wait_s()
    while len(waiting := task_runs("AwaitingBatch", since=since)) < 2:  # both cells wait on their batch
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no task run is awaiting its batch"
        time.sleep(0.1)
    assert all(t.state.type.value == "RUNNING" and "provider batch" in (t.state.message or "") for t in waiting)
    assert {t.name for t in waiting} == {"run arith-0 x dev/gpt", "run arith-0 x dev/claude"}
    assert dev_server.stats()["batch_answered"] == 0
    os.kill(proc.pid, signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130 and "Traceback" not in out, out
    assert "--cancel-batches: cancelled 2 provider batch(es)" in out and "keep running" not in out, out
    stats = dev_server.stats()
    assert stats["batches"] == 2 and stats["batch_answered"] == per  # half of each, as the dev server cancels
    records = [json.loads(p.read_text()) for p in (tmp_path / "store/batches").rglob("*.json")]
    assert len(records) == 2 and all(r["state"] == "live" for r in records)  # the rerun collects them
    dev_server.configure(batch_delay_s=0)
    done = run_cli_text(*args, "--batch", env=ENV)
    assert done.returncode == 0, done.stdout
    final = dev_server.stats()
    assert final["batches"] == 4 and final["batch_lines"] == 3 * per and final["batch_line_repeats"] == per
    assert final["batch_answered"] == 2 * per and final["batch_answered_repeats"] == 0 and final["requests"] == 0


def test_a_five_shot_board_on_a_prompt_cache_deployment_reads_the_cache_and_publishes_a_lower_cost(
        prefect_server, dev_server, tmp_path):
    """The same 5-shot board through the CLI on two Anthropic deployments, one with prompt_cache: the cached one's
    completions record the cache reads the server counted, and its leaderboard has the same scores at a lower cost."""
    prices = {"price_input_per_mtok": 3.0, "price_output_per_mtok": 15.0, "price_cached_input_per_mtok": 0.3,
              "price_cache_write_per_mtok": 3.75}
    results = {}
    for label, cache in (("plain", False), ("cached", True)):
        server = dev_server.scoped(f"{label}-{dev_server.scope}")
        server.configure(anthropic_cache="explicit")  # as Anthropic: only a prefix marked cache_control is cached
        work = tmp_path / label
        work.mkdir()
        models = work / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [
            {"name": "dev/claude", "client": "anthropic", "model": "claude-dev", "base_url": server.url,
             "api_key_env": "HELMFLOW_BATCH_KEY", "max_concurrency": 2, "prompt_cache": cache, **prices}]}))
        board = work / "board.yaml"
        board.write_text(yaml.safe_dump({
            "name": "batched", "version": "1", "models": ["dev/claude"],
            "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": 20, "seed": 1},
                           "label": "arith-5shot", "adapter": {"max_train_instances": 5}}]}))
        done = run_cli_text("run", "--board-file", str(board), "--models-file", str(models), "--storage",
                            str(work / "store"), env=ENV)
        assert done.returncode == 0, done.stdout
        (run_json,) = (work / "store").glob("runs/*/run.json")
        completions = pq.read_table(run_json.parent / "completions.parquet").to_pylist()
        results[label] = (server.stats()["usage"], completions, leaderboard(work / "store"))
    (plain_usage, plain, (plain_row,)), (usage, cached, (cached_row,)) = results["plain"], results["cached"]
    assert plain_usage.get("cached_tokens", 0) == 0 and all(c["cached_tokens"] == 0 for c in plain)
    # the server wrote the shared 5-shot head once or twice (two requests at once) and read it for the rest
    assert usage["cached_tokens"] > 0 and sum(c["cached_tokens"] for c in cached) == usage["cached_tokens"]
    assert sum(c["prompt_tokens"] for c in cached) == sum(c["prompt_tokens"] for c in plain)
    assert sum(c["cached_tokens"] > 0 for c in cached) >= len(cached) - 2
    assert {k: v for k, v in plain_row.items() if k != "cost_usd"} == \
        {k: v for k, v in cached_row.items() if k != "cost_usd"}
    assert 0 < cached_row["cost_usd"] < plain_row["cost_usd"]
    assert cached_row["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in cached), rel=1e-9)
    print(f"5-shot board: ${plain_row['cost_usd']:.6f} without the prompt cache, ${cached_row['cost_usd']:.6f} with it "
          f"({usage['cached_tokens']} prompt tokens read from the cache)")
