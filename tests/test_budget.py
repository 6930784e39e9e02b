"""``helmflow run --budget-usd``: new priced requests stop before the projected spend passes the
budget, the run says so, and a rerun with a larger budget pays only for what was not yet answered."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

N = 40


def _board(tmp_path, dev_server):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/priced", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url,
         "price_input_per_mtok": 1000.0, "price_output_per_mtok": 3000.0, "max_concurrency": 4},
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "budget", "version": "1", "models": ["dev/priced"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": N}, "label": "arith"}],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(tmp_path / "store")]


def test_budget_stops_before_passing_and_the_rerun_pays_only_the_rest(prefect_server, dev_server, tmp_path):
    args = _board(tmp_path, dev_server)
    first = run_cli(*args, "--budget-usd", "0.5")
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    assert "budget of $0.5 would be passed" in out
    answered = dev_server.stats()["answered"]
    assert 0 < answered < N
    journal = [pq.read_table(p) for p in (tmp_path / "store" / "responses").rglob("*.parquet")]
    spent = sum(sum(t.column("cost_usd").to_pylist()) for t in journal)
    assert sum(t.num_rows for t in journal) == answered and 0 < spent <= 0.5

    dev_server.reset()
    second = run_cli(*args, "--budget-usd", "100")
    assert second.returncode == 0, second.stdout + second.stderr
    assert dev_server.stats()["requests"] == N - answered  # what was paid for is never paid again

    # cost per request (journal), per run (run.json) and per board (the leaderboard row) agree
    store = tmp_path / "store"
    journal = [pq.read_table(p) for p in (store / "responses").rglob("*.parquet")]
    per_request = sum(sum(t.column("cost_usd").to_pylist()) for t in journal)
    [run_json] = [json.loads(p.read_text()) for p in store.glob("runs/*/run.json")]
    latest = json.loads((store / "leaderboards" / "budget" / "latest.json").read_text())  # not the first, partial one
    [board_row] = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    assert per_request > 0.5 and run_json["cost_usd"] == pytest.approx(per_request)
    assert board_row["cost_usd"] == pytest.approx(per_request)


@pytest.mark.parametrize("bad", ["nan", "-1", "inf", "-inf", "ten"])
def test_a_budget_that_cannot_cap_is_bad_input_before_any_work(dev_server, tmp_path, bad):
    """Before: ``nan`` disabled the cap (it compares false) and ``-1`` failed inside the flow."""
    out = run_cli(*_board(tmp_path, dev_server), f"--budget-usd={bad}", timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    [line] = out.stderr.strip().splitlines()[-1:]
    assert "--budget-usd" in line and repr(bad) in line
    assert "Traceback" not in out.stderr and not (tmp_path / "store").exists()
    assert dev_server.requests == 0
