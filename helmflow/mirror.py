"""``helmflow mirror <scenario|board> --to URL``: copy pinned dataset files to a mirror and verify them.

The copy lands at ``<URL>/<scenario>/<revision>/<filename>``, the layout ``$HELMFLOW_MIRROR`` reads,
so ``export HELMFLOW_MIRROR=<URL>`` makes every later run read the mirror instead of the source.
A board name mirrors every scenario entry of the board (``helmflow mirror lite --to DIR``).
Sources whose hash upstream never published (``sha256_unknown``) are recorded at this first fetch;
the command prints the pin to declare for each.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "mirror",
        help="copy a scenario's or a board's pinned dataset files to a mirror (folder or s3://) and verify them",
        description="Copy the pinned files of a scenario, or of every scenario of a board (read from the source, or "
        "from the current mirror) to URL/<scenario>/<revision>/, check their checksums, read the copies back and "
        "load them. Files with no declared sha256 get theirs recorded, and the pin to declare is printed.",
    )
    p.add_argument("scenario", help="scenario name, optionally with parameters (gpqa:subset=diamond), or a board name (lite)")
    p.add_argument("--to", required=True, metavar="URL", help="mirror root: a local folder or s3://bucket/prefix")
    p.set_defaults(func=cmd_mirror)


def _targets(spec: str):
    """The scenarios to mirror: the named scenario, else each distinct scenario entry of the named board."""
    from helmflow.board import BoardError, board_names, load_board
    from helmflow.scenarios import SCENARIOS, get_scenario, parse_spec

    name, params = parse_spec(spec)
    if name in SCENARIOS or name not in board_names():
        return [get_scenario(name, params)]
    if params:
        raise BoardError(f"board {name!r} takes no parameters here; mirror one scenario with <scenario>:k=v")
    seen, out = set(), []
    for entry in load_board(name).scenarios:
        scen = get_scenario(entry.name, entry.params)
        if scen.spec_string not in seen:
            seen.add(scen.spec_string)
            out.append(scen)
    return out


def cmd_mirror(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from helmflow.datasets import MIRROR_ENV, mirror_scenario, pin_line
    from helmflow.scenarios.base import UNPINNED
    from helmflow.storage import resolve_root

    targets = _targets(args.scenario)
    root = resolve_root(args.to)
    console = Console()
    total, to_pin = 0, []
    for scen in targets:
        if not scen.sources():
            print(f"scenario {scen.name!r} is generated locally: it has no files to mirror")
            continue
        rows = mirror_scenario(scen, root)
        table = Table("file", "sha256", "copy", title=f"{scen.spec_string} @ {scen.dataset_revision()}")
        unknown = {s.filename: s for s in scen.sources() if s.sha256_unknown or (s.sha256 is None and scen.dataset_revision() == UNPINNED)}
        for filename, digest, url in rows:
            table.add_row(filename + (" (recorded)" if filename in unknown else ""), digest, url)
            if filename in unknown:
                to_pin.append(pin_line(scen, unknown[filename], digest))
        console.print(table)
        total += len(rows)
    verified = total - len(to_pin)
    console.print(f"verified {verified} file(s), recorded {len(to_pin)} at first fetch; use it with: export {MIRROR_ENV}={root}",
                  soft_wrap=True)
    if to_pin:
        console.print("No pin was declared for these files (upstream publishes none); to pin them by content, declare:",
                      soft_wrap=True)
        for line in dict.fromkeys(to_pin):
            console.print(f"  {line}", soft_wrap=True, markup=False)
    return 0
