"""``helmflow compare`` and ``helmflow diff``: two models of a release, or a board's two releases, cell
by cell with paired intervals (the work in :mod:`helmflow.compare`; nothing is queried)."""

from __future__ import annotations

import argparse
from typing import Any

from helmflow.cli.options import storage_arg

PAGE_SIZE = 20  # the run page's instances per page (helmflow.web.pages.PAGE_SIZE)


def add_parser(sub: argparse._SubParsersAction) -> None:
    cmp = sub.add_parser("compare", help="two models of a release, cell by cell: paired intervals and McNemar",
                         description="For each scenario of the release: the difference of the main metric between "
                                     "models A and B on the instances both were scored on, with its 95%% paired "
                                     "bootstrap interval, and McNemar's exact test when the metric is 0/1. Reads the "
                                     "runs' stored per-instance stats (nothing is queried) and writes the table to "
                                     "the release's comparisons/<A>__<B>.parquet.")
    cmp.add_argument("board")
    cmp.add_argument("a", metavar="A", help="a deployment of the release")
    cmp.add_argument("b", metavar="B", help="another deployment of the release")
    cmp.add_argument("--release", help="release id (default: the one the board's latest pointer names)")
    storage_arg(cmp)
    cmp.set_defaults(func=cmd_compare)

    diff = sub.add_parser("diff", help="what changed between two releases of a board, and is it significant",
                          description="Per cell: the score change with its 95%% paired interval on the instances both "
                                      "releases' runs scored, the instances that flipped (with the run-page row of "
                                      "each answer) and which versions moved (data, prompt, model, metric). Cells "
                                      "sort by significance.")
    diff.add_argument("board")
    diff.add_argument("--from", dest="from_release", metavar="R1",
                      help="the older release (default: the release before --to, of the same kind)")
    diff.add_argument("--to", dest="to_release", metavar="R2",
                      help="the newer release (default: the one the board's latest pointer names)")
    diff.add_argument("--all", action="store_true", help="also list the cells that are the same run in both")
    diff.add_argument("--flips", type=int, default=5, metavar="N",
                      help="flipped instances listed per cell (default 5; 0: none)")
    storage_arg(diff)
    diff.set_defaults(func=cmd_diff)
    add_agreement_parser(sub)


def add_agreement_parser(sub: argparse._SubParsersAction) -> None:
    agr = sub.add_parser("agreement", help="how far the judges of each juried cell agree (and with human labels)",
                         description="For every juried cell of the release: each judge's mean score, Krippendorff's "
                                     "alpha across the jury, Cohen's kappa for a jury of two, the share of instances "
                                     "whose scores are more than one point apart, and with --human-labels the "
                                     "agreement of each judge and of the jury with them. Writes the release's "
                                     "agreement.parquet, which the report shows beside the juried columns.")
    agr.add_argument("board")
    agr.add_argument("--release", help="release id (default: the one the board's latest pointer names)")
    agr.add_argument("--human-labels", metavar="CSV",
                     help="a CSV with instance_id and score columns (the judges' scale): a labelled sample")
    agr.add_argument("--scenario", metavar="LABEL",
                     help="the juried column the human labels belong to (default: every column whose instance "
                          "ids they name)")
    storage_arg(agr)
    agr.set_defaults(func=cmd_agreement)


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _interval(row: dict[str, Any]) -> str:
    if row.get("delta") is None:
        return "—"
    return f"{_fmt(row['delta'], True)} [{_fmt(row['ci_low'], True)}, {_fmt(row['ci_high'], True)}]"


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from helmflow import compare
    from helmflow.storage import Store
    from helmflow.terminal import print_table

    store = Store(args.storage)
    release = compare.load_release(store, args.board, args.release)
    rows = compare.compare_models(store, release, args.a, args.b)
    key = compare.write_comparison(store, release, args.a, args.b, rows)
    console = Console()
    table = Table("scenario", "metric", "n", "A", "B", "A − B [95% CI]", "McNemar p (A only / B only)", "verdict",
                  title=escape(f"{release.board} {release.release_id}: A = {args.a}, B = {args.b}"))
    for r in rows:
        if r.get("note"):
            table.add_row(escape(r["scenario"]), escape(r["metric"] or ""), "0", "—", "—", "—", "—",
                          escape(r["note"]))
            continue
        mcnemar = f"{r['p_value']:.3g} ({r['a_only']} / {r['b_only']})" if r["binary"] else "— (not 0/1)"
        verdict = ("A better" if r["ci_low"] > 0 else "B better") if r["significant"] else "not separable"
        table.add_row(escape(r["scenario"]), escape(r["metric"]), str(r["n"]), _fmt(r["mean_a"]), _fmt(r["mean_b"]),
                      _interval(r), mcnemar, verdict)
    print_table(console, table)
    console.print(f"wrote {store.url(key)}", soft_wrap=True, markup=False, highlight=False)
    return 0


def answer_link(board: str, release_id: str, run_id: str, row: int | None) -> str:
    """The report's run page at one instance: under ``$HELMFLOW_REPORT_URL`` (a ``helmflow serve``)
    when set, else the path below a serve's root."""
    from helmflow.settings import settings

    base = (settings().report_url or "").rstrip("/")
    at = f"#page={row // PAGE_SIZE + 1}&open={row}" if row is not None else ""
    return f"{base}/boards/{board}/{release_id}/runs/{run_id}/{at}"


def cmd_diff(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from helmflow import compare
    from helmflow.storage import Store
    from helmflow.terminal import print_table

    if args.flips < 0:
        from helmflow.cli.options import UsageError

        raise UsageError(f"--flips must be 0 or more, got {args.flips}")
    store = Store(args.storage)
    diff = compare.release_diff(store, args.board, args.from_release, args.to_release)
    console = Console()
    cells = [c for c in diff["cells"] if args.all or c["what"] != "same run"]
    table = Table("scenario", "model", "before", "after", "change [95% CI]", "flipped", "what changed",
                  title=escape(f"{diff['board']}: {diff['from']} → {diff['to']}"))
    for c in cells:
        mark = " *" if c["significant"] else ""
        table.add_row(escape(c["scenario"]), escape(c["deployment"]), _fmt(c["before"]), _fmt(c["after"]),
                      _interval(c) + mark, str(c["flipped"]) if c["delta"] is not None else "—", escape(c["what"]))
    print_table(console, table)
    same = sum(c["what"] == "same run" for c in diff["cells"])
    console.print(f"{len(diff['cells'])} cells: {sum(c['significant'] for c in diff['cells'])} changed significantly "
                  f"(* : the interval excludes 0), {same} are the same run in both releases", highlight=False)
    for c in cells:
        for f in c["flips"][:args.flips]:
            console.print(
                f"flipped {c['scenario']} x {c['deployment']} {f['instance_id']}: {f['before']:g} → {f['after']:g}  "
                f"before {answer_link(diff['board'], diff['from'], c['run_before'], f['row_before'])}  "
                f"after {answer_link(diff['board'], diff['to'], c['run_after'], f['row_after'])}",
                soft_wrap=True, markup=False, highlight=False)
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from helmflow import agreement, compare
    from helmflow.publish import parquet_meta
    from helmflow.storage import Store
    from helmflow.terminal import print_table

    human = None
    if args.human_labels:
        try:
            text = Path(args.human_labels).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise agreement.HumanLabelsError(f"cannot read {args.human_labels}: {exc}") from None
        human = agreement.read_human_labels(text, args.human_labels)
    store = Store(args.storage)
    release = compare.load_release(store, args.board, args.release)
    columns = list(release.manifest.scenarios)
    if args.scenario is not None and args.scenario not in columns:
        raise compare.NoSuchName(f"release {release.release_id} has no column {args.scenario!r} "
                                 f"(its columns: {', '.join(columns)})")
    rows = agreement.release_agreement(store, release.runs, columns)
    if human is not None:
        labelled = agreement.release_agreement(store, release.runs, [args.scenario] if args.scenario else columns,
                                               human)
        by_run = {r["run_id"]: r for r in labelled}
        rows = [by_run.get(r["run_id"], r) for r in rows]
        if not any(r["human_units"] for r in rows):
            raise agreement.HumanLabelsError(f"{args.human_labels}: no labelled instance id is one the juried "
                                             f"cells scored")
    if not rows:
        raise compare.NoSuchName(f"release {release.release_id} of board {release.board!r} has no juried cell")
    console = Console()
    table = Table("scenario", "model", "judges: mean score", "units", "alpha", "kappa", "> 1 pt apart",
                  *(("humans: n, alpha (jury; each judge)",) if human else ()),
                  title=escape(f"{release.board} {release.release_id}: judge agreement"))
    for r in rows:
        means = ", ".join(f"{j} {_fmt(m)}" for j, m in zip(r["judges"], r["judge_means"], strict=True))
        extra = []
        if human:
            each = "; ".join(_fmt(a) for a in r["human_judge_alpha"] or [])
            extra = [f"{r['human_units']}, {_fmt(r['human_alpha'])} ({each})" if r["human_units"] else "—"]
        share = "—" if r["disagree_share"] is None else f"{100 * r['disagree_share']:.0f}%"
        table.add_row(escape(r["scenario"]), escape(r["deployment"]), escape(means), str(r["units"]),
                      _fmt(r["alpha"]), _fmt(r["kappa"]), share, *extra)
    print_table(console, table)
    key = agreement.write_agreement(store, release.board, release.release_id, rows,
                                    parquet_meta(board=release.manifest.board, release_id=release.release_id,
                                                 human_labels=args.human_labels or ""))
    console.print(f"wrote {store.url(key)}", soft_wrap=True, markup=False, highlight=False)
    return 0
