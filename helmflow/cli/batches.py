"""``helmflow batches list|cancel``: the provider batches a storage root is waiting on (:mod:`helmflow.batches`).

A run that stops while its batches are still running (Ctrl-C, a kill, a lapsed lease) leaves them running at
the provider, recorded under ``batches/<deployment>/``; the next run of the same command collects them. ``list``
shows those records; ``cancel`` asks the provider to stop them. A cancelled batch stays recorded: the next run
keeps the lines it finished and sends the rest once more, so nothing finished is lost or paid twice.
"""

from __future__ import annotations

import argparse

from helmflow.cli.options import models_file_arg, storage_arg


def add_parser(sub) -> None:
    p = sub.add_parser(
        "batches", help="list or cancel the provider batches a storage root is waiting on",
        description="Provider batches (`batch: true` deployments, `run --batch`) that a run left running: a run that "
                    "stops before its batches end leaves them at the provider, and the next run of the same command "
                    "collects them. `list` shows them; `cancel` stops them at the provider (the next run keeps what "
                    "they finished and sends the rest once more).")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="one line per batch still recorded as running")
    storage_arg(listing)
    listing.set_defaults(func=cmd_list)
    cancel = actions.add_parser("cancel", help="ask the provider to cancel the recorded batches")
    storage_arg(cancel)
    models_file_arg(cancel)
    cancel.add_argument("--deployment", action="append", metavar="NAME",
                        help="only this deployment's batches (repeatable; default: every deployment's)")
    cancel.add_argument("--batch", action="append", metavar="ID", help="only this batch (repeatable)")
    cancel.set_defaults(func=cmd_cancel)


def live_records(store) -> list:
    """Every live (or submitting) batch record under the storage root, by deployment then batch id."""
    from helmflow import layout
    from helmflow.batches import BatchRecord

    out = []
    for key in store.find(layout.BATCHES_ROOT):
        # batches/<deployment>/<id>.json; an ended batch's record is under batches/<deployment>/ended/
        if key.endswith(".json") and key.count("/") == 2:
            out.append(BatchRecord.model_validate(store.read_json(key)))
    return sorted(out, key=lambda r: (r.deployment, r.batch_id))


def _line(rec) -> str:
    status = f", provider status {rec.status}" if rec.status else ""
    return (f"{rec.deployment}  {rec.batch_id}  {len(rec.hashes):,} request(s), submitted {rec.submitted_at}"
            f"{status}{' (being submitted)' if rec.state == 'submitting' else ''}")


def cmd_list(args: argparse.Namespace) -> int:
    from helmflow.storage import Store

    store = Store(args.storage)
    records = live_records(store)
    if not records:
        print(f"no provider batch is recorded as running under {store.root}")
        return 0
    for rec in records:
        print(_line(rec))
    print(f"{len(records)} batch(es) running: run the command that started them again to collect them, "
          f"or `helmflow batches cancel` to stop them")
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    from helmflow.aio import run_io
    from helmflow.cli.options import UsageError
    from helmflow.clients import load_deployments, make_client
    from helmflow.clients.base import ClientError
    from helmflow.storage import Store

    store = Store(args.storage)
    records = [r for r in live_records(store) if r.state == "live"]  # a submitting one has no provider id yet
    if args.deployment:
        records = [r for r in records if r.deployment in set(args.deployment)]
    if args.batch:
        unknown = sorted(set(args.batch) - {r.batch_id for r in records})
        if unknown:
            raise UsageError(f"--batch {', '.join(unknown)}: no such running batch under {store.root} "
                             f"(`helmflow batches list` shows them)")
        records = [r for r in records if r.batch_id in set(args.batch)]
    if not records:
        print(f"no provider batch to cancel under {store.root}")
        return 0
    deployments = load_deployments(args.models_file)
    missing = sorted({r.deployment for r in records} - set(deployments))
    if missing:
        raise UsageError(f"deployment(s) {', '.join(missing)} not known: pass the --models-file the run used")
    failed = 0
    for rec in records:
        client = make_client(deployments[rec.deployment], store)
        try:
            run_io(client.batch_cancel(rec.batch_id))
        except ClientError as exc:
            failed += 1
            print(f"{rec.deployment}  {rec.batch_id}: not cancelled: {exc}")
            continue
        finally:
            run_io(client.aclose())
        print(f"{rec.deployment}  {rec.batch_id}: cancelled ({len(rec.hashes):,} request(s))")
    print(f"{len(records) - failed} of {len(records)} batch(es) cancelled: the next run of the same command keeps "
          f"the lines they finished and sends the rest once more")
    return 1 if failed else 0
