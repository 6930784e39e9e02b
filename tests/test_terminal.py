"""The board in the terminal at 60, 80 and 200 columns (CI, pipes, nightly logs): names whole, lines that fit,
and the same two tables on every board — the scores, then their 95% intervals — whatever the number of models.

Reproduced first: at COLUMNS=80 the demo board printed `offline/so` over `lver` (overflow="fold"); boards of up to
3 models printed intervals and the demo's 4 never did; a board too wide for numbered columns ran past the edge.
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from helmflow.terminal import WHERE, print_board

NAMES = ["offline/solver", "offline/solver-noisy", "offline/first-option", "offline/echo"]
MANY = NAMES + [f"provider-{i}/model-with-a-long-name-{i}" for i in range(8)]
LABELS = ["arithmetic-3", "sr-variable-substitution", "legalbench-international_citizenship_questions"]
WIDTHS = (60, 80, 200)


def _summary(names: list[str], labels: list[str] = LABELS) -> dict:
    rows = []
    for i, n in enumerate(names):
        row = {"deployment": n, "mean_score": 0.5, "mean_win_rate": 0.25}
        for j, lab in enumerate(labels):  # every cell its own interval, so each can be found once
            row |= {lab: 0.8, f"{lab} ci_low": i / 100, f"{lab} ci_high": 0.5 + j / 100}
        rows.append(row)
    return {"board": "demo", "release_id": "2026-11-30-689a962e", "status": "complete", "table": rows,
            "scenarios": labels}


def _printed(width: int, names: list[str], labels: list[str] = LABELS) -> list[str]:
    console = Console(width=width, file=io.StringIO(), force_terminal=False, record=True)
    print_board(console, _summary(names, labels))
    return console.export_text().splitlines()


def whole(name: str, text: str) -> bool:
    """``name`` with nothing glued to it: not cut (``offline/…``), not broken across lines."""
    return re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.-])", text) is not None


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("count", [1, 3, 4, 12])
def test_names_stay_whole_lines_fit_and_every_interval_is_printed(width, count):
    names = MANY[:count]
    lines = _printed(width, names)
    text = "\n".join(lines)
    assert max(map(len, lines)) <= width, text
    assert "…" not in text and [n for n in names + LABELS if not whole(n, text)] == [], text
    for i in range(count):  # each model's interval in each scenario, once: the same rule for 1 model and for 12
        for j in range(len(LABELS)):
            assert text.count(f"{i / 100:.2f}–{0.5 + j / 100:.2f}") == 1, (i, j, text)
    assert " ".join(WHERE.split()) in " ".join(text.split())  # and where the exact ones are


def test_wide_terminal_keeps_full_names_as_headers_and_a_table_of_intervals():
    lines = _printed(200, NAMES)
    header = next(line for line in lines if "scenario" in line)
    assert all(n in header for n in NAMES) and not any(line.startswith("[1]") for line in lines)
    assert any("95% intervals" in line for line in lines)


def test_narrow_terminal_numbers_the_columns_with_a_legend():
    lines = _printed(80, NAMES)
    assert [line for line in lines if line.startswith("[")] == [f"[{i}] {n}" for i, n in enumerate(NAMES, start=1)]


def test_too_many_models_for_numbered_columns_print_records_with_the_legend():
    lines = _printed(60, MANY)
    assert not any("┃" in line for line in lines)  # no table: one would run past the edge
    start = lines.index(LABELS[2])
    assert lines[start + 1].startswith("  [1] 0.800  [2] 0.800")  # a label, then its cells as [n] value
    assert [line for line in lines if re.match(r"\[\d+\] \S+$", line)] == [
        f"[{i}] {n}" for i, n in enumerate(MANY, start=1)]


def test_markup_in_a_name_is_printed_as_text():
    for width in (60, 200):
        text = "\n".join(_printed(width, ["evil/[red]model"]))
        assert "evil/[red]model" in text and "\\[" not in text
