"""A tiny Hugging Face Hub on 127.0.0.1: the endpoints ``HfFileSystem`` uses to read a dataset file, and
those ``HfApi.create_repo`` / ``HfApi.create_commit`` use to write one.

It exists so the real ``hf://`` code path (huggingface_hub's file system over real HTTP) and the real
upload path are exercised by tests and benchmarks without the internet: point ``HF_ENDPOINT`` at
:attr:`HubServer.url`.

Files are served from a folder laid out as ``<root>/<owner>/<name>/<revision>/<path>``. Served:

- ``GET /api/datasets/<repo>[/revision/<rev>]``   repo and revision info (``main`` when none is named) (404 ``RepoNotFound`` /
  ``RevisionNotFound`` otherwise), which ``HfFileSystem.resolve_path`` calls first;
- ``POST /api/datasets/<repo>/paths-info/<rev>`` and ``GET /api/datasets/<repo>/tree/<rev>[/<path>]``;
- ``GET|HEAD /datasets/<repo>/resolve/<rev>/<path>`` with ``Range`` support (404 ``EntryNotFound``).

Written (with ``write_token`` set, each request needs ``Authorization: Bearer <write_token>``, else 401):

- ``POST /api/repos/create`` (``{name, organization, type, visibility}``; 409 with the repo's ``url`` when it
  exists) and ``POST /api/validate-yaml`` (a README's front matter must be a YAML mapping);
- ``POST /api/<datasets|models>/<repo>/preupload/<rev>``: each file's ``uploadMode`` (``lfs`` for an
  ``lfs_suffixes`` suffix or more than 10 MB, else ``regular``) and the ``oid`` of the file already at that
  path (the sha256 of an LFS file, the git blob sha1 of a regular one), which the client compares to skip
  unchanged files;
- ``POST /<datasets/>?<repo>.git/info/lfs/objects/batch``: git LFS's batch API with the ``basic`` transfer
  (an object already stored gets no ``actions``), ``PUT /lfs-upload/<oid>`` (refused unless the bytes hash
  to ``oid``) and the ``verify`` action;
- ``POST /api/<datasets|models>/<repo>/commit/<rev>``: the ndjson commit (``header``, ``file`` base64,
  ``lfsFile`` by oid, ``deletedFile``, ``deletedFolder``). A commit writes the branch folder and a
  snapshot under the new commit's sha, so both revisions read back; with ``create_pr=1`` it opens a pull
  request instead (:attr:`HubServer.pulls`), leaving the branch as it was.

Huggingface_hub uploads through Xet when ``hf_xet`` is installed; this double speaks git LFS only, so a
test that uploads sets ``HF_HUB_DISABLE_XET=1`` (the client's own switch back to LFS). Model repositories
(``add_model_repo``) live under ``<root>/.models/``.

Files with an ``lfs_suffixes`` suffix are reported as LFS objects (their sha256 in ``lfs.oid``), as
the Hub does for Parquet. A gated repository (``gated={repo: token}``) answers content requests without that bearer token
with 401 ``GatedRepo``, as the Hub does before its terms are accepted. Run standalone with
``python -m tests.support.hub_server ROOT [--port N] [--gate owner/name=TOKEN]``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

_REPO = r"(?P<repo>[^/]+/[^/]+)"
_REV = r"(?P<rev>[^/]+)"
_ROUTES = {
    "info": re.compile(rf"^/api/datasets/{_REPO}(?:/revision/{_REV})?$"),
    "paths": re.compile(rf"^/api/datasets/{_REPO}/paths-info/{_REV}$"),
    "tree": re.compile(rf"^/api/datasets/{_REPO}/tree/{_REV}(?:/(?P<path>.*))?$"),
    "resolve": re.compile(rf"^/datasets/{_REPO}/resolve/{_REV}/(?P<path>.+)$"),
}
_KIND = r"(?P<kind>datasets|models)"
_WRITES = {  # (method, route): the endpoints HfApi.create_repo and HfApi.create_commit call
    ("POST", "create"): re.compile(r"^/api/repos/create$"),
    ("POST", "validate_yaml"): re.compile(r"^/api/validate-yaml$"),
    ("POST", "preupload"): re.compile(rf"^/api/{_KIND}/{_REPO}/preupload/{_REV}$"),
    ("POST", "commit"): re.compile(rf"^/api/{_KIND}/{_REPO}/commit/{_REV}$"),
    ("POST", "lfs_batch"): re.compile(r"^/(?:(?P<kind>datasets)/)?(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch$"),
    ("POST", "lfs_verify"): re.compile(r"^/(?:(?P<kind>datasets)/)?(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/verify$"),
    ("PUT", "lfs_upload"): re.compile(r"^/lfs-upload/(?P<oid>[0-9a-f]{64})$"),
}
LFS_THRESHOLD = 10 * 1024 * 1024  # the Hub stores a file above 10 MB through LFS whatever its name


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
        write_token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        lfs_suffixes: tuple[str, ...] = (".parquet", ".arrow", ".bin"),
    ):
        self.root = Path(root)
        self.gated = dict(gated or {})
        self.lfs_suffixes = lfs_suffixes
        self.requests: list[str] = []  # "METHOD path" of every request, for tests to assert on
        self.write_token = write_token
        self.private: set[str] = set()  # repos created private
        self.lfs: dict[str, bytes] = {}  # LFS objects uploaded, by sha256
        self.commits: dict[str, list[str]] = {}  # "<kind>/<repo>" -> commit shas, oldest first
        self.pulls: dict[str, list[dict[str, bytes]]] = {}  # "<kind>/<repo>" -> each pull request's added files
        self.authorizations: list[str] = []  # the Authorization header of every request that had one
        self._lock = threading.Lock()
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

            def do_PUT(self) -> None:
                hub._handle(self, "PUT")

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

    def add_model_repo(self, repo: str) -> None:
        """A model repository with an empty ``main``, for pull requests to be opened on."""
        (self._repo_dir("models", repo) / "main").mkdir(parents=True, exist_ok=True)

    def _repo_dir(self, kind: str, repo: str) -> Path:
        if ".." in repo.split("/"):
            raise _HubError(404, "RepoNotFound", f"Repository Not Found: {repo}")
        return self.root / repo if kind == "datasets" else self.root / ".models" / repo

    def _revision_dir(self, repo: str, rev: str, kind: str = "datasets") -> Path:
        repo_dir = self._repo_dir(kind, repo)
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

    def _head(self, repo: str, rev: str, kind: str = "datasets") -> str:
        """The sha a revision answers with: a branch's newest commit, else the revision as asked."""
        shas = self.commits.get(f"{kind}/{repo}")
        return shas[-1] if shas and rev == "main" else rev

    def _check_write(self, handler: BaseHTTPRequestHandler) -> None:
        if self.write_token is not None and handler.headers.get("authorization") != f"Bearer {self.write_token}":
            raise _HubError(401, "", "Invalid credentials in Authorization header")

    # ------------------------------------------------------------------ dispatch
    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        path = unquote(parts.path)
        self.requests.append(f"{method} {path}")
        if handler.headers.get("authorization"):
            self.authorizations.append(handler.headers["authorization"])
        body = b""
        if method in ("POST", "PUT"):
            body = self._read_body(handler)
        try:
            for (verb, name), pattern in _WRITES.items():
                match = pattern.match(path)
                if match and verb == method:
                    if name != "lfs_upload":  # a presigned storage URL: no Hub token is sent there
                        self._check_write(handler)
                    with self._lock:
                        getattr(self, f"_route_{name}")(handler, match, parse_qs(parts.query), body)
                    return
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

    @staticmethod
    def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
        if handler.headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while size := int(handler.rfile.readline().strip() or b"0", 16):
                out += handler.rfile.read(size)
                handler.rfile.readline()
            handler.rfile.readline()
            return out
        return handler.rfile.read(int(handler.headers.get("content-length") or 0))

    def _send_json(self, handler: BaseHTTPRequestHandler, obj: object, status: int = 200) -> None:
        payload = json.dumps(obj).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _route_info(self, handler, method, match, query, body) -> None:
        repo, rev = match["repo"], match["rev"] or "main"
        rev_dir = self._revision_dir(repo, rev)
        files = sorted(p.relative_to(rev_dir).as_posix() for p in rev_dir.rglob("*") if p.is_file())
        self._send_json(handler, {
            "_id": hashlib.sha1(repo.encode()).hexdigest()[:24],
            "id": repo,
            "author": repo.split("/")[0],
            "sha": self._head(repo, rev),
            "private": repo in self.private,
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


    # ------------------------------------------------------------------ writes
    def _route_create(self, handler, match, query, body) -> None:
        spec = json.loads(body or b"{}")
        kind = {"dataset": "datasets", "model": "models", None: "models"}.get(spec.get("type"))
        name, org = spec.get("name") or "", spec.get("organization")
        if kind is None or not org or not re.fullmatch(r"[\w.-]+", name) or not re.fullmatch(r"[\w.-]+", org):
            raise _HubError(400, "", f"invalid repo: {spec!r}")
        repo = f"{org}/{name}"
        url = f"{self.url}/{'datasets/' if kind == 'datasets' else ''}{repo}"
        main = self._repo_dir(kind, repo) / "main"
        if main.is_dir():
            self._send_json(handler, {"error": "You already created this repo", "url": url}, status=409)
            return
        main.mkdir(parents=True)
        if spec.get("visibility") == "private" or spec.get("private") is True:
            self.private.add(repo)
        self._send_json(handler, {"url": url, "name": repo, "id": hashlib.sha1(repo.encode()).hexdigest()[:24]})

    def _route_validate_yaml(self, handler, match, query, body) -> None:
        import yaml

        content = json.loads(body).get("content", "")
        front = re.match(r"^---\n(.*?)\n---\n", content, re.S)
        errors = []
        if front:
            try:
                meta = yaml.safe_load(front[1])
                if not isinstance(meta, dict):
                    errors.append({"message": "the metadata must be a YAML mapping"})
            except yaml.YAMLError as exc:
                errors.append({"message": f"invalid YAML: {exc}"})
        self._send_json(handler, {"errors": errors, "warnings": []}, status=400 if errors else 200)

    def _oid(self, path: Path, lfs: bool) -> str:
        data = path.read_bytes()
        return hashlib.sha256(data).hexdigest() if lfs else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def _is_lfs(self, path: str, size: int) -> bool:
        return path.endswith(self.lfs_suffixes) or size > LFS_THRESHOLD

    def _route_preupload(self, handler, match, query, body) -> None:
        rev_dir = self._revision_dir(match["repo"], match["rev"], match["kind"])
        out = []
        for f in json.loads(body)["files"]:
            lfs = self._is_lfs(f["path"], int(f["size"]))
            here = rev_dir / f["path"]
            inside = rev_dir.resolve() in here.resolve().parents
            out.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                        "oid": self._oid(here, lfs) if inside and here.is_file() else None})
        self._send_json(handler, {"files": out, "commitOid": self._head(match["repo"], match["rev"], match["kind"])})

    def _route_lfs_batch(self, handler, match, query, body) -> None:
        kind = "datasets" if match["kind"] else "models"
        self._revision_dir(match["repo"], "main", kind)  # the repository exists
        request = json.loads(body)
        if request.get("operation") != "upload" or "basic" not in request.get("transfers", ["basic"]):
            raise _HubError(400, "", "only basic uploads are served here")
        prefix = f"{self.url}/{'datasets/' if match['kind'] else ''}{match['repo']}.git/info/lfs/objects"
        objects = []
        for obj in request["objects"]:
            entry: dict = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.lfs:
                entry["actions"] = {"upload": {"href": f"{self.url}/lfs-upload/{obj['oid']}", "expires_in": 900},
                                    "verify": {"href": f"{prefix}/verify", "expires_in": 900}}
            objects.append(entry)
        self._send_json(handler, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"})

    def _route_lfs_upload(self, handler, match, query, body) -> None:
        if hashlib.sha256(body).hexdigest() != match["oid"]:
            raise _HubError(400, "", "the uploaded bytes do not hash to the object's oid")
        self.lfs[match["oid"]] = body
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.send_header("ETag", f'"{match["oid"][:32]}"')
        handler.end_headers()

    def _route_lfs_verify(self, handler, match, query, body) -> None:
        obj = json.loads(body)
        if len(self.lfs.get(obj["oid"], b"")) != obj["size"] or obj["oid"] not in self.lfs:
            raise _HubError(404, "", f"object {obj['oid']} was not uploaded")
        self._send_json(handler, {"message": "Everything good"})

    def _route_commit(self, handler, match, query, body) -> None:
        kind, repo, rev = match["kind"], match["repo"], match["rev"]
        rev_dir = self._revision_dir(repo, rev, kind)
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise _HubError(400, "", "a commit starts with its header")
        files: dict[str, bytes | None] = {}  # path -> content, None: deleted (a folder ends with "/")
        for line in lines[1:]:
            value = line["value"]
            path = value["path"]
            if path.startswith("/") or ".." in path.split("/"):
                raise _HubError(400, "", f"invalid path: {path}")
            if line["key"] == "file":
                files[path] = base64.b64decode(value["content"])
            elif line["key"] == "lfsFile":
                if value["oid"] not in self.lfs:
                    raise _HubError(400, "", f"LFS object {value['oid']} for {path} was never uploaded")
                files[path] = self.lfs[value["oid"]]
            elif line["key"] in ("deletedFile", "deletedFolder"):
                files[path.rstrip("/") + ("/" if line["key"] == "deletedFolder" else "")] = None
            else:
                raise _HubError(400, "", f"unknown commit operation {line['key']!r}")
        key = f"{kind}/{repo}"
        parent = self._head(repo, rev, kind)
        sha = hashlib.sha1(json.dumps([parent, len(self.commits.get(key, [])), body.decode()]).encode()).hexdigest()
        if query.get("create_pr") == ["1"]:
            pulls = self.pulls.setdefault(key, [])
            pulls.append({p: c for p, c in files.items() if c is not None})
            url = f"{self.url}/{'datasets/' if kind == 'datasets' else ''}{repo}/discussions/{len(pulls)}"
            base = url.rsplit("/discussions/", 1)[0]
            self._send_json(handler, {"commitUrl": f"{base}/commit/{sha}", "commitOid": sha, "pullRequestUrl": url})
            return
        for path, content in files.items():
            target = rev_dir / path
            if content is None:
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.is_file():
                    target.unlink()
                else:
                    raise _HubError(404, "EntryNotFound", f"A file with this name doesn't exist: {path}")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        shutil.copytree(rev_dir, rev_dir.parent / sha)  # the commit's own revision reads back too
        self.commits.setdefault(key, []).append(sha)
        url = f"{self.url}/{'datasets/' if kind == 'datasets' else ''}{repo}"
        self._send_json(handler, {"commitUrl": f"{url}/commit/{sha}", "commitOid": sha, "pullRequestUrl": None})


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
