"""The report shows each instance's images, served from the media store only as raster images
checked by decoding (never SVG, never a planted file or symlink); the static export copies exactly
the images its pages show; the board page shows the aspects."""

from __future__ import annotations

import hashlib
import io
import os
import re

import pytest
from PIL import Image
from starlette.testclient import TestClient

from helmflow.plan.compile import prepare
from helmflow.storage import Store
from helmflow.web.app import create_app
from helmflow.web.export import export_report
from helmflow.web.pages import aspect_scores
from tests.support.demo import chunk_rows
from tests.support.tiny_board import release, run_board

pytestmark = pytest.mark.slow  # its fixtures run a board through Prefect

SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(document.cookie)</script>'
       b'<rect width="10" height="10"/></svg>')


@pytest.fixture(scope="module")
def vision(tmp_path_factory) -> tuple[Store, str, list[str]]:
    store = Store(str(tmp_path_factory.mktemp("vision") / "store"))
    plan = prepare("vision-demo", models=["offline/vision", "offline/first-option"],
                   scenarios=["shapes-mc", "shapes-image-choice"], max_instances=4)
    runs, release_id = publish(store, plan)
    return store, release_id, [r.run_id for r in runs]


def publish(store: Store, plan):
    """Every pair of ``plan`` through the pipeline's own stages, and their release: (runs, release id)."""
    runs = run_board(store, plan)
    return runs, release(store, plan, runs).release_id


def plant(store: Store, data: bytes, ext: str) -> str:
    name = f"{hashlib.sha256(data).hexdigest()}.{ext}"
    store.write_bytes(f"media/{name}", data)
    return name


def test_run_page_parts_reference_images_that_are_served_as_checked_rasters(vision):
    store, release, run_ids = vision
    client = TestClient(create_app(store.root))
    page = client.get(f"/boards/vision-demo/{release}/runs/{run_ids[0]}/")
    assert 'data-media="/media/"' in page.text
    rows = chunk_rows(client.get(f"/boards/vision-demo/{release}/runs/{run_ids[0]}/chunk-0.js").text)
    images = [p for p in rows[0]["request"]["parts"] if p["type"] == "image"]
    assert images and rows[0]["prompt"].count("[image ") == len(images)
    for part in images:
        r = client.get(f"/{part['uri']}")
        assert r.status_code == 200 and r.headers["content-type"] == "image/png"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert hashlib.sha256(r.content).hexdigest() == part["sha256"]
        Image.open(io.BytesIO(r.content)).verify()
    choice_rows = chunk_rows(client.get(f"/boards/vision-demo/{release}/runs/{run_ids[2]}/chunk-0.js").text)
    assert all(ref["image"]["uri"].startswith("media/") for ref in choice_rows[0]["references"])  # image-valued choices


def test_svg_and_other_planted_files_are_never_served(vision, tmp_path):
    store, _, _ = vision
    client = TestClient(create_app(store.root))
    png = io.BytesIO()
    Image.new("RGB", (3, 3), "red").save(png, format="JPEG")
    planted = [
        plant(store, SVG, "png"),  # an SVG named like a PNG: Pillow cannot decode it
        plant(store, png.getvalue(), "png"),  # a JPEG named .png: not the type its name says
    ]
    store.write_bytes(f"media/{'0' * 64}.png", b"\x89PNG\r\n\x1a\n not really")  # bytes that do not match the name
    planted.append(f"{'0' * 64}.png")
    secret = tmp_path / "secret.png"
    secret.write_bytes(png.getvalue())
    link = f"{hashlib.sha256(png.getvalue()).hexdigest()}.jpg"
    os.symlink(secret, store.path(f"media/{link}"))  # a symlink out of the root, named by its content
    for name in [*planted, link, plant(store, SVG, "svg").replace(".svg", ".svg"), "..%2F..%2Fetc%2Fpasswd"]:
        r = client.get(f"/media/{name}")
        assert r.status_code == 404, name
        assert b"<script>" not in r.content and "svg" not in r.headers["content-type"]


def test_export_copies_exactly_the_images_its_pages_show(vision):
    store, release, run_ids = vision
    unreferenced = io.BytesIO()
    Image.new("RGB", (5, 5), "blue").save(unreferenced, format="PNG")
    stray = plant(store, unreferenced.getvalue(), "png")
    export_report(store, "vision-demo", release)
    from helmflow.web.data import Reports

    shown = set().union(*(Reports(store).run(r).media_names() for r in run_ids))
    copied = {k.rsplit("/", 1)[1] for k in store.find(f"leaderboards/vision-demo/{release}/report/media")}
    assert copied == shown and stray not in copied and len(shown) >= 4
    run_page = store.read_bytes(f"leaderboards/vision-demo/{release}/report/runs/{run_ids[0]}/index.html").decode()
    assert 'data-media="../../media/"' in run_page


def test_an_export_that_meets_a_non_raster_image_names_the_instance_and_file_and_fails(tmp_path):
    """Before: an SVG (with script) stored where a shown PNG should be was silently left out, exit 0."""
    from tests.support.cli import run_cli

    store = Store(str(tmp_path / "store"))
    runs, release = publish(store, prepare("vision-demo", models=["offline/vision"], scenarios=["shapes-mc"],
                                           max_instances=2))
    from helmflow.web.data import Reports

    sources = Reports(store).run(runs[0].run_id).media_sources()
    name, instance = sorted(sources.items())[0]
    store.write_bytes(f"media/{name}", SVG)  # the stored bytes are no longer the raster the page shows

    out = run_cli("report", "vision-demo", "--release", release, "--storage", store.root)
    assert out.returncode == 1, out.stdout + out.stderr
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("helmflow: error:")]
    assert len(errors) == 2 and f"run {runs[0].run_id}, instance {instance}: media/{name} not exported" in errors[0]
    assert "1 image(s) were not exported" in errors[1] and "Traceback" not in out.stderr
    copied = {k.rsplit("/", 1)[1] for k in store.find(f"leaderboards/vision-demo/{release}/report/media")}
    assert name not in copied and copied == set(sources) - {name}  # the others are exported, checked


def test_board_page_shows_the_aspects(vision):
    store, release, _ = vision
    page = TestClient(create_app(store.root)).get(f"/boards/vision-demo/{release}/").text
    assert 'id="aspects"' in page and "<h3>multiple_choice</h3>" in page
    assert "shapes-image-choice" in page
    # each aspect is labelled as what it is: its mean score beside its win rate, each under its own header
    aspects = page[page.index('id="aspects"'):page.index("</table>", page.index('id="aspects"'))]
    assert "multiple_choice · score</th>" in aspects and "multiple_choice · win rate</th>" in aspects
    rows = store.read_parquet(f"leaderboards/vision-demo/{release}/leaderboard.parquet").to_pylist()
    members = store.read_json(f"leaderboards/vision-demo/{release}/release.json")["aspects"]["multiple_choice"]
    for row in rows:
        cells = re.search(rf"<td data-sort=\"{re.escape(row['deployment'])}\">.*?</tr>", aspects, re.DOTALL).group(0)
        mean = sum(row[f"group:{g}"] for g in members) / len(members)
        assert f"<td data-sort=\"{mean}\">{mean:.3f}</td>" in cells, cells


def test_an_aspect_score_is_the_mean_of_its_groups_not_a_win_rate():
    """A model at 0 everywhere wins its ties (win rate 0.25 in a field of three), yet scores 0."""
    rows = [{"deployment": "a", "group:g1": 1.0, "group:g2": 0.5, "aspect:x": 1.0},
            {"deployment": "zero", "group:g1": 0.0, "group:g2": 0.0, "aspect:x": 0.25},
            {"deployment": "half", "group:g1": 0.0, "group:g2": None, "aspect:x": 0.25}]
    assert aspect_scores(rows, {"x": ["g1", "g2"]}) == {("a", "x"): 0.75, ("zero", "x"): 0.0}  # "half" lacks g2


@pytest.mark.slow
def test_thumbnails_load_in_a_browser_live_and_from_a_static_export(vision, browser):
    import subprocess

    from tests.support.cli import REPO, spawn_cli
    from tests.support.processes import free_port, stop_process, wait_http

    store, release, run_ids = vision
    export_report(store, "vision-demo", release)
    port = free_port()
    proc = spawn_cli(["serve", "--storage", store.root, "--port", str(port)], stdout=subprocess.DEVNULL,
                     stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
    context = browser.new_context(viewport={"width": 1280, "height": 8000})  # thumbnails load lazily: show them all
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        wait_http(f"http://127.0.0.1:{port}/", timeout=60, proc=proc)
        report = store.path(f"leaderboards/vision-demo/{release}/report/runs/{run_ids[2]}/index.html")
        for url in (f"http://127.0.0.1:{port}/boards/vision-demo/{release}/runs/{run_ids[2]}/", f"file://{report}"):
            page.goto(url)
            page.wait_for_selector("#viewer[data-state=ready]", timeout=15_000)
            for _ in range(150):  # the page's CSP forbids eval, so poll from here until every image settled
                state = page.eval_on_selector_all("img.thumb", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
                if state and all(done for done, _ in state):
                    break
                page.wait_for_timeout(100)
            sizes = page.eval_on_selector_all("img.thumb", "imgs => imgs.map(i => [i.naturalWidth, i.getAttribute('src')])")
            assert len(sizes) >= 5, url  # the question's options are images, in the prompt and the references
            assert all(w == 96 for w, _ in sizes), sizes  # every thumbnail decoded (a broken one has width 0)
            # each prompt is one box with its text and images inline: no text fragment is a box of its own,
            # and none is empty (before: an option image sat beside an empty box for the line break around it)
            boxes = page.eval_on_selector_all(".parts-prompt", "bs => bs.map(b => [b.querySelectorAll('pre').length, "
                                              "[...b.querySelectorAll('.part-text')].filter(t => !t.textContent).length, "
                                              "b.querySelectorAll('img.thumb').length, b.querySelectorAll('.part-text').length])")
            assert boxes and all(pre == 0 and empty == 0 and images >= 1 and texts >= 1
                                 for pre, empty, images, texts in boxes), boxes
        assert not problems
    finally:
        context.close()
        stop_process(proc)
