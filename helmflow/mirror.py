"""``helmflow mirror <scenario|board> --to URL``: copy pinned dataset files to a mirror and verify them.

The copy lands at ``<URL>/<scenario>/<revision>/<filename>``, the layout ``$HELMFLOW_MIRROR`` reads,
so ``export HELMFLOW_MIRROR=<URL>`` makes every later run read the mirror instead of the source.
A board name mirrors every scenario entry of the board (``helmflow mirror lite --to DIR``).
Sources whose hash upstream never published (``sha256_unknown``) are recorded at this first fetch;
the command prints the pin to declare for each. A pinned revision that was never checked against
its source (``Scenario.pin_unverified``, or ``unpinned``) is said once, with how to verify or pin it.
For a board, a scenario that fails does not stop the others (exit 1 if any failed).
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
    p.add_argument("scenario",
                   help="scenario name, optionally with parameters (gpqa:subset=diamond), or a board name (lite)")
    p.add_argument("--to", required=True, metavar="URL", help="mirror root: a local folder or s3://bucket/prefix")
    p.set_defaults(func=cmd_mirror)


def _targets(spec: str):
    """The scenarios to mirror: each distinct scenario entry of the named board, else the named scenario (a
    name that is both, as ``mmlu``, is the board; ``mmlu:subject=anatomy`` the one scenario)."""
    from helmflow.plan.spec import BoardError, board_names, load_board
    from helmflow.scenarios import SCENARIOS, get_scenario, parse_spec

    name, params = parse_spec(spec)
    if name not in board_names() or (params and name in SCENARIOS):
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


def pin_note(scen) -> str | None:
    """One paragraph on a revision not known to be the right one, and how to check it; None if it is."""
    from helmflow.datasets import MIRROR_MANIFEST
    from helmflow.scenarios.base import UNPINNED

    revision = scen.dataset_revision()
    repo = scen.HUB_REPO or scen.GIT_REPO or "its source"
    if revision == UNPINNED:
        return (f"PIN UNVERIFIED: {scen.name}: no revision of {repo} could be verified, so none is pinned and it runs "
                f"from a mirror only (copying a mirror records its files' sha256: the pins to declare are printed "
                f"below). To pin a revision instead: pick a commit of {repo}, download its files at that commit into "
                f"<mirror>/{scen.name}/{UNPINNED}/ (e.g. `huggingface-cli download {repo} --repo-type dataset "
                f"--revision <commit> --local-dir ...`), then set HUB_REVISION = \"<commit>\" in the scenario module "
                f"and run `helmflow mirror` again, which checks every file against the Hub at that commit.")
    if not scen.pin_unverified:
        return None
    return (f"PIN UNVERIFIED: {scen.name} @ {revision}: {scen.pin_unverified}. To verify: `helmflow mirror` reads "
            f"every file at that revision from the Hub (so the revision exists and holds these files) and records "
            f"each file's sha256 in <mirror>/{scen.name}/{revision}/{MIRROR_MANIFEST}; check in {repo}'s commit "
            f"history that {revision[:12]} is the commit you mean. Runs through that mirror are checked against "
            f"those hashes, and every storage records each file's sha256 at its first download and refuses a "
            f"different file for the same revision later.")


def cmd_mirror(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from helmflow.datasets import MIRROR_ENV, gated_missing, mirror_scenario, pin_line
    from helmflow.errors import HelmflowError
    from helmflow.scenarios.base import UNPINNED
    from helmflow.storage import resolve_root
    from helmflow.terminal import print_table

    targets = _targets(args.scenario)
    root = resolve_root(args.to)
    console = Console()
    total, to_pin, failed, noted = 0, [], [], set()
    for scen in targets:
        if not scen.sources():
            print(f"scenario {scen.name!r} is generated locally: it has no files to mirror")
            continue
        gated = gated_missing(scen)
        if gated:  # a credential-gated file on no mirror here cannot be fetched: named, not a failure
            for line in gated:
                console.print(f"[yellow]not mirrored: {escape(scen.name)}: {escape(line)}[/]", soft_wrap=True)
            continue
        note = pin_note(scen)
        if note and (scen.name, scen.dataset_revision()) not in noted:
            noted.add((scen.name, scen.dataset_revision()))
            console.print(f"[bold yellow]{escape(note)}[/]", soft_wrap=True)
        try:
            rows = mirror_scenario(scen, root)
        except HelmflowError as exc:
            if len(targets) == 1:
                raise
            console.print(f"[red]{escape(str(exc))}[/]", soft_wrap=True)
            failed.append(scen.name)
            continue
        table = Table("file", "sha256", "copy", title=f"{scen.spec_string} @ {scen.dataset_revision()}")
        unknown = {s.filename: s for s in scen.sources()
                   if s.sha256_unknown or (s.sha256 is None and scen.dataset_revision() == UNPINNED)}
        for filename, digest, url in rows:
            table.add_row(filename + (" (recorded)" if filename in unknown else ""), digest, url)
            if filename in unknown:
                to_pin.append(pin_line(scen, unknown[filename], digest))
        print_table(console, table, names=(0, 1, 2))
        total += len(rows)
    verified = total - len(to_pin)
    console.print(f"verified {verified} file(s), recorded {len(to_pin)} at first fetch; "
                  f"use it with: export {MIRROR_ENV}={root}", soft_wrap=True)
    if to_pin:
        console.print("No pin was declared for these files (upstream publishes none); to pin them by content, declare:",
                      soft_wrap=True)
        for line in dict.fromkeys(to_pin):
            console.print(f"  {line}", soft_wrap=True, markup=False)
    if failed:
        counts = {name: failed.count(name) for name in dict.fromkeys(failed)}
        listed = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.items())
        console.print(f"[red]not mirrored ({len(failed)} of {len(targets)}): {escape(listed)}[/]", soft_wrap=True)
        return 1
    return 0
