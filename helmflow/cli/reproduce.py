"""``helmflow reproduce capabilities|safety|lite [--variant v1|v2]``: run HELM's published configuration of a
board and say first what differs from HELM's setup (the knowledge is in :mod:`helmflow.reproduce`)."""

from __future__ import annotations

import argparse

from helmflow.cli.options import (
    budget_arg,
    ephemeral_arg,
    judge_args,
    models_arg,
    models_file_arg,
    prompts_arg,
    selection_from,
    storage_arg,
    verbose_arg,
)
from helmflow.reproduce import REPRODUCIBLE, differences, official_spec


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="run a board in HELM's published configuration and say what differs from HELM's setup",
        description="Run HELM's pinned official configuration of a board (max 1000 instances, HELM's sampling, "
                    "revisions, judges as configured) and print what differs from HELM's published setup.",
    )
    p.add_argument("board", choices=REPRODUCIBLE)
    p.add_argument("--variant", choices=["v1", "v2"], default="v1",
                   help="v1: HELM Capabilities v1; v2: HELM's reasoning_v2 entries "
                        "(more output tokens, letter-only suffix)")
    models_arg(p)
    storage_arg(p)
    models_file_arg(p)
    budget_arg(p)
    prompts_arg(p)
    p.add_argument("--explain", action="store_true",
                   help="print the configuration and the differences only; run nothing")
    p.add_argument("--allow-unverified-data", action="store_true",
                   help="run even if a mirror's files are not verified against the pinned data (the release says so)")
    p.add_argument("--adaptive", action="store_true", default=None,
                   help="as HELM's REEval runner: ask each model at most 50 items per scenario (HELM's documented "
                        "example), each the one nearest even odds, from item easiness fitted by `helmflow "
                        "calibrate-items` on this board's published full runs")
    p.add_argument("--model-ability", type=float, metavar="X", help="the initial ability of --adaptive (default 0)")
    verbose_arg(p)
    ephemeral_arg(p)
    judge_args(p)
    p.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from rich.console import Console

    from helmflow.cli.runner import request_from, run_board
    from helmflow.plan.spec import load_board, with_prompts

    selection = selection_from(args)
    spec = official_spec(args.board, args.variant)
    if args.prompts:
        spec = with_prompts(spec, args.prompts)
    judges = selection.jury(load_board(args.board).judges)
    console = Console()
    cap = (f"at most {spec['max_instances']} instances per scenario" if spec.get("max_instances")
           else "each entry's own instance cap (HELM's run expanders)")
    console.print(f"[bold]reproducing {args.board} ({args.variant})[/]: {cap} "
                  f"(HELM's seeded sample), pinned dataset revisions, judges: {', '.join(judges) or 'none'}")
    if selection.adaptive:
        from helmflow.plan.spec import DEFAULT_ADAPTIVE_ITEMS

        console.print(f"adaptive (HELM's REEval runner): at most {DEFAULT_ADAPTIVE_ITEMS} items per scenario and "
                      f"model from that sample, starting at ability {selection.model_ability:g}; item easiness from "
                      f"`helmflow calibrate-items {args.board}`", markup=False)
    console.print("differences from HELM's published setup:")
    from helmflow.clients import load_deployments

    for line in differences(spec, judges, args.variant, selection, load_deployments(args.models_file)):
        console.print(f"  - {line}")
    if args.explain:
        return 0
    # the spec already has the variant and the prompts file (and their board name)
    return run_board(request_from(args, board=spec, variant=None, prompts=None,
                                  require_verified_data=not args.allow_unverified_data))
