"""A name a user types (a deployment, a scenario label, a board) is printed whole in every table, at any width:
tables whose names and longest words fit keep their layout, the rest print each row as a record."""

from __future__ import annotations

import re

import pytest

from helmflow.cli import main
from helmflow.clients import load_deployments
from helmflow.plan.spec import board_names, load_board
from tests.support.demo import build_demo

pytestmark = pytest.mark.slow  # its fixtures run a board through Prefect

WIDTHS = (60, 80, 200)


def whole(name: str, out: str) -> bool:
    """``name`` appears with nothing glued to it: not cut (``offline/…``), not broken across lines."""
    return re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.-])", out) is not None


def run(capsys, monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    assert out.strip()
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_list_models_prints_every_deployment_whole(capsys, monkeypatch, width):
    out = run(capsys, monkeypatch, width, "list", "models")
    names = list(load_deployments(None))
    assert names and [n for n in names if not whole(n, out)] == []
    assert max(len(line) for line in out.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_list_boards_and_scenarios_print_names_whole(capsys, monkeypatch, width):
    out = run(capsys, monkeypatch, width, "list", "boards")
    assert [b for b in board_names() if not whole(b, out)] == []
    from helmflow.scenarios import SCENARIOS

    out = run(capsys, monkeypatch, width, "list", "scenarios")
    assert [s for s in SCENARIOS.names() if not whole(s, out)] == []


@pytest.mark.parametrize("width", WIDTHS)
def test_show_and_dry_run_print_labels_and_models_whole(capsys, monkeypatch, width):
    board = load_board("demo")
    labels = [s.label for s in board.scenarios]
    out = run(capsys, monkeypatch, width, "show", "demo")
    assert [x for x in labels + board.models if not whole(x, out)] == []
    out = run(capsys, monkeypatch, width, "run", "demo", "--dry-run")
    assert [x for x in labels + board.models if not whole(x, out)] == []
    assert max(len(line) for line in out.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_check_prints_every_deployment_whole(capsys, monkeypatch, width):
    names = ["offline/solver", "offline/solver-noisy", "offline/first-option"]
    out = run(capsys, monkeypatch, width, "check", "--models", ",".join(names))
    assert [n for n in names if not whole(n, out)] == [] and max(len(line) for line in out.splitlines()) <= width


def test_a_wide_terminal_keeps_the_table_and_a_narrow_one_gets_records(capsys, monkeypatch):
    wide = run(capsys, monkeypatch, 200, "list", "models")
    narrow = run(capsys, monkeypatch, 60, "list", "models")
    assert "┃ deployment" in wide and "client: offline" not in wide
    assert "┃" not in narrow and "client: offline" in narrow


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The demo's first two scenarios x its four models, published with the pipeline's own stages."""
    root = tmp_path_factory.mktemp("board-widths") / "store"
    store, release_id = build_demo(str(root), max_instances=3, models=4)
    return store, release_id


@pytest.mark.parametrize("width", WIDTHS)
def test_the_board_prints_names_whole_and_every_interval(published, capsys, monkeypatch, width):
    """``helmflow run`` of a published release prints the board as a flow run does: every label and model
    whole, the lines within the width, and each cell's 95% interval whatever the width."""
    store, release_id = published
    board = load_board("demo")
    labels = [s.label for s in board.scenarios[:2]]
    out = run(capsys, monkeypatch, width, "run", "demo", "--scenarios", ",".join(labels), "--models",
              ",".join(board.models), "--max-instances", "3", "--storage", store.root)
    assert "no Prefect flow run was started" in out and release_id in out
    lines = out.splitlines()
    block = lines[next(i for i, ln in enumerate(lines) if f"release {release_id}" in ln):
                  next(i for i, ln in enumerate(lines) if ln.startswith("release:"))]
    text = "\n".join(block)
    assert [x for x in labels + board.models if not whole(x, text)] == [], text
    assert max(len(line) for line in block) <= width, text
    rows = store.read_parquet(f"leaderboards/demo/{release_id}/leaderboard.parquet").to_pylist()
    intervals = [f"{r[f'{lab} ci_low']:.2f}–{r[f'{lab} ci_high']:.2f}" for r in rows for lab in labels]
    assert len(rows) == 4 and sorted(re.findall(r"\d\.\d\d–\d\.\d\d", text)) == sorted(intervals), text
    assert "leaderboard.parquet has them exact" in " ".join(text.split())
