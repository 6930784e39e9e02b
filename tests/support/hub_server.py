"""A tiny Hugging Face Hub on 127.0.0.1: the endpoints ``HfFileSystem`` uses to read a dataset file.

It exists so the real ``hf://`` code path (huggingface_hub's file system over real HTTP) is exercised
by tests and benchmarks without the internet: point ``HF_ENDPOINT`` at :attr:`HubServer.url`.

Files are served from a folder laid out as ``<root>/<owner>/<name>/<revision>/<path>``. Served:

- ``GET /api/datasets/<repo>/revision/<rev>``   repo and revision info (404 ``RepoNotFound`` /
  ``RevisionNotFound`` otherwise), which ``HfFileSystem.resolve_path`` calls first;
- ``POST /api/datasets/<repo>/paths-info/<rev>`` and ``GET /api/datasets/<repo>/tree/<rev>[/<path>]``;
- ``GET|HEAD /datasets/<repo>/resolve/<rev>/<path>`` with ``Range`` support (404 ``EntryNotFound``).

Files with an ``lfs_suffixes`` suffix are reported as LFS objects (their sha256 in ``lfs.oid``), as
the Hub does for Parquet. A gated repository (``gated={repo: token}``) answers content requests without that bearer token
with 401 ``GatedRepo``, as the Hub does before its terms are accepted. Run standalone with
``python -m tests.support.hub_server ROOT [--port N] [--gate owner/name=TOKEN]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

_REPO = r"(?P<repo>[^/]+/[^/]+)"
_REV = r"(?P<rev>[^/]+)"
_ROUTES = {
    "info": re.compile(rf"^/api/datasets/{_REPO}/revision/{_REV}$"),
    "paths": re.compile(rf"^/api/datasets/{_REPO}/paths-info/{_REV}$"),
    "tree": re.compile(rf"^/api/datasets/{_REPO}/tree/{_REV}(?:/(?P<path>.*))?$"),
    "resolve": re.compile(rf"^/datasets/{_REPO}/resolve/{_REV}/(?P<path>.+)$"),
}


class _HubError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class HubServer:
    """Serve ``root`` as a Hub on ``host:port`` (0 = any free port) in a background thread."""

    def __init__(
        self,
        root: str | Path,
        gated: dict[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        lfs_suffixes: tuple[str, ...] = (".parquet", ".arrow", ".bin"),
    ):
        self.root = Path(root)
        self.gated = dict(gated or {})
        self.lfs_suffixes = lfs_suffixes
        self.requests: list[str] = []  # "METHOD path" of every request, for tests to assert on
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                hub._handle(self, "GET")

            def do_HEAD(self) -> None:
                hub._handle(self, "HEAD")

            def do_POST(self) -> None:
                hub._handle(self, "POST")

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> HubServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="hub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ content
    def add_file(self, repo: str, revision: str, path: str, data: bytes) -> str:
        """Put a file in the served tree; returns its ``hf://`` URL."""
        target = self.root / repo / revision / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return f"hf://datasets/{repo}@{revision}/{path}"

    def _revision_dir(self, repo: str, rev: str) -> Path:
        repo_dir = self.root / repo
        if not repo_dir.is_dir() or ".." in repo.split("/"):
            raise _HubError(404, "RepoNotFound", f"Repository Not Found: {repo}")
        rev_dir = repo_dir / rev
        if rev in (".", "..") or not rev_dir.is_dir():
            raise _HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        return rev_dir

    def _entry(self, rev_dir: Path, path: str) -> Path:
        base, target = rev_dir.resolve(), (rev_dir / path).resolve()
        inside = target == base or base in target.parents  # no climbing out with ".."
        if not inside or not target.exists():
            raise _HubError(404, "EntryNotFound", f"Entry not found: {path}")
        return target

    def _info(self, rev_dir: Path, target: Path) -> dict:
        rel = target.relative_to(rev_dir).as_posix()
        if target.is_dir():
            return {"type": "directory", "oid": hashlib.sha1(rel.encode()).hexdigest(), "path": rel}
        data = target.read_bytes()
        info = {"type": "file", "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(), "size": len(data), "path": rel}
        if target.suffix in self.lfs_suffixes:  # stored through LFS: the Hub reports the content's sha256
            info["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return info

    def _check_access(self, handler: BaseHTTPRequestHandler, repo: str) -> None:
        token = self.gated.get(repo)
        if token is not None and handler.headers.get("authorization") != f"Bearer {token}":
            raise _HubError(
                401, "GatedRepo", f"Access to dataset {repo} is restricted. You must have access to it and be authenticated."
            )

    # ------------------------------------------------------------------ dispatch
    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        path = unquote(parts.path)
        self.requests.append(f"{method} {path}")
        body = b""
        if method == "POST":
            body = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        try:
            for name, pattern in _ROUTES.items():
                match = pattern.match(path)
                if match and (method == "POST") == (name == "paths"):
                    getattr(self, f"_route_{name}")(handler, method, match, parts.query, body)
                    return
            raise _HubError(404, "", f"no route for {method} {path}")
        except _HubError as err:
            payload = json.dumps({"error": err.message}).encode()
            handler.send_response(err.status)
            if err.code:
                handler.send_header("X-Error-Code", err.code)
            handler.send_header("X-Error-Message", err.message)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if method != "HEAD":
                handler.wfile.write(payload)

    def _send_json(self, handler: BaseHTTPRequestHandler, obj: object) -> None:
        payload = json.dumps(obj).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _route_info(self, handler, method, match, query, body) -> None:
        repo, rev = match["repo"], match["rev"]
        rev_dir = self._revision_dir(repo, rev)
        files = sorted(p.relative_to(rev_dir).as_posix() for p in rev_dir.rglob("*") if p.is_file())
        self._send_json(handler, {
            "_id": hashlib.sha1(repo.encode()).hexdigest()[:24],
            "id": repo,
            "author": repo.split("/")[0],
            "sha": rev,
            "private": False,
            "gated": "manual" if repo in self.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": [{"rfilename": f} for f in files],
        })

    def _route_paths(self, handler, method, match, query, body) -> None:
        repo, rev = match["repo"], match["rev"]
        self._check_access(handler, repo)
        rev_dir = self._revision_dir(repo, rev)
        wanted = parse_qs(body.decode()).get("paths", [])
        out = []
        for p in wanted:
            try:
                out.append(self._info(rev_dir, self._entry(rev_dir, p)))
            except _HubError:
                continue  # the Hub leaves missing paths out of the answer
        self._send_json(handler, out)

    def _route_tree(self, handler, method, match, query, body) -> None:
        repo, rev = match["repo"], match["rev"]
        self._check_access(handler, repo)
        rev_dir = self._revision_dir(repo, rev)
        base = self._entry(rev_dir, match["path"] or ".") if match["path"] else rev_dir
        recursive = parse_qs(query).get("recursive", ["False"])[0].lower() == "true"
        children = base.rglob("*") if recursive else base.iterdir()
        self._send_json(handler, [self._info(rev_dir, c) for c in sorted(children)])

    def _route_resolve(self, handler, method, match, query, body) -> None:
        repo, rev = match["repo"], match["rev"]
        self._check_access(handler, repo)
        rev_dir = self._revision_dir(repo, rev)
        target = self._entry(rev_dir, match["path"])
        if target.is_dir():
            raise _HubError(404, "EntryNotFound", f"{match['path']} is a folder")
        data = target.read_bytes()
        status, start, end = 200, 0, len(data)
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", handler.headers.get("range") or "")
        if ranged:
            status, start = 206, min(int(ranged[1]), len(data))
            end = min(int(ranged[2]) + 1, len(data)) if ranged[2] else len(data)
        handler.send_response(status)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(end - start))
        handler.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        handler.send_header("X-Repo-Commit", rev)
        handler.send_header("Accept-Ranges", "bytes")
        if status == 206:
            handler.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(data[start:end])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Serve a folder as a local Hugging Face Hub (datasets only).")
    p.add_argument("root", help="folder laid out as <owner>/<name>/<revision>/<path>")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--gate", action="append", default=[], metavar="OWNER/NAME=TOKEN",
                   help="make a repository gated: content needs this bearer token (repeatable)")
    args = p.parse_args(argv)
    gated = dict(g.split("=", 1) for g in args.gate)
    server = HubServer(args.root, gated=gated, host=args.host, port=args.port)
    print(f"HF_ENDPOINT={server.url}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
