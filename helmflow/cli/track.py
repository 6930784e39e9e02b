"""``helmflow track``: log a published release to an experiment tracker (an MLflow run, or an offline W&B
run), and what
``helmflow run --track`` / a board's ``tracking:`` do after a run publishes (:mod:`helmflow.tracking`)."""

from __future__ import annotations

import argparse
from typing import Any

from helmflow.cli.options import storage_arg


def report_writer():
    """The release's static report, written into the store as ``helmflow report`` writes it."""
    from helmflow.web.export import export_report

    def write(store: Any, board: str, release_id: str) -> None:
        export_report(store, board, release_id)

    return write


def say(tracked: Any, board: str, release_id: str) -> str:
    from helmflow.tracking import describe

    return describe(tracked, board, release_id)


def cmd_track(args: argparse.Namespace) -> int:
    from helmflow.errors import HelmflowError
    from helmflow.plan.spec import MlflowTracking
    from helmflow.storage import Store
    from helmflow.tracking import check_installed, parse_target, track_release

    target = parse_target(args.to)
    if args.experiment:
        if not isinstance(target, MlflowTracking):
            raise HelmflowError(f"--experiment is an MLflow experiment; a W&B target names its project: {args.to}")
        target.experiment = args.experiment
    check_installed([target])
    store = Store(args.storage)
    from helmflow.bundle import pick_release

    info = pick_release(store, args.board, args.release)
    tracked = track_release(store, info.board, info.release_id, target, report_writer())
    print(say(tracked, info.board, info.release_id))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "track", help="log a published release to an experiment tracker (one MLflow or offline W&B run per release)",
        description="Logs the release as an MLflow run, or as a W&B run written offline (wandb sync uploads it): "
                    "the versions as params (W&B: config), every leaderboard cell (and its interval) as metrics "
                    "(W&B: summary), the leaderboard, release.json and the static report as artifacts. A release "
                    "already logged is not logged again; one a flow run logged without its report gets the report.")
    p.add_argument("board")
    p.add_argument("--release", help="release id (default: the board's latest)")
    p.add_argument("--to", required=True, metavar="mlflow:URI|wandb:PROJECT[:DIR]",
                   help="the tracker: mlflow:http://host:5000 (a tracking server), mlflow:sqlite:///mlflow.db, or "
                        "wandb:PROJECT[:DIR] (an offline W&B run under DIR/wandb/, default the current directory)")
    p.add_argument("--experiment", help="the MLflow experiment (default: the board's tracking setting, else its name)")
    storage_arg(p)
    p.set_defaults(func=cmd_track)
