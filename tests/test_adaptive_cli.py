"""``helmflow run --adaptive`` through the real command: a board whose scenarios have no item
difficulties is refused with one line naming ``helmflow calibrate-items``, exit 2, before any request."""

from __future__ import annotations

import yaml

from tests.support.cli import run_cli


def _board(tmp_path, dev_server) -> list[str]:
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": f"dev/m{k}", "client": "openai-compatible", "model": f"m{k}", "base_url": dev_server.openai_url}
        for k in (1, 2)]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "adaptive-refusal", "version": "1", "models": ["dev/m1", "dev/m2"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": 8}, "label": "arith"}],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(tmp_path / "store")]


def test_an_adaptive_run_without_item_difficulties_exits_2_naming_calibrate_items_before_any_request(
        dev_server, tmp_path):
    out = run_cli(*_board(tmp_path, dev_server), "--adaptive", "--max-instances", "3")
    assert out.returncode == 2, out.stdout + out.stderr
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith("helmflow: error: ") and "arith" in errors[0], errors
    assert f"helmflow calibrate-items {tmp_path / 'board.yaml'}" in errors[0], errors
    assert dev_server.stats()["requests"] == 0
    assert not (tmp_path / "store" / "runs").exists()
