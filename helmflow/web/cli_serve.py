"""``helmflow serve``: browse the leaderboards in a storage root in a local web app."""

from __future__ import annotations

import argparse

from helmflow.cli.options import storage_arg


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="browse leaderboards, runs and every prompt and answer in a local web app",
        description="Serve the web report live from a storage root (read-only).",
    )
    storage_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from helmflow import layout
    from helmflow.storage import Store
    from helmflow.web.app import create_app

    store = Store(args.storage)
    if not store.exists(layout.LEADERBOARDS):
        print(f"helmflow: note: {store.root} has no leaderboards yet (run `helmflow run demo`)")
    print(f"serving {store.root} at http://{args.host}:{args.port}/", flush=True)
    uvicorn.run(create_app(store.root), host=args.host, port=args.port, log_level="warning")
    return 0
