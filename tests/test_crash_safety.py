"""Crash safety, counted at the server: a killed, interrupted or concurrent `helmflow run` never
pays twice for a request it finished (the dev server keeps the sha256 of every request body, so a
re-sent request shows up as a repeat)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.slow

SCENARIOS, PER_SCENARIO, CONCURRENCY = 4, 100, 4


def board_args(tmp_path: Path, dev_server, scenarios: int = SCENARIOS, per_scenario: int = PER_SCENARIO,
               **deployment) -> list[str]:
    """A board of ``scenarios`` arithmetic scenarios x one dev-server deployment: as many query
    tasks of one deployment as scenarios, in parallel, as a real board has."""
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/paid", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url,
         "max_concurrency": CONCURRENCY, "retry": {"attempts": 4, "base_s": 0.05, "cap_s": 0.5, "timeout_s": 30},
         **deployment},
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "paid", "version": "1", "models": ["dev/paid"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": per_scenario, "seed": k},
                       "label": f"arith-{k}"} for k in range(scenarios)],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(tmp_path / "store")]


def start_cli(args: list[str], env: dict[str, str] | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "helmflow.cli", *args], cwd=str(REPO),
                            env=dict(os.environ, COLUMNS="200", **(env or {})),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def wait_for_requests(dev_server, at_least: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while dev_server.stats()["requests"] < at_least:
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {at_least} requests: {proc.stdout.read()}")
        assert time.monotonic() < deadline, f"fewer than {at_least} requests within {timeout} s"
        time.sleep(0.05)


def journaled(store: Path, spool: Path) -> set[str]:
    """Request hashes the journal holds: parts in storage plus rows still in spool files."""
    import pyarrow.parquet as pq

    found = set()
    for part in (store / "responses").rglob("part-*.parquet"):
        found.update(pq.read_table(part, columns=["request_hash"]).column("request_hash").to_pylist())
    for path in spool.rglob("spool-*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                found.add(json.loads(line)["request_hash"])
            except ValueError:
                pass  # a torn last line
    return found


def test_sigkill_loop_resends_at_most_what_was_in_flight(prefect_server, dev_server, tmp_path):
    """Kill `helmflow run` four times at different points, then let it finish: every request is
    paid once, plus at most the requests in flight at each kill (sent, not yet journaled)."""
    total = SCENARIOS * PER_SCENARIO
    args = board_args(tmp_path, dev_server)
    spool = Path(os.environ["HELMFLOW_SPOOL"])
    dev_server.configure(latency_ms=40)
    kills = []
    for k in range(4):
        proc = start_cli(args)
        wait_for_requests(dev_server, dev_server.stats()["requests"] + 25 + 40 * k, proc)
        os.kill(proc.pid, signal.SIGSTOP)  # frozen: nothing new starts while the server is asked
        at_kill = dev_server.stats()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # not journaled = sent, and neither in storage nor in a spool: what the next run may re-send
        unjournaled = at_kill["unique"] - len(journaled(tmp_path / "store", spool))
        kills.append({"repeats": at_kill["repeats"], "unjournaled": unjournaled, "at_server": at_kill["in_flight"]})
    proc = start_cli(args)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out
    final = dev_server.stats()
    assert final["unique"] == total
    # what kill k costs is re-sent by the run after it (up to the next kill, or the end)
    after = [k["repeats"] for k in kills[1:]] + [final["repeats"]]
    per_kill = [(a - k["repeats"], k["unjournaled"], k["at_server"]) for a, k in zip(after, kills, strict=True)]
    print("per kill (re-sent, not journaled at the kill, in flight at the server):", per_kill)
    for resent, unjournaled, _ in per_kill:
        assert resent <= unjournaled <= 2 * CONCURRENCY, per_kill
