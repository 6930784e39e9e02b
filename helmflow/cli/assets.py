"""``helmflow fetch-assets perturbations``: download the data files HELM's perturbations fetch at run
time into the storage root (:mod:`helmflow.perturbations.assets`)."""

from __future__ import annotations

import argparse

from helmflow.cli.options import storage_arg


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "fetch-assets",
        help="download the data files HELM downloads at run time (perturbations) into the storage root",
        description="Download HELM's perturbation data files (the SAE->AAVE mapping for `dialect`, the WordNet "
        "synonym table, the person-name list) from $HELMFLOW_ASSETS_URL (default: HELM's public bucket) into "
        "assets/perturbations/ of the storage root, checking each against its pinned sha256, or, where none is "
        "known yet, recording it at the first fetch and checking every later fetch against that record.",
    )
    p.add_argument("kind", choices=["perturbations"], help="which assets: perturbations")
    storage_arg(p)
    p.set_defaults(func=cmd_fetch_assets)


def cmd_fetch_assets(args: argparse.Namespace) -> int:
    from helmflow.perturbations.assets import base_url, fetch_assets
    from helmflow.storage import Store

    store = Store(args.storage)
    print(f"fetching from {base_url()} into {store.url('assets/' + args.kind)}/")
    for f in fetch_assets(store):
        pin = "pinned" if f.asset.sha256 else "UNPINNED (HELM publishes no sha256)"
        print(f"{f.asset.filename}: {f.size:,} bytes, sha256 {f.sha256} ({pin}; {f.check}) for {f.asset.used_by}")
    return 0
