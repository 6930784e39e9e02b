"""``helmflow serve``: browse the leaderboards in a storage root in a local web app."""

from __future__ import annotations

import argparse
import errno
import socket

from helmflow.cli.options import storage_arg
from helmflow.errors import HelmflowError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="browse leaderboards, runs and every prompt and answer in a local web app",
        description="Serve the web report live from a storage root (read-only).",
    )
    storage_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port, printed)")
    p.set_defaults(func=cmd_serve)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or one line saying why not (port taken, unknown host).

    Bound before anything is printed, so "serving at URL" is true when it is read."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise HelmflowError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        hint = " (another server is using it: pass --port)" if exc.errno == errno.EADDRINUSE else ""
        raise HelmflowError(f"cannot serve on {host}:{port}: {exc.strerror or exc}{hint}") from None
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from helmflow import layout
    from helmflow.storage import Store
    from helmflow.web.app import create_app

    store = Store(args.storage)
    app = create_app(store.root)
    sock = bind(args.host, args.port)
    if not store.exists(layout.LEADERBOARDS):
        print(f"helmflow: note: {store.root} has no leaderboards yet (run `helmflow run demo`)")
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {store.root} at http://{shown}:{port}/", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0
