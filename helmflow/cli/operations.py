"""``helmflow lineage``, ``retry`` and ``compact``: the parsers here, the work in :mod:`helmflow.operations`
(imported when a command runs, so ``helmflow --help`` loads no storage or Parquet code)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from helmflow.cli.options import ephemeral_arg, storage_arg


def _run(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from helmflow import operations

        return getattr(operations, name)(args)

    return run


def add_parser(sub: argparse._SubParsersAction) -> None:
    lin = sub.add_parser("lineage", help="where each leaderboard number came from",
                         description="Per cell: score -> run -> dataset revision and prompt/model/metric versions "
                                     "-> Prefect flow and task runs.")
    lin.add_argument("board")
    lin.add_argument("--release", help="release id (default: the latest, else the latest partial)")
    lin.add_argument("--scenario", action="append", default=[], metavar="LABEL",
                     help="only this scenario's cells (repeatable; the labels `helmflow show` lists)")
    lin.add_argument("--model", action="append", default=[], metavar="DEPLOYMENT",
                     help="only this deployment's cells (repeatable)")
    lin.add_argument("--cell", action="append", default=[], metavar="'LABEL x DEPLOYMENT'",
                     help="only this cell, written as lineage prints it (repeatable)")
    storage_arg(lin)
    lin.set_defaults(func=_run("cmd_lineage"))

    ret = sub.add_parser("retry", help="retry a finished flow run: say what will rerun, then do it",
                         description="Re-executes only what failed: every task whose result is persisted is Cached.")
    ret.add_argument("flow_run_id")
    ret.add_argument("--dry-run", action="store_true", help="only say what would rerun")
    ret.add_argument("--storage", help="the storage root the run wrote to, when the flow run does not record it "
                                       "(a deployment run that took its worker's $HELMFLOW_STORAGE)")
    ephemeral_arg(ret)
    ret.set_defaults(func=_run("cmd_retry"))

    com = sub.add_parser("compact", help="remove stale temporaries and merge journal parts",
                         description="Removes temporaries (killed writers leave them; readers ignore them) "
                                     "and compacts the request journal.")
    storage_arg(com)
    com.add_argument("--older-than", type=float, default=3600.0, metavar="SECONDS",
                     help="only temporaries at least this old (default 3600: never a live writer's)")
    com.set_defaults(func=_run("cmd_compact"))
