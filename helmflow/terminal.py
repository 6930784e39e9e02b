"""The board as a terminal table that fits the terminal (80 columns in CI, pipes and nightly logs).

Names are never cut mid-word: the table tries, in order, full model names as column headers, the
same split after the provider (``offline/`` over ``solver-noisy``), and numbered columns with a
legend of full names below; intervals are dropped before names are shortened. Paths are printed
by the caller with ``soft_wrap`` so a line break never lands inside one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from helmflow.stats import rank_text

if TYPE_CHECKING:
    from helmflow.dryrun import RunEstimate

HEADERS = ("full", "split", "numbered")


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _header(name: str, index: int, mode: str) -> str:
    if mode == "numbered":
        return f"[{index}]"
    if mode == "split" and "/" in name:
        provider, _, model = name.partition("/")
        return f"{escape(provider)}/\n{escape(model)}"
    return escape(name)


def board_table(summary: dict[str, Any], mode: str, with_ci: bool) -> Table:
    """Scenarios down, models across: boards grow in scenarios, and a terminal is taller than wide."""
    rows, labels = summary["table"], summary["scenarios"]
    table = Table(title=escape(f"{summary['board']} — release {summary['release_id']} ({summary['status']})"))
    table.add_column("scenario", no_wrap=True)
    for index, row in enumerate(rows, start=1):
        table.add_column(_header(row["deployment"], index, mode), justify="right", no_wrap=True)
    for lab in labels:
        table.add_row(escape(lab), *[
            "missing" if row[lab] is None
            else f"{_fmt(row[lab])} [{_fmt(row[f'{lab} ci_low'])}, {_fmt(row[f'{lab} ci_high'])}]" if with_ci
            else _fmt(row[lab])
            for row in rows
        ])
    table.add_section()
    table.add_row("[bold]mean score", *[f"[bold]{_fmt(row['mean_score'])}" for row in rows])
    table.add_row("mean win rate", *[_fmt(row["mean_win_rate"]) for row in rows])
    if any(row.get("rank") is not None for row in rows):  # releases published before rank intervals have none
        table.add_row("rank (95%)", *[rank_text(row) for row in rows])
    if any(row.get("mean_ability") is not None for row in rows):  # an adaptive release: rank by ability
        table.add_section()
        table.add_row("[bold]mean ability", *[f"[bold]{_fmt(row.get('mean_ability'))}" for row in rows])
        for lab in labels:
            table.add_row(f"  {escape(lab)} ability", *[
                "missing" if row.get(f"{lab} ability") is None
                else f"{_fmt(row[f'{lab} ability'])} ± {_fmt(row.get(f'{lab} ability_se'))}" if with_ci
                else _fmt(row[f"{lab} ability"]) for row in rows])  # the standard errors where intervals fit
    for group in summary.get("metric_groups", []):  # each metric group: its columns and its own mean win rate
        table.add_section()
        aggregation = group.get("aggregation", ["win_rate"])
        if "win_rate" in aggregation:
            table.add_row(f"[bold]{escape(group['name'])}[/] mean win rate",
                          *[_fmt(row.get(f"{group['name']} mean_win_rate")) for row in rows])
        if "mean" in aggregation:
            table.add_row(f"[bold]{escape(group['name'])}[/] mean",
                          *[_fmt(row.get(f"{group['name']} mean")) for row in rows])
        for key in group["columns"]:
            table.add_row(f"  {escape(key)}", *[_group_cell(row, key) for row in rows])
    return table


def _group_cell(row: dict[str, Any], key: str) -> str:
    """A metric-group cell: its value, ``n/a`` when its metric cannot be computed for the model (the
    reason is printed under the table), or ``missing`` when the run is absent."""
    if row.get(key) is not None:
        return _fmt(row[key])
    return "n/a" if row.get(f"{key} note") else "missing"


def not_available(summary: dict[str, Any]) -> list[str]:
    """One line per ``n/a`` cell: model, column and why (e.g. no logprobs for calibration)."""
    return [f"n/a: {row['deployment']} {key}: {row[f'{key} note']}"
            for group in summary.get("metric_groups", []) for key in group["columns"]
            for row in summary["table"] if row.get(key) is None and row.get(f"{key} note")]


def fitted(console: Console, summary: dict[str, Any]) -> tuple[Table, str, bool]:
    """The first (table, header mode, with intervals) that fits ``console.width``, widest first;
    the narrowest if none does. Intervals are shown for up to 3 models and only if they fit."""
    choices = [(mode, ci) for ci in ((True, False) if len(summary["table"]) <= 3 else (False,)) for mode in HEADERS]
    for mode, ci in choices:
        table = board_table(summary, mode, ci)
        if Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width:
            return table, mode, ci
    return table, mode, ci


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 scenario``, ``8 scenarios``, ``1 perturbed copy``, ``2 perturbed copies``."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def count_line(board: str, scenarios: int, copies: int, models: int, runs: int, dropped: int | None) -> str:
    """The one way every command counts a board's runs: scenarios, their perturbed copies, models, runs.

    ``dropped`` is how many perturbed copies were left out because they change no sampled instance, known
    once the data is read (``helmflow run``); ``None`` before that (``helmflow show``), when the count is an
    upper bound and says so."""
    kept = f" + {plural(copies, 'perturbed copy', 'perturbed copies')}" if copies else ""
    if dropped is None:
        bound = " (at most: a perturbed copy that changes no sampled instance is left out when the data is read)" \
            if copies else ""
        return (f"board {board}: {plural(scenarios, 'scenario')}{kept} x {plural(models, 'model')} = "
                f"{plural(runs, 'run')}{bound}")
    left = f" ({dropped} more left out: they change no sampled instance)" if dropped else ""
    return (f"board {board}: {plural(scenarios, 'scenario')}{kept}{left} x {plural(models, 'model')} = "
            f"{plural(runs, 'run')}")


def print_board(console: Console, summary: dict[str, Any]) -> None:
    table, mode, with_ci = fitted(console, summary)
    console.print(table)
    if mode == "numbered":
        for index, row in enumerate(summary["table"], start=1):
            console.print(f"[{index}] {escape(row['deployment'])}", soft_wrap=True, highlight=False, markup=False)
    for line in not_available(summary):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    if not with_ci:
        console.print("95% intervals: see leaderboard.parquet or `helmflow serve`")



SHORT_VALUE = 24  # a record's values up to this long share one line; longer ones get a line each


def _measure(console: Console, renderable: Any) -> Measurement:
    if isinstance(renderable, str):
        renderable = console.render_str(renderable)
    return Measurement.get(console, console.options.update_width(10_000), renderable)


def _fill(lows: list[int], highs: list[int], room: int) -> list[int] | None:
    """Widths between each column's longest word and its natural width that use at most ``room``: the
    columns nearest to whole are made whole first. None when even the longest words do not fit."""
    widths = list(lows)
    left = room - sum(widths)
    if left < 0:
        return None
    for i in sorted(range(len(lows)), key=lambda i: highs[i] - lows[i]):
        grow = min(highs[i] - widths[i], left)
        widths[i] += grow
        left -= grow
    return widths


def print_table(console: Console, table: Table, names: tuple[int, ...] = (0,)) -> None:
    """``table`` at ``console.width`` with the columns in ``names`` (values a user types: deployments,
    scenarios, boards) never cut or broken. The other columns wrap between words; if even that cannot fit,
    each row is printed as a record (its names on one line, then ``column: value`` lines), so nothing is
    lost at any width."""
    columns = table.columns
    sizes = [[_measure(console, r) for r in (c.header, *c._cells)] for c in columns]
    lows = [max(m.minimum for m in col) for col in sizes]
    highs = [max(m.maximum for m in col) for col in sizes]
    pad = 2 if table.padding else 0
    extra = (len(columns) - 1 + (2 if table.show_edge else 0)) if table.box else 0
    others = [i for i in range(len(columns)) if i not in names]
    room = console.width - extra - pad * len(columns) - sum(highs[i] for i in names)
    widths = _fill([lows[i] for i in others], [highs[i] for i in others], room)
    if widths is not None:
        for i in names:
            columns[i].width, columns[i].no_wrap, columns[i].overflow = highs[i], True, "ignore"
        for i, width in zip(others, widths, strict=True):
            columns[i].width, columns[i].overflow = width, "fold"
        console.print(table)
        return
    if table.title:
        console.print(table.title, soft_wrap=True, highlight=False)
    headers = [console.render_str(c.header).plain if isinstance(c.header, str) else str(c.header) for c in columns]
    for r in range(table.row_count):
        text = [console.render_str(v).plain if isinstance(v, str) else str(v) for v in (c._cells[r] for c in columns)]
        console.print("  ".join(text[i] for i in names if text[i]), soft_wrap=True, markup=False, highlight=False,
                      style="bold")
        short = [f"{headers[i]}: {text[i]}" for i in others if text[i] and len(text[i]) <= SHORT_VALUE]
        if short:
            console.print(Text("  " + " · ".join(short)))
        for i in others:
            if len(text[i]) > SHORT_VALUE:
                console.print(Text(f"  {headers[i]}: {text[i]}"))


def print_estimate(console: Console, rows: list[RunEstimate]) -> None:
    """The dry run's table: requests, tokens and worst-case cost per run, and their total; with a batch
    column (the same requests at the batch price) when a deployment has a batch API."""
    table = Table(title="dry run: nothing sent, nothing written")
    batched = any(r.batch_usd is not None for r in rows)
    columns = ["scenario", "model", "requests", "prompt tokens", "max output tokens", "worst-case $"]
    for col in columns + (["batch $"] if batched else []):
        table.add_column(col, justify="left" if col in ("scenario", "model") else "right", overflow="fold")
    for r in rows:
        extra = [f"{r.batch_usd:.6f}" if r.batch_usd is not None else "-"] if batched else []
        table.add_row(r.scenario, r.deployment, str(r.requests), str(r.prompt_tokens), str(r.max_output_tokens),
                      f"{r.worst_case_usd:.6f}", *extra)
    # the batch total: what the run costs with --batch (deployments without a batch API at their own price)
    batch_total = [f"{sum(r.worst_case_usd if r.batch_usd is None else r.batch_usd for r in rows):.6f}"]
    table.add_row("total", "", str(sum(r.requests for r in rows)), str(sum(r.prompt_tokens for r in rows)),
                  str(sum(r.max_output_tokens for r in rows)), f"{sum(r.worst_case_usd for r in rows):.6f}",
                  *(batch_total if batched else []), style="bold")
    print_table(console, table, names=(0, 1))
