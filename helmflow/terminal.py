"""The board as terminal tables that fit the terminal (80 columns in CI, pipes and nightly logs).

Every board prints the same two tables: its scores, then their 95% intervals (``0.60–1.00``) in a
table of their own, whatever the number of models. A name is never cut or broken across lines: each
table has full model names as column headers if they fit, else numbered columns with a legend of full
names below; when even that is wider than the terminal, its rows are printed as records (a label on
its line, then ``[n] value`` entries, as many to a line as fit).
Paths are printed by the caller with ``soft_wrap`` so a line break never lands inside one.
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

HEADERS = ("full", "numbered")
WHERE = ("95% intervals are rounded to 2 decimals here; leaderboard.parquet has them exact (its ci_low and "
         "ci_high columns), and so does the board page (helmflow serve).")


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _interval(low: Any, high: Any) -> str:
    """``0.60–1.00``: an interval in the width of a number and a half, so it fits where the score does."""
    return "—" if low is None or high is None else f"{low:.2f}–{high:.2f}"


def _header(name: str, index: int, mode: str) -> str:
    if mode == "numbered":
        return f"[{index}]"
    return escape(name)


def _table(title: str, rows: list[dict[str, Any]], mode: str) -> Table:
    table = Table(title=escape(title))
    table.add_column("scenario", no_wrap=True)
    for index, row in enumerate(rows, start=1):
        table.add_column(_header(row["deployment"], index, mode), justify="right", no_wrap=True)
    return table


def board_lines(summary: dict[str, Any]) -> list[tuple[str, list[str], bool]]:
    """The board's rows as (label, one cell per model, starts a section): scores, means, ranks, abilities
    and metric groups. The terminal table and the record layout print the same rows."""
    rows, labels = summary["table"], summary["scenarios"]
    out: list[tuple[str, list[str], bool]] = []
    for lab in labels:
        out.append((escape(lab), ["missing" if row[lab] is None else _fmt(row[lab]) for row in rows], False))
    out.append(("[bold]mean score", [f"[bold]{_fmt(row['mean_score'])}" for row in rows], True))
    out.append(("mean win rate", [_fmt(row["mean_win_rate"]) for row in rows], False))
    if any(row.get("rank") is not None for row in rows):  # releases published before rank intervals have none
        out.append(("rank (95%)", [rank_text(row) for row in rows], False))
    if any(row.get("mean_ability") is not None for row in rows):  # an adaptive release: rank by ability
        out.append(("[bold]mean ability", [f"[bold]{_fmt(row.get('mean_ability'))}" for row in rows], True))
        for lab in labels:
            out.append((f"  {escape(lab)} ability", ["missing" if row.get(f"{lab} ability") is None
                                                     else _fmt(row[f"{lab} ability"]) for row in rows], False))
    for group in summary.get("metric_groups", []):  # each metric group: its columns and its own mean win rate
        aggregation = group.get("aggregation", ["win_rate"])
        first = True
        if "win_rate" in aggregation:
            out.append((f"[bold]{escape(group['name'])}[/] mean win rate",
                        [_fmt(row.get(f"{group['name']} mean_win_rate")) for row in rows], first))
            first = False
        if "mean" in aggregation:
            out.append((f"[bold]{escape(group['name'])}[/] mean",
                        [_fmt(row.get(f"{group['name']} mean")) for row in rows], first))
            first = False
        for key in group["columns"]:
            out.append((f"  {escape(key)}", [_group_cell(row, key) for row in rows], first))
            first = False
    return out


def interval_lines(summary: dict[str, Any]) -> list[tuple[str, list[str], bool]]:
    """Each scenario's 95% interval of its main score per model (an adaptive release adds each ability's
    standard error): what every board prints under its scores, whatever its size."""
    rows, labels = summary["table"], summary["scenarios"]
    out = [(escape(lab), ["missing" if row[lab] is None
                          else _interval(row.get(f"{lab} ci_low"), row.get(f"{lab} ci_high")) for row in rows], False)
           for lab in labels]
    if any(row.get("mean_ability") is not None for row in rows):
        for i, lab in enumerate(labels):
            out.append((f"  {escape(lab)} ability ± SE", [
                "missing" if row.get(f"{lab} ability") is None
                else "—" if row.get(f"{lab} ability_se") is None else f"±{row[f'{lab} ability_se']:.2f}"
                for row in rows], i == 0))
    return out


def _fill_table(table: Table, lines: list[tuple[str, list[str], bool]]) -> Table:
    for label, cells, section in lines:
        if section:
            table.add_section()
        table.add_row(label, *cells)
    return table


def board_table(summary: dict[str, Any], mode: str) -> Table:
    """Scenarios down, models across: boards grow in scenarios, and a terminal is taller than wide."""
    title = f"{summary['board']} — release {summary['release_id']} ({summary['status']})"
    return _fill_table(_table(title, summary["table"], mode), board_lines(summary))


def interval_table(summary: dict[str, Any], mode: str) -> Table:
    return _fill_table(_table("95% intervals", summary["table"], mode), interval_lines(summary))


def _fits(console: Console, table: Table) -> bool:
    return Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width


def fitted(console: Console, build: Any, summary: dict[str, Any]) -> tuple[Table | None, str | None]:
    """The first (table, header mode) that fits ``console.width``: full model names as headers, else
    numbered; (None, None) when even numbered columns do not fit (then the rows are printed as records)."""
    for mode in HEADERS:
        table = build(summary, mode)
        if _fits(console, table):
            return table, mode
    return None, None


def _print_records(console: Console, title: str, lines: list[tuple[str, list[str], bool]]) -> None:
    """A table too wide for any header mode, as records: each row's label on a line of its own, then its
    cells as ``[n] value`` (``n`` from the legend of model names), as many to a line as fit and never one
    split across two."""
    console.print(escape(title), soft_wrap=True, highlight=False)
    for label, cells, _ in lines:
        console.print(label, soft_wrap=True, highlight=False)
        indent = "  " + " " * (len(label) - len(label.lstrip()))
        entries = [Text(f"[{i}] ") + Text.from_markup(cell) for i, cell in enumerate(cells, start=1)]
        line = Text("")
        for entry in entries:
            if line.plain and len(indent) + len(line.plain) + 2 + len(entry.plain) > console.width:
                console.print(Text(indent) + line, soft_wrap=True, highlight=False)
                line = Text("")
            line = line + Text("  ") + entry if line.plain else entry
        if line.plain:
            console.print(Text(indent) + line, soft_wrap=True, highlight=False)


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
    """The board's scores, then their 95% intervals in a table of their own, on every board and at every
    width; each table in the first header mode that fits, as records when none does. Numbered headers and
    records are explained by a legend of full names under both tables."""
    title = f"{summary['board']} — release {summary['release_id']} ({summary['status']})"
    legend = False
    for build, lines, name in ((board_table, board_lines, title), (interval_table, interval_lines, "95% intervals")):
        table, mode = fitted(console, build, summary)
        if table is None:
            _print_records(console, name, lines(summary))
        else:
            console.print(table)
        legend = legend or mode != "full"
    if legend:
        for index, row in enumerate(summary["table"], start=1):
            console.print(f"[{index}] {row['deployment']}", soft_wrap=True, highlight=False, markup=False)
    for line in not_available(summary):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    console.print(WHERE, highlight=False, markup=False)


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
