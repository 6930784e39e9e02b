"""``helmflow run``: the command's options; the run itself is :func:`helmflow.cli.runner.run_board`."""

from __future__ import annotations

import argparse

from helmflow.cli.options import (
    UsageError,
    apply_data_paths,
    batch_arg,
    budget_arg,
    data_path_arg,
    dry_run_arg,
    ephemeral_arg,
    force_flow_arg,
    prompts_arg,
    selection_args,
    task_runner_arg,
    verbose_arg,
)


def add_parser(sub) -> None:
    run = sub.add_parser("run", help="run a board as a Prefect flow and publish a release",
                         description="Run a board: download, adapt, query, score and publish, "
                                     "then aggregate a release.")
    run.add_argument("board", nargs="?", help="board name (see `helmflow list boards`) or a board YAML file")
    run.add_argument("--board-file", help="a board spec YAML file (instead of a name)")
    selection_args(run)
    verbose_arg(run)
    ephemeral_arg(run)
    task_runner_arg(run)
    dry_run_arg(run)
    force_flow_arg(run)
    run.add_argument("--variant", choices=["v1", "v2"],
                     help="HELM Capabilities variant for scenarios that have one (MMLU-Pro, GPQA): v2 adds the larger "
                          "token budget and the answer-format suffix; a v2 board publishes as <board>-v2")
    run.add_argument("--adaptive", action="store_true", default=None,
                     help="adaptive testing: ask each model the items closest to even odds under the Rasch model, "
                          "refitting its ability after each, at most --max-instances items (default 50); needs "
                          "item easiness from `helmflow calibrate-items`; replaces a board's own `adaptive:`")
    run.add_argument("--no-adaptive", dest="adaptive", action="store_false", default=None,
                     help="full runs of every cell, on a board that declares `adaptive:` (the runs "
                          "`helmflow calibrate-items` fits item easiness from)")
    run.add_argument("--model-ability", type=float, metavar="X", help="the initial ability of --adaptive (default 0)")
    prompts_arg(run)
    data_path_arg(run)
    budget_arg(run)
    batch_arg(run)
    run.add_argument("--track", action="append", default=[], metavar="mlflow:URI|wandb:PROJECT[:DIR]",
                     help="after the release is published, log it as an MLflow run at URI, or as an offline W&B run "
                          "of PROJECT under DIR (repeatable; replaces the board's `tracking:`; see `helmflow track`)")
    run.add_argument("--wait", action="store_true",
                     help="if another run of this board on this storage holds its lease, wait for it "
                          "(default: exit 75)")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    apply_data_paths(args)
    if args.board and args.board_file:
        raise UsageError(f"give a board name ({args.board!r}) or --board-file ({args.board_file!r}), not both")
    board = args.board_file or args.board
    if not board:
        raise UsageError("name a board (see `helmflow list boards`) or pass --board-file")
    from helmflow.cli.runner import request_from, run_board

    return run_board(request_from(args, board=board))
