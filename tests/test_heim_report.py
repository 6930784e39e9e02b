"""The report shows a text-to-image run's generated images as a grid per prompt, each metric's value under
it; the images are served from the media store as checked rasters, and the static export copies them."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from helmflow.clients.offline_image import draw
from helmflow.plan.compile import prepare
from helmflow.storage import Store
from helmflow.web.app import create_app
from helmflow.web.export import export_report
from tests.support.demo import chunk_rows
from tests.test_vision_report import publish


@pytest.fixture(scope="module")
def heim(tmp_path_factory) -> tuple[Store, str, str]:
    store = Store(str(tmp_path_factory.mktemp("heim") / "store"))
    plan = prepare("heim", models=["offline/draw"], scenarios=["logos"], max_instances=2)
    runs, release_id = publish(store, plan)
    return store, release_id, runs[0].run_id


def test_a_run_page_row_carries_its_generated_images_and_they_are_served(heim):
    store, release, run_id = heim
    client = TestClient(create_app(store.root))
    rows = chunk_rows(client.get(f"/boards/heim/{release}/runs/{run_id}/chunk-0.js").text)
    assert len(rows) == 2 and all(len(r["images"]) == 4 for r in rows)
    assert "fractal_dimension_loss" in rows[0]["stats"] and "seconds_per_image" in rows[0]["stats"]
    first = rows[0]["images"][0]
    served = client.get(f"/media/{first['sha256']}.png")
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    assert served.content == draw(rows[0]["request"]["prompt"], 0)
    exported = export_report(store, "heim", release)
    assert not exported.refused
    copied = {k.rpartition("/")[2] for k in store.find(f"leaderboards/heim/{release}/report/media")}
    assert {f"{p['sha256']}.png" for r in rows for p in r["images"]} <= copied  # the static page shows them too

@pytest.mark.slow
def test_the_image_grid_renders_in_chromium_with_the_metrics_under_it(heim, browser):
    import subprocess

    from tests.support.cli import REPO, spawn_cli
    from tests.support.processes import free_port, stop_process, wait_http

    store, release, run_id = heim
    port = free_port()
    proc = spawn_cli(["serve", "--storage", store.root, "--port", str(port)], stdout=subprocess.DEVNULL,
                     stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
    context = browser.new_context(viewport={"width": 1280, "height": 6000})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        wait_http(f"http://127.0.0.1:{port}/", timeout=60, proc=proc)
        page.goto(f"http://127.0.0.1:{port}/boards/heim/{release}/runs/{run_id}/")
        page.wait_for_selector("#viewer[data-state=ready]", timeout=15_000)
        for _ in range(150):  # the page's CSP forbids eval: poll from here until every image settled
            state = page.eval_on_selector_all(".image-grid img.thumb", "i => i.map(x => [x.complete, x.naturalWidth])")
            if state and all(done for done, _ in state):
                break
            page.wait_for_timeout(100)
        grids = page.eval_on_selector_all(".image-grid", "gs => gs.map(g => [...g.querySelectorAll('img.thumb')]"
                                                        ".map(i => i.naturalWidth))")
        assert grids == [[128] * 4, [128] * 4]  # one grid per prompt, every image decoded
        under = page.eval_on_selector_all(".image-grid + table.image-metrics",
                                          "ts => ts.map(t => t.textContent)")
        assert len(under) == 2 and all("fractal_dimension_loss" in t and "seconds_per_image" in t for t in under)
        assert not page.query_selector_all("pre.completion")  # no empty text box for an image completion
        assert not problems
    finally:
        context.close()
        stop_process(proc)
