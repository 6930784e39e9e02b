"""``helmflow list`` and ``helmflow show``: what exists and what a board will run (never imports Prefect)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from helmflow.cli.options import (
    apply_data_paths,
    data_path_arg,
    models_file_arg,
    prompts_arg,
    selection_args,
    selection_from,
)

if TYPE_CHECKING:
    from helmflow.scenarios.base import DataSource


LISTED = ("boards", "scenarios", "models")


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="list boards, scenarios and models (or one kind)")
    ls.add_argument("what", nargs="?", choices=LISTED, help="one kind only (default: all three)")
    models_file_arg(ls)
    ls.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="show a board: its scenarios, models and versions")
    show.add_argument("board")
    selection_args(show)
    data_path_arg(show)
    show.set_defaults(func=cmd_show)

    pr = sub.add_parser("prompts", help="print a board's prompt wording keys and texts as a prompts-file template",
                        description="Print every replaceable prompt text of a board (its scenarios' framing sentences, "
                                    "adapter texts and judge templates) with its current wording, as a prompts file "
                                    "to edit and pass with --prompts.")
    pr.add_argument("board", help="board name or board YAML file")
    pr.add_argument("--all", action="store_true",
                    help="every registered scenario and judge template, not just the board's")
    prompts_arg(pr)
    pr.set_defaults(func=cmd_prompts)


def _listing(what: str, models_file: str | None):
    from rich.table import Table

    if what == "boards":
        from helmflow.plan.spec import board_names, load_board

        table = Table("board", "version", "scenarios", "models", "description")
        for name in board_names():
            b = load_board(name)
            table.add_row(name, b.version, str(len(b.scenarios)), str(len(b.models)), b.description)
    elif what == "scenarios":
        from helmflow.scenarios import SCENARIOS

        table = Table("scenario", "version", "main metric", "description")
        for name in SCENARIOS.names():
            cls = SCENARIOS.get(name)
            table.add_row(name, cls.VERSION, cls.main_metric, cls.description)
    else:
        from helmflow.clients import load_deployments

        table = Table("deployment", "client", "model", "context", "$/M in", "$/M out", "description")
        for d in load_deployments(models_file).values():
            table.add_row(d.name, d.client, d.model, str(d.context_window), f"{d.price_input_per_mtok:g}",
                          f"{d.price_output_per_mtok:g}", d.description)
    return table


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console

    from helmflow.terminal import print_table

    console = Console()
    kinds = [args.what] if args.what else list(LISTED)
    for kind in kinds:
        if len(kinds) > 1:
            console.print(f"[bold]{kind}[/] (helmflow list {kind})")
        print_table(console, _listing(kind, args.models_file))
    return 0


def _plan(args: argparse.Namespace, board: str, check_credentials: bool = True):
    from helmflow.plan.compile import prepare

    return prepare(board, selection_from(args), models_file=args.models_file, plugins=args.plugin,
                   check_credentials=check_credentials)


DECLARED_MARK = " (declared)"  # a scenario_version computed from declared pins, not from data on this machine
INCOMPLETE_MARK = " (declared, incomplete)"  # ... where some file declares no sha256: a run's version differs


def scenario_data(plan) -> dict[str, list[tuple[DataSource, str, str | None]]]:
    """Scenario label -> (source, where a run reads it, why it is not on this machine or None) per file,
    found without reading remote data."""
    from helmflow.datasets import whereabouts
    from helmflow.scenarios import get_scenario

    out = {}
    for s in plan.scenarios:
        scen = get_scenario(s.name, s.params)
        out[s.label] = [(source, *whereabouts(scen, source)) for source in scen.sources()]
    return out


def version_mark(scenario, files: list[tuple[DataSource, str, str | None]]) -> str:
    """How far the shown scenario_version is known: from the data here (no mark), from the declared
    pins (the data is not here), or incomplete (a file without a declared sha256 was not read)."""
    from helmflow.datasets import UNDECLARED

    if UNDECLARED in scenario.checksums.values():
        return INCOMPLETE_MARK
    return DECLARED_MARK if any(absent for _, _, absent in files) else ""


def data_files(console, plan, files: dict[str, list[tuple[DataSource, str, str | None]]]) -> int:
    """Every source file a mirror must hold (its flat name, or its Hub repository path), where it is
    (on this machine, or not mirrored) and whether the file a run would read is verified against the
    pinned data. Returns how many files are not on this machine."""
    from rich.table import Table

    from helmflow.datasets import UNDECLARED, mirror_names
    from helmflow.scenarios import get_scenario
    from helmflow.terminal import print_table

    dt = Table("scenario", "mirror file names", "revision", "here", "data")
    absent_count = 0
    for s in plan.scenarios:
        scen = get_scenario(s.name, s.params)
        revision = s.dataset_revision + (" (pin unverified: see helmflow mirror)" if scen.pin_unverified else "")
        for source, url, absent in files[s.label]:
            absent_count += bool(absent)
            why = s.unverified.get(source.filename)
            if why:
                data = f"UNVERIFIED: {why}"
            elif s.checksums.get(source.filename) == UNDECLARED:
                data = "no sha256 declared"
            else:
                data = "verified" if not absent else "sha256 declared"
            dt.add_row(s.label, " or ".join(mirror_names(source)), revision, absent or url, data)
    if dt.row_count:
        print_table(console, dt)
    return absent_count


def missing_extras(console, plan, noted: dict) -> None:
    """One line per extra a run of the board needs and this install lacks: which modules, which
    metrics and scenarios, or which deployments (models, judges, board-wide metrics' scorers)."""
    from helmflow.clients import CLIENTS
    from helmflow.errors import install_command

    deployments = {d.name: d for r in plan.runs for d in [r.deployment, *r.judges, *([r.scorer] if r.scorer else [])]}
    clients: dict[str, list[str]] = {}
    for name, d in sorted(deployments.items()):
        kind = CLIENTS.get(d.client)
        if kind.missing_modules():
            clients.setdefault(kind.extra or "?", []).append(name)
    for extra, names in sorted(clients.items()):
        modules = sorted({m for n in names for m in CLIENTS.get(deployments[n].client).missing_modules()})
        console.print(f"missing extra helmflow[{extra}]: {', '.join(modules)} not installed, needed by deployment(s) "
                      f"{', '.join(names)}; a run with them stops until you {install_command(extra)}",
                      soft_wrap=True, markup=False, highlight=False)
    by_extra: dict[str, list] = {}
    for metric in noted.values():
        by_extra.setdefault(metric.extra or "?", []).append(metric)
    for extra, metrics in sorted(by_extra.items()):
        metric_names = {m.name for m in metrics}
        modules = sorted({mod for m in metrics for mod in m.missing_modules()})
        labels = [s.label for s in plan.scenarios if metric_names & set(s.metrics)]
        console.print(f"missing extra helmflow[{extra}]: {', '.join(modules)} not installed, needed by metric(s) "
                      f"{', '.join(sorted(metric_names))} of {len(labels)} scenario(s) ({', '.join(labels)}); "
                      "a run of them "
                      f"stops until you {install_command(extra)}", soft_wrap=True, markup=False, highlight=False)


def cmd_show(args: argparse.Namespace) -> int:
    """The board as a run would plan it, from what is declared and what is on this machine: no
    download, no key, and no extra needed (the missing ones are named)."""
    apply_data_paths(args)
    from rich.console import Console
    from rich.table import Table

    from helmflow.datasets import MIRROR_ENV, declared_pins
    from helmflow.metrics import tolerate_missing_extras
    from helmflow.perturbations import tolerate_missing_data
    from helmflow.perturbations.assets import COMMAND as FETCH_ASSETS
    from helmflow.plan.spec import NothingHere, board_names
    from helmflow.terminal import count_line, print_table

    console = Console()
    try:
        with declared_pins(), tolerate_missing_extras() as noted, tolerate_missing_data() as not_fetched:
            plan = _plan(args, args.board, check_credentials=False)  # showing a board needs no judge key
    except NothingHere as empty:  # described all the same: what it holds and where each file goes
        console.print(f"[bold]{empty.board.name}[/] version {empty.board.version}")
        if empty.board.description:
            console.print(empty.board.description)
        for label, why in empty.left_out.items():
            console.print(f"left out: {label}: {why}", style="yellow", markup=False, soft_wrap=True)
        console.print(f"board {empty.board.name}: nothing it runs is on this machine ({len(empty.left_out)} "
                      "credential-gated scenarios left out); a run stops until their files are here", markup=False)
        return 0
    files = scenario_data(plan)
    console.print(f"[bold]{plan.spec.name}[/] version {plan.spec.version} (board version {plan.board_version})")
    if plan.spec.description:
        console.print(plan.spec.description)
    for label, why in plan.left_out.items():
        console.print(f"left out: {label}: {why}", style="yellow", markup=False, soft_wrap=True)
    if plan.spec.prompts:
        console.print("prompt wording replaced (`helmflow prompts` shows the texts): "
                      f"{', '.join(sorted(plan.spec.prompts))}", markup=False)
    st = Table("scenario", "method", "main metric", "max instances", "scenario_version", "prompt_version")
    marks = set()
    for s in plan.scenarios:
        mark = version_mark(s, files[s.label])
        marks.add(mark)
        st.add_row(s.label, s.adapter.method, s.main_metric, str(s.adapter.sample.max_eval_instances or "all"),
                   s.scenario_version + mark, s.prompt_version)
    print_table(console, st)
    if DECLARED_MARK in marks:
        console.print(f"{DECLARED_MARK.strip()}: computed from the scenario's declared pins (revision, sha256), "
                      f"not from data on this machine", soft_wrap=True, markup=False, highlight=False)
    if INCOMPLETE_MARK in marks:
        console.print(f"{INCOMPLETE_MARK.strip()}: some files declare no sha256 and are not on this machine; a run "
                      f"pins the hash of the file it reads, so its scenario_version differs from the one shown",
                      soft_wrap=True, markup=False, highlight=False)
    mt = Table("model", "client", "model id", "model_version")
    seen = set()
    for r in plan.runs:
        if r.deployment.name not in seen:
            seen.add(r.deployment.name)
            mt.add_row(r.deployment.name, r.deployment.client, r.deployment.model, r.model_version)
    print_table(console, mt)
    absent = data_files(console, plan, files)
    judged = {(r.scenario.label, tuple(j.name for j in r.judges), tuple(r.judge_templates.items())) for r in plan.runs
              if r.judge_templates}
    if judged:
        jt = Table("judged scenario", "judges", "templates")
        for label, names, templates in sorted(judged):
            jt.add_row(label, ", ".join(names) or "none: its judged numbers are missing (--judge names judges)",
                       ", ".join(f"{n} v{v}" for n, v in templates))
        print_table(console, jt)
    from helmflow.plan.extras import scored_by_scorer

    scored = sorted({(r.scenario.label, ", ".join(scored_by_scorer(r.scenario.metrics)), r.scorer.name,
                      r.scorer_template) for r in plan.runs if r.scorer})
    if scored:
        tt = Table("scored scenario", "board-wide metric", "scorer", "template")
        for label, metric, name, template in scored:
            tt.add_row(label, metric, name, template or "")
        print_table(console, tt)
    missing_extras(console, plan, noted)
    if absent:
        target = args.board if args.board in board_names() else "<scenario>"
        console.print(f"not mirrored: {absent} data file(s) are not on this machine (the `here` column says why); "
                      f"mirror them with `helmflow mirror {target} --to DIR` where the network is, then export "
                      f"{MIRROR_ENV}=DIR",
                      soft_wrap=True, markup=False, highlight=False)
    for filename, needed_by in sorted(not_fetched.items()):
        copies = sum(1 for p in plan.perturbed if p.perturbation and p.perturbation.name in needed_by)
        console.print(f"not fetched: {filename}, the data of perturbation(s) {', '.join(sorted(needed_by))} "
                      f"({copies} perturbed copies); a run stops until you run `{FETCH_ASSETS}`",
                      soft_wrap=True, markup=False, highlight=False)
    console.print(count_line(plan.spec.name, len(plan.scenarios), len(plan.perturbed), len(plan.spec.models),
                             len(plan.runs), None), soft_wrap=True, markup=False, highlight=False)
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    """The template, with the board's (and the file's) replacements in place of our wording."""
    import sys

    from helmflow.plan.spec import board_prompt_texts, load_board, with_prompts
    from helmflow.prompts import template

    spec = load_board(with_prompts(args.board, args.prompts) if args.prompts else args.board)
    sections = [(scope, {name: (spec.prompts.get(f"{scope}.{name}", text), about)
                         for name, (text, about) in texts.items()})
                for scope, texts in board_prompt_texts(spec, everything=args.all)]
    sys.stdout.write(template(sections))
    return 0
