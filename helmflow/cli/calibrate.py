"""``helmflow calibrate-items``: item easiness for adaptive runs, fitted from a board's published runs
(the work in :mod:`helmflow.calibration`; nothing is queried)."""

from __future__ import annotations

import argparse

from helmflow.cli.options import models_arg, models_file_arg, storage_arg


def add_parser(sub: argparse._SubParsersAction) -> None:
    cal = sub.add_parser("calibrate-items", help="fit Rasch item easiness from a board's published runs",
                         description="For each scenario of the board: read the main-metric score of every instance "
                                     "in each model's published run, fit the Rasch model P(correct) = "
                                     "sigmoid(ability + z) over the model x item matrix, and store the items' z, "
                                     "versioned by the runs it was fitted from, for `helmflow run --adaptive`.")
    cal.add_argument("board", help="board name or board YAML file")
    models_arg(cal)
    storage_arg(cal)
    models_file_arg(cal)
    cal.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from helmflow.calibration import calibrate_board
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    plan = prepare(args.board, models_file=args.models_file, check_credentials=False, adaptive=False,
                   **({"models": args.models} if args.models else {}))
    store = Store(args.storage)
    for row in calibrate_board(store, plan):
        if row["version"] is None:
            print(f"{row['scenario']}: {row['models']} model(s) with published runs; two are needed, nothing fitted")
        else:
            print(f"{row['scenario']}: {row['items']} items from {row['models']} models, version {row['version']}")
    return 0
