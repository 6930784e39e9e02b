"""The Prefect UI shows a board's lineage: a demo flow run's page and the Artifacts page, in a real
browser (Debian's Chromium driven by Playwright), against the session's Prefect server.

A browser that cannot start fails these tests (never skips them): install it with
``apt-get install chromium`` (scripts/test.sh does so when run as root). Screenshots go to
test-artifacts/ (README's copies live in docs/screenshots/).
"""

from __future__ import annotations

import os
import re
from uuid import UUID

import pyarrow.parquet as pq
import pytest

from helmflow.storage import Store
from tests.conftest import run_cli
from tests.prefect_servers import ARTIFACTS

pytestmark = pytest.mark.slow

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def demo_run(prefect_server, tmp_path_factory) -> dict:
    """One demo flow run on the session server: its id, name and the run ids of its release."""
    root = str(tmp_path_factory.mktemp("prefect-ui") / "store")
    out = run_cli("run", "demo", "--max-instances", "3", "--scenarios", "arithmetic-3",
                  "--models", "offline/solver,offline/echo", "--storage", root)
    assert out.returncode == 0, out.stdout + out.stderr
    flow_run_id = UUID(re.search(r"flow run: ([0-9a-f-]{36})", out.stdout).group(1))
    latest = Store(root).read_json("leaderboards/demo/latest-subset.json")
    run_ids = sorted(r["run_id"] for r in pq.read_table(os.path.join(latest["uri"], "runs.parquet")).to_pylist())
    assert len(run_ids) == 2

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        name = client.read_flow_run(flow_run_id).name
    return {"id": flow_run_id, "name": name, "run_ids": run_ids, "release_id": latest["release_id"],
            "ui": prefect_server.removesuffix("/api")}




@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    context.close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def _keys(run: dict) -> list[str]:
    return ["demo-leaderboard", "demo-release"] + [f"{r}-summary" for r in run["run_ids"]]


def test_flow_run_page_shows_the_run_and_its_artifacts(page, demo_run):
    from playwright.sync_api import expect

    page.goto(f"{demo_run['ui']}/runs/flow-run/{demo_run['id']}")
    expect(page.get_by_text(demo_run["name"], exact=True).first).to_be_visible()
    expect(page.get_by_text("Completed", exact=True).first).to_be_visible()
    page.get_by_text("Artifacts", exact=True).first.click()
    for key in _keys(demo_run):
        expect(page.get_by_text(key, exact=True).first).to_be_visible()
    _shot(page, "prefect-flow-run-artifacts.png")

    # the leaderboard table artifact of this run carries the release's numbers
    page.get_by_text("demo-leaderboard", exact=True).first.click()
    expect(page.get_by_text(f"demo release {demo_run['release_id']} (complete)").first).to_be_visible()
    rows = page.get_by_role("row")
    expect(rows.filter(has_text="offline/solver").get_by_role("cell").nth(1)).to_have_text("1.000")  # mean score
    expect(rows.filter(has_text="offline/echo").get_by_role("cell").nth(1)).to_have_text("0.000")
    _shot(page, "prefect-leaderboard-artifact.png")


def test_artifacts_page_lists_the_release_and_every_run_summary(page, demo_run):
    from playwright.sync_api import expect

    page.goto(f"{demo_run['ui']}/artifacts")
    expect(page.get_by_text("Artifacts", exact=True).first).to_be_visible()
    for key in _keys(demo_run):  # other tests share this server: search, as a user would
        page.get_by_placeholder("Search artifacts").fill(key)
        expect(page.get_by_text(key, exact=True).first).to_be_visible()
    page.get_by_placeholder("Search artifacts").fill(demo_run["run_ids"][0])
    expect(page.get_by_text(f"{demo_run['run_ids'][0]}-summary", exact=True).first).to_be_visible()
    _shot(page, "prefect-artifacts-search.png")
    page.get_by_placeholder("Search artifacts").fill("")
    _shot(page, "prefect-artifacts.png")
