"""``helmflow list`` and ``helmflow show``: what exists and what a board will run (never imports Prefect)."""

from __future__ import annotations

import argparse

from helmflow.cli.options import UsageError, models_file_arg, prompts_arg, selection_args


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="list boards, scenarios or models")
    ls.add_argument("what", choices=["boards", "scenarios", "models"])
    models_file_arg(ls)
    ls.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="show a board: its scenarios, models and versions")
    show.add_argument("board")
    selection_args(show)
    show.set_defaults(func=cmd_show)

    pr = sub.add_parser("prompts", help="print a board's prompt wording keys and texts as a prompts-file template",
                        description="Print every replaceable prompt text of a board (its scenarios' framing sentences, "
                                    "adapter texts and judge templates) with its current wording, as a prompts file "
                                    "to edit and pass with --prompts.")
    pr.add_argument("board", help="board name or board YAML file")
    pr.add_argument("--all", action="store_true", help="every registered scenario and judge template, not just the board's")
    prompts_arg(pr)
    pr.set_defaults(func=cmd_prompts)


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if args.what == "boards":
        from helmflow.plan.spec import board_names, load_board

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
    from helmflow.plan.compile import prepare

    if args.judges and args.no_judge:
        raise UsageError("--judge and --no-judge exclude each other")
    return prepare(board, args.models, args.scenarios, args.max_instances, args.models_file, args.plugin,
                   args.judges, args.no_judge, check_credentials, args.toxicity)


def data_files(console, plan) -> None:
    """Every source file a mirror must hold (its flat name, or its Hub repository path) and whether the
    file a run would read is verified against the pinned data."""
    from rich.table import Table

    from helmflow.datasets import mirror_names
    from helmflow.scenarios import get_scenario

    dt = Table("scenario", "mirror file names", "revision", "data")
    for s in plan.scenarios:
        scen = get_scenario(s.name, s.params)
        revision = s.dataset_revision + (" (pin unverified: see helmflow mirror)" if scen.pin_unverified else "")
        for source in scen.sources():
            why = s.unverified.get(source.filename)
            dt.add_row(s.label, " or ".join(mirror_names(source)), revision,
                       f"UNVERIFIED: {why}" if why else "verified")
    if dt.row_count:
        console.print(dt)


def cmd_show(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    plan = _plan(args, args.board, check_credentials=False)  # showing a board needs no judge key
    console = Console()
    console.print(f"[bold]{plan.spec.name}[/] version {plan.spec.version} (board version {plan.board_version})")
    if plan.spec.description:
        console.print(plan.spec.description)
    if plan.spec.prompts:
        console.print(f"prompt wording replaced (`helmflow prompts` shows the texts): {', '.join(sorted(plan.spec.prompts))}",
                      markup=False)
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
    data_files(console, plan)
    judged = {(r.scenario.label, tuple(j.name for j in r.judges), tuple(r.judge_templates.items())) for r in plan.runs
              if r.judge_templates}
    if judged:
        jt = Table("judged scenario", "judges", "templates")
        for label, names, templates in sorted(judged):
            jt.add_row(label, ", ".join(names) or "none (--no-judge)", ", ".join(f"{n} v{v}" for n, v in templates))
        console.print(jt)
    scored = sorted({(r.scenario.label, r.scorer.name, r.scorer_template) for r in plan.runs if r.scorer})
    if scored:
        tt = Table("toxicity scored", "scorer", "template")
        for label, name, template in scored:
            tt.add_row(label, name, template or "")
        console.print(tt)
    console.print(f"{len(plan.runs)} runs")
    return 0


def cmd_prompts(args: argparse.Namespace) -> int:
    """The template, with the board's (and the file's) replacements in place of our wording."""
    import sys

    from helmflow.plan.spec import board_prompt_texts, load_board, with_prompts
    from helmflow.prompts import template

    spec = load_board(with_prompts(args.board, args.prompts) if args.prompts else args.board)
    sections = [(scope, {name: (spec.prompts.get(f"{scope}.{name}", text), about) for name, (text, about) in texts.items()})
                for scope, texts in board_prompt_texts(spec, everything=args.all)]
    sys.stdout.write(template(sections))
    return 0
