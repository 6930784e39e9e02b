"""``helmflow mirror <scenario> --to URL``: copy a scenario's pinned files to a mirror and verify them.

The copy lands at ``<URL>/<scenario>/<revision>/<filename>``, the layout ``$HELMFLOW_MIRROR`` reads,
so ``export HELMFLOW_MIRROR=<URL>`` makes every later run read the mirror instead of the Hub.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "mirror",
        help="copy a scenario's pinned dataset files to a mirror (folder or s3://) and verify them",
        description="Copy the pinned files of a scenario (read from the Hub, or from the current mirror) to "
        "URL/<scenario>/<revision>/, check their checksums, read the copies back and load them.",
    )
    p.add_argument("scenario", help="scenario name, optionally with parameters: gpqa:subset=diamond")
    p.add_argument("--to", required=True, metavar="URL", help="mirror root: a local folder or s3://bucket/prefix")
    p.set_defaults(func=cmd_mirror)


def cmd_mirror(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from helmflow.datasets import MIRROR_ENV, mirror_scenario
    from helmflow.scenarios import get_scenario, parse_spec
    from helmflow.storage import resolve_root

    name, params = parse_spec(args.scenario)
    scen = get_scenario(name, params)
    if not scen.sources():
        print(f"scenario {name!r} is generated locally: it has no files to mirror")
        return 0
    root = resolve_root(args.to)
    rows = mirror_scenario(scen, root)
    console = Console()
    table = Table("file", "sha256", "copy", title=f"{scen.name} @ {scen.dataset_revision()}")
    for filename, digest, url in rows:
        table.add_row(filename, digest, url)
    console.print(table)
    console.print(f"verified {len(rows)} file(s); use it with: export {MIRROR_ENV}={root}")
    return 0
