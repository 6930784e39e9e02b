"""``helmflow report``: the report as static files in the release's ``report/`` folder.

The pages need no server: open ``report/index.html`` from disk, a bucket or any static host. Runs
of scenarios whose text may not be published (``publish_text = False``) are exported with ids and scores only.
Images the pages show are copied to ``report/media/`` (only those, each checked as a raster image).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from helmflow import layout
from helmflow.media import MediaError, servable_image
from helmflow.storage import Store
from helmflow.web import pages
from helmflow.web.data import Reports


@dataclass(frozen=True)
class Exported:
    index_key: str
    url: str
    files: int
    refused: list[str] = field(default_factory=list)  # images left out, each naming its run, instance and file


def export_report(store: Store, board: str, release_id: str | None = None,
                  include_unsafe_text: bool = False) -> Exported:
    """``include_unsafe_text``: also publish the prompts and replies of scenarios with harmful prompts
    (``unsafe_text``); text that may never be published (``publish_text = False``) stays out regardless."""
    reports = Reports(store)
    release = reports.release(board, release_id or reports.latest(board))
    base = layout.report_dir(release.board, release.release_id)
    written = 0

    def put(key: str, text: str | bytes) -> None:
        nonlocal written
        store.write_bytes(f"{base}/{key}", text.encode() if isinstance(text, str) else text)
        written += 1

    for asset in sorted(pages.STATIC_DIR.iterdir()):
        put(f"static/{asset.name}", asset.read_bytes())
    images: dict[str, str] = {}  # image name -> "run R, instance I", the first that shows it
    for run_id in release.manifest.run_ids:
        run = reports.run(run_id)
        if not run.redacted_in_export(include_unsafe_text):
            for name, instance in run.media_sources().items():
                images.setdefault(name, f"run {run_id}, instance {instance}")
        for k in range(run.num_chunks):
            put(f"runs/{run_id}/chunk-{k}.js",
                pages.chunk_js(run, k, redact=run.redacted_in_export(include_unsafe_text)))
        put(f"runs/{run_id}/index.js", pages.index_js(run))
        put(f"runs/{run_id}/index.html", pages.run_html(release, run, "static", include_unsafe_text))
    refused: list[str] = []
    for name in sorted(images):  # only what the exported pages show, each checked as a raster image
        try:
            data, _ = servable_image(store, name)
        except (MediaError, FileNotFoundError) as exc:  # the page shows a broken thumbnail, never anything unchecked
            why = "missing" if isinstance(exc, FileNotFoundError) else str(exc)
            refused.append(f"{images[name]}: media/{name} not exported ({why})")
            continue
        put(f"media/{name}", data)
    put("compare/index.html", pages.compare_html(reports, release, "static"))
    if (previous := reports.previous(release)) is not None:
        put("diff/index.html", pages.diff_html(reports, release, previous, "static"))
    # the picker offers the releases that have a static report (this one included)
    exported = [
        r
        for r in reports.releases(release.board)
        if r == release.release_id or store.exists(f"{layout.report_dir(release.board, r)}/index.html")
    ]
    put("index.html", pages.board_html(reports, release, "static", exported))  # last: the report's entry point
    return Exported(index_key=f"{base}/index.html", url=store.url(f"{base}/index.html"), files=written,
                    refused=refused)
