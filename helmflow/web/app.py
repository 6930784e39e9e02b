"""``helmflow serve``: the report as a live Starlette app over a storage root.

Read-only, and nothing outside the storage root can be named: every path segment must already be
a storage-safe key, raw files are limited to a release's and a run's own published files, and every
path is resolved by the store, so a planted symlink out of the root is a 404 (:meth:`Store.inside`).
"""

from __future__ import annotations

import re
import threading

import pyarrow as pa
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from helmflow.integrity import CorruptFile
from helmflow.storage import OutsideRoot, Store
from helmflow.web import pages
from helmflow.web.data import NotFound, Reports, check_name

_KEY = r"[A-Za-z0-9=+-][A-Za-z0-9._=+-]*"
PUBLISHED_FILES = re.compile(
    rf"^(runs/{_KEY}/(run\.json|(requests|completions|stats|summary|annotations)\.parquet)"
    rf"|leaderboards/{_KEY}/{_KEY}/(release\.json|leaderboard\.parquet|runs\.parquet))$"
)
SECURITY_HEADERS = {
    # no inline script or style anywhere, so the policy can forbid both: hostile text cannot run
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every response (static files, redirects, 405s,
    error pages), unless the response sets one itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(storage: str | None = None) -> Starlette:
    reports = Reports(Store(storage))

    def html(body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(body, status, headers=SECURITY_HEADERS)

    def js(body: str) -> Response:
        return Response(body, media_type="text/javascript; charset=utf-8", headers=SECURITY_HEADERS)

    def release_and_run(request: Request):
        p = request.path_params
        release = reports.release(p["board"], p["release"])
        run_id = check_name(p["run_id"])
        if run_id not in release.manifest.run_ids:
            raise NotFound(f"release {release.release_id} has no run {run_id}")
        return release, reports.run(run_id)

    def home(request: Request) -> Response:
        return html(pages.home_html(reports))

    def board_latest(request: Request) -> Response:
        board = request.path_params["board"]
        return RedirectResponse(f"/boards/{board}/{reports.latest(board)}/")

    def board(request: Request) -> Response:
        release = reports.release(request.path_params["board"], request.path_params["release"])
        return html(pages.board_html(reports, release, "serve"))

    def compare(request: Request) -> Response:
        release = reports.release(request.path_params["board"], request.path_params["release"])
        return html(pages.compare_html(reports, release, "serve"))

    def diff(request: Request) -> Response:
        release = reports.release(request.path_params["board"], request.path_params["release"])
        previous = reports.previous(release)
        if previous is None:
            raise NotFound(f"release {release.release_id} has no earlier release to compare with")
        return html(pages.diff_html(reports, release, previous, "serve"))

    def run(request: Request) -> Response:
        release, run = release_and_run(request)
        threading.Thread(target=run.prepare, daemon=True).start()  # the first chunk request will need it
        return html(pages.run_html(release, run, "serve"))

    def run_index(request: Request) -> Response:
        return js(pages.index_js(release_and_run(request)[1]))

    def run_chunk(request: Request) -> Response:
        return js(pages.chunk_js(release_and_run(request)[1], request.path_params["k"], redact=False))

    def run_search(request: Request) -> Response:
        return js(pages.search_js(release_and_run(request)[1], request.query_params.get("q", "")))

    def raw_file(request: Request) -> Response:
        key = request.path_params["key"]
        if not PUBLISHED_FILES.match(key) or not reports.store.exists(key):
            raise NotFound(f"no published file {key!r}")
        media = "application/json" if key.endswith(".json") else "application/vnd.apache.parquet"
        name = key.rsplit("/", 1)[-1]
        return Response(
            reports.store.read_bytes(key),
            media_type=media,
            headers={**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'},
        )

    def media(request: Request) -> Response:
        """An image of the media store, only as the raster type its bytes decode to (never SVG)."""
        from helmflow.media import MediaError, servable_image

        try:
            data, mime = servable_image(reports.store, request.path_params["name"])
        except (MediaError, FileNotFoundError) as exc:
            raise NotFound(f"no image {request.path_params['name']!r}") from exc
        return Response(data, media_type=mime, headers={
            **SECURITY_HEADERS, "Cache-Control": "public, max-age=31536000, immutable"})  # the name is the content

    async def not_found(request: Request, exc: Exception) -> Response:
        return html(pages.not_found_html(str(exc)), 404)

    async def refused(request: Request, exc: Exception) -> Response:  # a planted symlink: say nothing about it
        return html(pages.not_found_html(f"not found: {request.url.path}"), 404)

    async def corrupt(request: Request, exc: Exception) -> Response:
        """A published file that fails its sha256 or does not parse: this page only, naming the file."""
        message = str(exc) if isinstance(exc, CorruptFile) else f"a published file could not be read: {exc}"
        return html(pages.error_html("corrupt data", message), 500)

    async def server_error(request: Request, exc: Exception) -> Response:
        """Anything unexpected: a page saying so, with the security headers (Starlette answers it outside
        every middleware), and no detail of the exception (the server's log has the traceback)."""
        return html(pages.error_html("server error", f"{request.url.path} could not be shown: an unexpected "
                                                     "error; the server's log has its traceback"), 500)

    return Starlette(
        routes=[
            Route("/", home),
            Route("/boards/{board}/", board_latest),
            Route("/boards/{board}/{release}/", board),
            Route("/boards/{board}/{release}/compare/", compare),
            Route("/boards/{board}/{release}/diff/", diff),
            Route("/boards/{board}/{release}/runs/{run_id}/", run),
            Route("/boards/{board}/{release}/runs/{run_id}/index.js", run_index),
            Route("/boards/{board}/{release}/runs/{run_id}/chunk-{k:int}.js", run_chunk),
            Route("/boards/{board}/{release}/runs/{run_id}/search.js", run_search),
            Route("/files/{key:path}", raw_file),
            Route("/media/{name}", media),
            Mount("/static", StaticFiles(directory=pages.STATIC_DIR), name="static"),
        ],
        exception_handlers={NotFound: not_found, OutsideRoot: refused, 404: not_found, CorruptFile: corrupt,
                            pa.ArrowException: corrupt, Exception: server_error},
        middleware=[Middleware(SecurityHeaders)],
    )
