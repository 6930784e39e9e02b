"""The ``helmflow`` command. ``--help``, ``list`` and ``show`` never import Prefect (it costs seconds).

Exit codes: 0 done; 1 a run published a partial release (some pairs failed); 2 bad input, found
before any work.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import math
import os
import sys
import time
from typing import Any

from helmflow.errors import EXIT_USAGE, HelmflowError, format_validation_error

EXIT_PARTIAL = 1


def _csv(value: str) -> list[str]:
    """``a,b,c``; a name given twice is a mistake (it would run or judge the same thing twice)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    twice = sorted({v for v in items if items.count(v) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{', '.join(twice)} given twice in {value!r}")
    return items


def positive_int(value: str) -> int:
    """A count the user gives (``--max-instances``): 1 or more, said about the flag, not a model."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {number}")
    return number


@functools.cache
def _once(action_class: type[argparse.Action]) -> type[argparse.Action]:
    """``action_class`` that refuses a second occurrence (argparse keeps the last one silently)."""

    class Once(action_class):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None):
            seen = namespace.__dict__.setdefault("_given", set())
            if self.dest in seen:
                parser.error(f"{'/'.join(self.option_strings)} given twice")
            seen.add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    return Once


def forbid_repeats(parser: argparse.ArgumentParser) -> None:
    """Every single-valued option of ``parser`` and its subcommands may be given once
    (``append`` options such as ``--plugin`` stay repeatable)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                forbid_repeats(sub)
        elif action.option_strings and not isinstance(
            action, (argparse._AppendAction, argparse._CountAction, argparse._HelpAction, argparse._VersionAction)
        ):
            action.__class__ = _once(type(action))


class Parser(argparse.ArgumentParser):
    """Usage errors are one line (the flag and what is wrong) and exit 2, like every bad input."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def budget_usd(value: str) -> float:
    """A spending cap: a finite amount, zero or more (``nan`` would compare false and never stop)."""
    try:
        usd = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount in USD, got {value!r}") from None
    if not math.isfinite(usd) or usd < 0:
        raise argparse.ArgumentTypeError(f"must be a finite amount of zero or more, got {value!r} "
                                         "(leave the option out for no cap)")
    return usd


def _parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="helmflow",
        description="Holistic, reproducible evaluation of language models as Prefect flows.",
    )
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE",
                   help="import a module or .py file that registers scenarios, metrics or clients (repeatable)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a board as a Prefect flow and publish a release",
                         description="Run a board: download, adapt, query, score and publish, then aggregate a release.")
    run.add_argument("board", nargs="?", help="board name (see `helmflow list boards`) or a board YAML file")
    run.add_argument("--board-file", help="a board spec YAML file (instead of a name)")
    _selection_args(run)
    run.add_argument("-v", "--verbose", action="store_true", help="show Prefect's own log lines")
    run.add_argument("--task-runner", choices=["thread", "dask"], help="thread pool (default) or a local Dask cluster "
                     "(extra helmflow[dask]; also $HELMFLOW_TASK_RUNNER, which accepts dask:<scheduler address>)")
    run.add_argument("--dry-run", action="store_true",
                     help="print requests, prompt tokens and worst-case cost per run; call no model, write nothing")
    run.add_argument("--variant", choices=["v1", "v2"],
                     help="HELM Capabilities variant for scenarios that have one (MMLU-Pro, GPQA): v2 adds the larger "
                          "token budget and the answer-format suffix; a v2 board publishes as <board>-v2")
    run.add_argument("--budget-usd", type=budget_usd, metavar="USD",
                     help="stop sending new priced requests before this run's projected spend passes USD")

    ls = sub.add_parser("list", help="list boards, scenarios or models")
    ls.add_argument("what", choices=["boards", "scenarios", "models"])
    ls.add_argument("--models-file", help="extra deployments YAML (also $HELMFLOW_MODELS)")

    show = sub.add_parser("show", help="show a board: its scenarios, models and versions")
    show.add_argument("board")
    _selection_args(show)

    run.set_defaults(func=cmd_run)
    ls.set_defaults(func=cmd_list)
    show.set_defaults(func=cmd_show)
    for module in COMMAND_MODULES:
        importlib.import_module(module).add_parser(sub)
    forbid_repeats(p)
    return p


# Further commands live in their own modules, each with ``add_parser(subparsers)`` that sets
# ``func`` (and imports nothing heavy at module level). Add yours here.
COMMAND_MODULES: list[str] = [
    "helmflow.web.cli_serve",
    "helmflow.web.cli_report",
    "helmflow.mirror",
    "helmflow.cli_eval",
    "helmflow.devserver",
    "helmflow.check",
    "helmflow.operations",
    "helmflow.reproduce",
]


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", type=_csv, help="comma-separated deployments (default: the board's)")
    p.add_argument("--scenarios", type=_csv, help="comma-separated scenario labels or names (default: all)")
    p.add_argument("--max-instances", type=positive_int, metavar="N", help="evaluate at most N instances per scenario")
    p.add_argument("--storage", help="storage root URL (default $HELMFLOW_STORAGE or ./helmflow-store)")
    p.add_argument("--models-file", help="extra deployments YAML (also $HELMFLOW_MODELS)")
    judge_args(p)


def judge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", dest="judges", type=_csv, metavar="A[,B,C]",
                   help="judge deployment(s) for LLM-judged scenarios, a jury averaged over the judges that parse "
                        "(default: the board's `judges:`)")
    p.add_argument("--no-judge", action="store_true",
                   help="no judges: judge-only metrics stay missing, rule-based ones are still computed")


class UsageError(HelmflowError):
    """Options that cannot go together or name nothing."""


def _fail(message: str) -> int:
    print(f"helmflow: error: {message}", file=sys.stderr)
    return EXIT_USAGE


# --------------------------------------------------------------------------- list / show
def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if args.what == "boards":
        from helmflow.board import board_names, load_board

        table = Table("board", "version", "scenarios", "models", "description")
        for name in board_names():
            b = load_board(name)
            table.add_row(name, b.version, str(len(b.scenarios)), str(len(b.models)), b.description)
    elif args.what == "scenarios":
        from helmflow.scenarios import SCENARIOS

        table = Table("scenario", "version", "main metric", "description")
        for name in SCENARIOS.names():
            cls = SCENARIOS.get(name)
            table.add_row(name, cls.VERSION, cls.main_metric, cls.description)
    else:
        from helmflow.clients import load_deployments

        table = Table("deployment", "client", "model", "context", "$/M in", "$/M out", "description")
        for d in load_deployments(args.models_file).values():
            table.add_row(d.name, d.client, d.model, str(d.context_window), f"{d.price_input_per_mtok:g}",
                          f"{d.price_output_per_mtok:g}", d.description)
    console.print(table)
    return 0


def _plan(args: argparse.Namespace, board: str, check_credentials: bool = True):
    from helmflow.board import prepare

    if args.judges and args.no_judge:
        raise UsageError("--judge and --no-judge exclude each other")
    return prepare(board, args.models, args.scenarios, args.max_instances, args.models_file, args.plugin,
                   args.judges, args.no_judge, check_credentials)


def cmd_show(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    plan = _plan(args, args.board, check_credentials=False)  # showing a board needs no judge key
    console = Console()
    console.print(f"[bold]{plan.spec.name}[/] version {plan.spec.version} (board version {plan.board_version})")
    if plan.spec.description:
        console.print(plan.spec.description)
    st = Table("scenario", "method", "main metric", "max instances", "scenario_version", "prompt_version")
    for s in plan.scenarios:
        st.add_row(s.label, s.adapter.method, s.main_metric, str(s.adapter.sample.max_eval_instances or "all"),
                   s.scenario_version, s.prompt_version)
    console.print(st)
    mt = Table("model", "client", "model id", "model_version")
    seen = set()
    for r in plan.runs:
        if r.deployment.name not in seen:
            seen.add(r.deployment.name)
            mt.add_row(r.deployment.name, r.deployment.client, r.deployment.model, r.model_version)
    console.print(mt)
    judged = {(r.scenario.label, tuple(j.name for j in r.judges), tuple(r.judge_templates.items())) for r in plan.runs
              if r.judge_templates}
    if judged:
        jt = Table("judged scenario", "judges", "templates")
        for label, names, templates in sorted(judged):
            jt.add_row(label, ", ".join(names) or "none (--no-judge)", ", ".join(f"{n} v{v}" for n, v in templates))
        console.print(jt)
    console.print(f"{len(plan.runs)} runs")
    return 0


# --------------------------------------------------------------------------- run
def cmd_run(args: argparse.Namespace) -> int:
    if args.board and args.board_file:
        raise UsageError(f"give a board name ({args.board!r}) or --board-file ({args.board_file!r}), not both")
    board = args.board_file or args.board
    if not board:
        raise UsageError("name a board (see `helmflow list boards`) or pass --board-file")
    if getattr(args, "variant", None):
        from helmflow.reproduce import with_variant

        board = with_variant(board, args.variant)
    plan = _plan(args, board)
    if args.dry_run:
        from rich.console import Console

        from helmflow.dryrun import estimate, print_estimate

        print_estimate(Console(), estimate(plan))
        return 0
    from helmflow.check import missing_credentials

    missing = missing_credentials(r.deployment for r in plan.runs)
    if missing:  # before the flow starts, so no pair spends anything on a board that cannot finish
        raise UsageError("; ".join(missing))
    from helmflow.storage import Store

    store = Store(args.storage)
    store.check_writable()

    from rich.console import Console

    console = Console()
    console.print(f"storage: {store.root}")
    console.print(f"board {plan.spec.name}: {len(plan.scenarios)} scenarios x {len(plan.spec.models)} models = {len(plan.runs)} runs")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if args.task_runner:
        os.environ["HELMFLOW_TASK_RUNNER"] = args.task_runner
    if not args.verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    started = time.perf_counter()
    from helmflow.flows.evaluate import PartialRelease, evaluate
    from helmflow.progress import RichReporter, quiet_reported_failures, set_reporter

    if not args.verbose:
        quiet_reported_failures()

    with RichReporter(console) as rep:
        set_reporter(rep)
        try:
            state = evaluate(
                board=board, models=args.models, scenarios=args.scenarios, max_instances=args.max_instances,
                storage=store.root, models_file=args.models_file, plugins=args.plugin, return_state=True,
                budget_usd=args.budget_usd, judges=args.judges, no_judge=args.no_judge,
            )
        finally:
            set_reporter(None)
    result: Any = state.result(raise_on_failure=False)
    summary = result.release if isinstance(result, PartialRelease) else result
    if not isinstance(summary, dict):
        console.print(f"[red]flow run {state.state_details.flow_run_id} ended {state.type.value}: {result}")
        return EXIT_PARTIAL
    _print_board(console, summary)
    console.print(f"flow run: {state.state_details.flow_run_id} ({state.type.value.lower()}) in {time.perf_counter() - started:.1f} s")
    console.print(f"release: {summary['uri']}" + ("" if summary["wrote"] else " (unchanged: nothing written)"))
    if isinstance(result, PartialRelease):
        from rich.markup import escape

        console.print(f"[red]partial release: {escape(str(result))}")
        return EXIT_PARTIAL
    return 0


def _print_board(console, summary: dict[str, Any]) -> None:
    """Scenarios down, models across: boards grow in scenarios, and a terminal is taller than wide."""
    from rich.table import Table

    def fmt(v: Any) -> str:
        return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    rows, labels = summary["table"], summary["scenarios"]
    with_ci = len(rows) <= 3  # wider boards show scores only; intervals are in leaderboard.parquet
    table = Table(title=f"{summary['board']} — release {summary['release_id']} ({summary['status']})")
    table.add_column("scenario", no_wrap=True)
    for row in rows:
        table.add_column(row["deployment"], justify="right", overflow="fold")
    for lab in labels:
        table.add_row(lab, *[
            "missing" if row[lab] is None
            else f"{fmt(row[lab])} [{fmt(row[f'{lab} ci_low'])}, {fmt(row[f'{lab} ci_high'])}]" if with_ci
            else fmt(row[lab])
            for row in rows
        ])
    table.add_section()
    table.add_row("[bold]mean score", *[f"[bold]{fmt(row['mean_score'])}" for row in rows])
    table.add_row("mean win rate", *[fmt(row["mean_win_rate"]) for row in rows])
    console.print(table)
    if not with_ci:
        console.print("95% intervals: see leaderboard.parquet or `helmflow serve`")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from helmflow.registry import UnknownNameError, add_plugins
    from helmflow.storage import StorageError

    add_plugins(args.plugin)
    from pydantic import ValidationError

    try:
        return args.func(args)
    except HelmflowError as exc:
        print(f"helmflow: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ValidationError as exc:  # a record built from the user's values: name the fields, not pydantic's dump
        return _fail(f"{exc.title}: {format_validation_error(exc)}")
    except (ValueError, UnknownNameError, StorageError, FileNotFoundError, ImportError) as exc:
        # validation errors (board, scenario, model, models file, storage) are all found before any work
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("helmflow: interrupted; finished responses are in the journal and will be reused", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
