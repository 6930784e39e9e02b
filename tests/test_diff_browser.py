"""The release-diff page in Chromium: the most significant cell first, and each flipped instance's
"before" and "after" links open the two releases' run pages at that instance, live and exported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helmflow import compare
from tests.support.cli import REPO, run_cli, spawn_cli
from tests.support.demo import build_demo
from tests.support.processes import free_port, stop_process, wait_http
from tests.test_release_diff import NOISIER

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("diff-browser") / "store"
    models = root.parent / "noisier.yaml"
    models.write_text(NOISIER)
    store, first = build_demo(str(root), max_instances=30)
    _, second = build_demo(str(root), max_instances=30, models_file=str(models))
    for release in (first, second):  # both reports, so the static "before" links have somewhere to go
        out = run_cli("report", "demo", "--release", release, "--storage", store.root, cwd=REPO)
        assert out.returncode == 0, out.stderr
    return store, first, second


@pytest.fixture(scope="module")
def live(releases):
    store, _, _ = releases
    port = free_port()
    log = Path(store.root).parent / "serve.log"
    proc = spawn_cli(["serve", "--storage", store.root, "--port", str(port)], stdout=log.open("w"),
                     stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
    try:
        wait_http(f"http://127.0.0.1:{port}/", timeout=60, proc=proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.problems = []
    pg.on("pageerror", lambda e: pg.problems.append(f"page error: {e}"))
    yield pg
    context.close()


@pytest.mark.parametrize("where", ["live", "static"])
def test_flipped_instances_open_both_answers(page, releases, live, where):
    store, first, second = releases
    diff = compare.release_diff(store, "demo", first, second)
    top = diff["cells"][0]
    assert top["significant"] and top["flips"]
    flip = top["flips"][0]
    if where == "live":
        page.goto(f"{live}/boards/demo/{second}/")
    else:
        page.goto((Path(store.root) / "leaderboards" / "demo" / second / "report" / "index.html").as_uri())
    page.click("#diff-link")
    page.wait_for_selector("#diff-cells")
    cells = page.locator("#diff-cells > li")
    assert cells.count() == len([c for c in diff["cells"] if c["what"] != "same run"])
    assert cells.first.get_attribute("data-scenario") == top["scenario"]
    assert f"{top['delta']:+.3f} [{top['ci_low']:+.3f}, {top['ci_high']:+.3f}]" in cells.first.inner_text()
    assert cells.first.locator("td.instance-id").first.text_content() == flip["instance_id"]
    diff_url = page.url
    for side, release, run in (("before", first, top["run_before"]), ("after", second, top["run_after"])):
        page.goto(diff_url)
        page.wait_for_selector("#diff-cells")
        cells.first.locator(f"a.answer-{side}").first.click()
        page.wait_for_url(f"**/runs/{run}/**")
        page.wait_for_selector("#viewer[data-state=ready]", timeout=15_000)
        assert page.inner_text("#back") == f"demo {release}"  # the run page of that release
        row = flip[f"row_{side}"]
        opened = page.locator(f"#row-{row}")
        assert opened.locator(".instance-id").first.text_content() == flip["instance_id"]
        assert opened.locator("details.raw").first.evaluate("d => d.open")
        ids = store.read_parquet(f"runs/{run}/requests.parquet")["instance_id"].to_pylist()
        assert ids[row] == flip["instance_id"] and run in page.url
    assert page.problems == []
