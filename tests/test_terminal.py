"""The board table at 80 columns (CI, pipes, nightly logs): names whole, paths unbroken.

Reproduced first: at COLUMNS=80 the demo board printed `offline/so` over `lver` (overflow="fold").
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from helmflow.terminal import print_board

NAMES = ["offline/solver", "offline/solver-noisy", "offline/first-option", "offline/echo"]
LABELS = ["arithmetic-3", "sr-variable-substitution", "dyck-3"]


def _summary(names: list[str]) -> dict:
    rows = []
    for n in names:
        row = {"deployment": n, "mean_score": 0.5, "mean_win_rate": 0.25}
        for lab in LABELS:
            row |= {lab: 0.8, f"{lab} ci_low": 0.6, f"{lab} ci_high": 1.0}
        rows.append(row)
    return {"board": "demo", "release_id": "2026-11-30-689a962e", "status": "complete", "table": rows, "scenarios": LABELS}


def _printed(width: int, names: list[str]) -> list[str]:
    console = Console(width=width, file=io.StringIO(), force_terminal=False, record=True)
    print_board(console, _summary(names))
    return console.export_text().splitlines()


def _words(lines: list[str]) -> set[str]:
    return {w for line in lines for w in re.split(r"[\s│┃]+", line) if w}


@pytest.mark.parametrize("width", [80, 60, 200])
@pytest.mark.parametrize("count", [2, 4])
def test_names_stay_whole_and_lines_fit(width, count):
    names = NAMES[:count]
    lines = _printed(width, names)
    assert max(map(len, lines)) <= width
    words = _words(lines)
    for name in names:  # whole, or split after its provider (`offline/` over `solver-noisy`)
        provider, model = name.split("/")
        assert name in words or {f"{provider}/", model} <= words, (name, "\n".join(lines))
    assert "…" not in "\n".join(lines) and set(LABELS) <= words


def test_wide_terminal_keeps_full_names_and_intervals():
    lines = _printed(200, NAMES[:3])
    assert set(NAMES[:3]) <= _words(lines) and "[0.600," in "\n".join(lines)


def test_narrow_terminal_numbers_the_columns_with_a_legend():
    lines = _printed(60, NAMES)
    assert [line for line in lines if line.startswith("[")] == [f"[{i}] {n}" for i, n in enumerate(NAMES, start=1)]


def test_markup_in_a_name_is_printed_as_text():
    lines = _printed(200, ["evil/[red]model"])
    assert "evil/[red]model" in "\n".join(lines)
