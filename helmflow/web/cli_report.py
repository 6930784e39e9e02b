"""``helmflow report``: write a release's web report as static pages into its ``report/`` folder."""

from __future__ import annotations

import argparse
import sys

from helmflow.cli.options import storage_arg
from helmflow.errors import HelmflowError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="export a release's web report as static pages (no server needed)",
        description="Write the board page, run pages and instance data of a release into "
        "leaderboards/<board>/<release>/report/, viewable from disk or any static host.",
    )
    p.add_argument("board", help="board name")
    p.add_argument("--release", help="release id (default: the board's latest)")
    storage_arg(p)
    p.add_argument("--include-unsafe-text", action="store_true",
                   help="also export the prompts and replies of scenarios with harmful prompts (HELM Safety's); "
                        "by default their pages show ids and scores only")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from helmflow.integrity import CorruptFile
    from helmflow.storage import Store, safe_key
    from helmflow.web.data import NotFound
    from helmflow.web.export import export_report

    store = Store(args.storage)
    try:
        out = export_report(store, safe_key(args.board), args.release, args.include_unsafe_text)
    except NotFound as exc:
        raise HelmflowError(f"{exc} in {store.root}") from None
    except CorruptFile as exc:  # named, and nothing of it exported
        print(f"helmflow: error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out.files} files; open {out.url}")
    for line in out.refused:  # the page shows a broken image there; say which and why, and fail
        print(f"helmflow: error: {line}", file=sys.stderr)
    if out.refused:
        print(f"helmflow: error: {len(out.refused)} image(s) were not exported: the report is incomplete",
              file=sys.stderr)
        return 1
    return 0
