"""``helmflow fetch-assets perturbations|reeval``: download the data files HELM's perturbations fetch at run
time into the storage root (:mod:`helmflow.perturbations.assets`), or HELM's REEval item difficulties
matched to a board's items (:mod:`helmflow.reeval`)."""

from __future__ import annotations

import argparse
from typing import Any

from helmflow.cli.options import models_file_arg, storage_arg


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "fetch-assets",
        help="download the data files HELM downloads at run time (perturbations, reeval) into the storage root",
        description="perturbations: download HELM's perturbation data files (the SAE->AAVE mapping for `dialect`, "
        "the WordNet synonym table, the person-name list) from $HELMFLOW_ASSETS_URL (default: HELM's public bucket) "
        "into assets/perturbations/ of the storage root, checking each against its pinned sha256, or, where none is "
        "known yet, recording it at the first fetch and checking every later fetch against that record; "
        "with --file, store a local copy instead: one of those files, or a translation table for HEIM's translated "
        "MS-COCO entries (google_translate_zh-CN.json, google_translate_hi.json, google_translate_es.json: a JSON "
        "object of English text -> translation; HELM translates with Google Translate at run time). "
        "reeval: download HELM's item difficulty table (hf://datasets/stair-lab/reeval-difficulty, one split per "
        "scenario) into assets/reeval/, checked the same way, match its rows to the board's items by prompt text "
        "(or a declared instance-id mapping) and store the matched items' difficulties for `run --adaptive`.",
    )
    p.add_argument("kind", choices=["perturbations", "reeval"], help="which assets: perturbations or reeval")
    p.add_argument("--file", action="append", metavar="PATH",
                   help="perturbations: store this local file (repeatable) instead of downloading")
    p.add_argument("--revision", help="reeval: the table's revision on the Hub (default: helmflow's declared one)")
    p.add_argument("--board", default="demo", help="reeval: the board whose items are matched (default: demo)")
    p.add_argument("--scenarios", help="reeval: comma-separated scenario labels or names of the board (default: all)")
    storage_arg(p)
    models_file_arg(p)
    p.set_defaults(func=cmd_fetch_assets)


def cmd_fetch_assets(args: argparse.Namespace) -> int:
    from helmflow.storage import Store

    store = Store(args.storage)
    if args.kind == "reeval":
        if args.file:
            from helmflow.errors import HelmflowError

            raise HelmflowError("--file applies to `fetch-assets perturbations` only")
        return _reeval(args, store)
    if args.revision is not None:
        from helmflow.errors import HelmflowError

        raise HelmflowError("--revision applies to `fetch-assets reeval` only")
    from helmflow.perturbations.assets import base_url, fetch_assets, import_file

    if args.file:
        for path in args.file:
            f = import_file(store, path)
            print(f"{f.asset.filename}: {f.size:,} bytes, sha256 {f.sha256} (imported from {path}) "
                  f"for {f.asset.used_by}")
        return 0
    print(f"fetching from {base_url()} into {store.url('assets/' + args.kind)}/")
    for f in fetch_assets(store):
        pin = "pinned" if f.asset.sha256 else "UNPINNED (HELM publishes no sha256)"
        print(f"{f.asset.filename}: {f.size:,} bytes, sha256 {f.sha256} ({pin}; {f.check}) for {f.asset.used_by}")
    return 0


def _reeval(args: argparse.Namespace, store) -> int:
    from helmflow.plan.compile import prepare
    from helmflow.reeval import REPO, REVISION, REVISION_UNVERIFIED, fetch_reeval

    revision = args.revision or REVISION
    chosen: dict[str, Any] = {}  # only what was given: an unset field keeps the board's own
    if args.scenarios:
        chosen["scenarios"] = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    plan = prepare(args.board, models_file=args.models_file, check_credentials=False, adaptive=False, **chosen)
    if revision == REVISION:
        print(f"PIN UNVERIFIED: {REPO} @ {revision}: {REVISION_UNVERIFIED}")
    print(f"fetching hf://datasets/{REPO}@{revision} into {store.url('assets/reeval')}/")
    for m in fetch_reeval(store, plan, revision):
        if m.sha256 is None:
            print(f"{m.scenario}: no split {m.split!r} in the table; not asked adaptively from it")
            continue
        print(f"{m.scenario}: {m.matched} of {m.pool} items matched by {m.by} ({m.rows} rows in split {m.split!r}), "
              f"sha256 {m.sha256} ({m.check})" + (f", version {m.version}" if m.version else ""))
    return 0
