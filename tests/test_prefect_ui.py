"""Lineage a person can read in the Prefect UI, and a failed cell retried from the UI's Retry button.

Like a new user: a real ``prefect server start`` (its own, SQLite), ``prefect deploy`` of
prefect.yaml's demo deployment, a process worker, and the full demo board (every scenario x every
model) triggered from that deployment. What is asserted comes from the server's API (task-run names,
artifacts, asset events) and from the pages in Chromium (Playwright), in the default UI (V1 at
``/``) and the V2 UI Prefect 3.9 ships (``/v2``). Screenshots go to test-artifacts/, and to
docs/screenshots/ with ``HELMFLOW_UPDATE_SCREENSHOTS=1`` (the documentation's copies).

A browser that cannot start fails these tests (never skips them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from uuid import UUID

import httpx
import pytest

from helmflow.clients.offline import offline_call_count
from helmflow.storage import Store
from tests.support.cli import REPO
from tests.support.prefect_server import ARTIFACTS, PrefectServer, dedicated_prefect_server

pytestmark = pytest.mark.slow

TIMEOUT_MS = 60_000
POOL = "helmflow"
DOCS = REPO / "docs" / "screenshots"
HASHLIKE = re.compile(r"(^|[\s-])[0-9a-f]{3,}$")  # `download-46b`, `publish-release-1b3`: a name ending in a hash


@pytest.fixture(scope="module")
def ui(tmp_path_factory) -> dict:
    """A server with the demo deployment, a worker, and one full demo board run from the deployment."""
    work = tmp_path_factory.mktemp("prefect-ui")
    store_root = work / "store"
    with dedicated_prefect_server(work / "server") as server:
        _ok(server.cli("work-pool", "create", POOL, "--type", "process"))
        _ok(server.cli("deploy", "--name", "demo-nightly"))
        _ok(server.cli("deployment", "schedule", "pause", "--all"))
        server.start_worker(POOL, "ui-worker", HELMFLOW_STORAGE=str(store_root))
        params = {"selection": {"max_instances": 3}}
        flow_run_id = _trigger(server, params)
        run = server.wait_flow_run(flow_run_id, timeout=900)
        assert run.state.is_completed(), f"{run.state}\n{server.tail()}"
        yield {"server": server, "ui": server.url.removesuffix("/api"), "flow_run": run, "store": Store(str(store_root)),
               "work": work, "params": params}


def _ok(out):
    assert out.returncode == 0, f"{out.args}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def _trigger(server: PrefectServer, params: dict) -> UUID:
    out = _ok(server.cli("deployment", "run", "demo/demo-nightly", "--params", json.dumps(params)))
    return UUID(re.search(r"UUID: ([0-9a-f-]{36})", out).group(1))


def _task_runs(server: PrefectServer, flow_run_id: UUID, expected: int = 0):
    deadline = time.monotonic() + 30
    while len(runs := server.task_runs(flow_run_id)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)  # task runs reach the API as events, a moment after the flow run ends
    return runs


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))
    if os.environ.get("HELMFLOW_UPDATE_SCREENSHOTS"):
        shutil.copy(ARTIFACTS / name, DOCS / name)


def _drawn(page, canvas, most_ms: int, unlike: bytes | None = None) -> bytes | None:
    """Until the graph on ``canvas`` is drawn and holds still (it is drawn on a canvas, which no locator reads):
    two screenshots of it 0.4 s apart alike, with more in them than a background (and unlike ``unlike``, the
    drawing before a change of layout); at most ``most_ms``. For the screenshots only: nothing is asserted on
    the drawing. Returns the last screenshot of the canvas."""
    from io import BytesIO

    from PIL import Image

    deadline, last = time.monotonic() + most_ms / 1000, None
    while time.monotonic() < deadline:
        shot = canvas.screenshot()
        colours = Image.open(BytesIO(shot)).convert("RGB").getcolors(256)
        if shot == last and shot != unlike and (colours is None or len(colours) > 32):
            return shot
        last = shot
        page.wait_for_timeout(400)
    return last


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    context.close()


def test_every_task_run_is_named_by_what_it_works_on(ui):
    from helmflow.pipeline import preflight
    from helmflow.plan.compile import prepare

    # the deployment run's parameters; fairness copies change no arithmetic question: left out
    plan = preflight(ui["store"], prepare("demo", max_instances=3))
    run = ui["flow_run"]
    assert re.fullmatch(r"demo \d{4}-\d{2}-\d{2} \d{2}:\d{2}", run.name), run.name  # not Prefect's random words
    task_runs = _task_runs(ui["server"], run.id, len(plan.all_scenarios) + len(plan.runs) + 1)
    names = sorted(tr.name for tr in task_runs)
    # 8 scenarios + 2 perturbed copies (robustness), 32 + 8 runs, 1 release (was 113 before the
    # prepare/run units, 71 while the 4 fairness copies that change nothing were prepared and run)
    assert len(names) == len(plan.all_scenarios) + len(plan.runs) + 1 == 51, names
    assert sorted(n for n in names if n.startswith("prepare ")) == sorted(f"prepare {s.label}" for s in plan.all_scenarios)
    assert sorted(n for n in names if n.startswith("run ")) == sorted(
        f"run {r.scenario.label} x {r.deployment.name}" for r in plan.runs)
    assert "release demo" in names
    assert not [n for n in names if HASHLIKE.search(n)], names
    # the graph's top level reads: a subflow run per scenario (8; its robustness copies inside), the release
    subflows = ui["server"].subflow_runs(run.id)
    assert sorted(s.name for s in subflows) == sorted(f"demo {s.label}" for s in plan.scenarios), subflows
    top = ui["server"].task_runs(run.id, top_level=True)
    assert len(top) == len(plan.scenarios) + 1 == 9 and "release demo" in {t.name for t in top}
    with ui["server"].client() as client:
        flow = client.read_flow(run.flow_id)
    assert flow.name == "demo"  # `helmflow run demo` runs under this flow too (tests/test_flow_spine.py)


def test_artifacts_read_as_a_report(ui):
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from helmflow.pipeline import preflight
    from helmflow.plan.compile import prepare

    # the deployment run's parameters; fairness copies change no arithmetic question: left out
    plan = preflight(ui["store"], prepare("demo", max_instances=3))
    board_run = ui["flow_run"].id
    runs = [board_run, *(s.id for s in ui["server"].subflow_runs(board_run))]  # each cell's card: on its subflow run
    with ui["server"].client() as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=runs)))
        own = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[board_run])))
    assert sorted(a.key for a in own) == ["demo-leaderboard", "demo-release", "demo-release-link"]  # the tab opens on it
    by_key = {a.key: a for a in artifacts if a.key}
    for r in plan.runs:
        key = re.sub(r"[^a-z0-9]+", "-", f"demo-{r.scenario.label}-{r.deployment.name}".lower())
        assert key in by_key, sorted(by_key)
        art = by_key[key]
        assert art.description == f"demo: {r.scenario.label} x {r.deployment.name}"
        assert f"{r.scenario.main_metric}:" in art.data and "95% CI" in art.data and r.run_id in art.data
        assert "model_version" in art.data and f"runs/{r.run_id}" in art.data
    latest = ui["store"].read_json("leaderboards/demo/latest-subset.json")
    board = by_key["demo-leaderboard"]
    assert latest["release_id"] in board.description
    assert "[" in json.dumps(board.data)  # cells carry their interval: "1.000 [1.000, 1.000]"
    link = by_key["demo-release-link"]
    assert latest["uri"] in link.data and latest["release_id"] in link.data


def test_a_worker_publishes_the_release_where_its_environment_says(ui):
    """The deployment's run was executed by the worker, whose environment names the storage root (the
    deployment's ``storage`` is null): the release is complete, and every request its runs hold was sent
    once (the offline models' request counters, before the retry test below adds to them)."""
    server, store, run = ui["server"], ui["store"], ui["flow_run"]
    with server.client() as client:
        deployment = client.read_deployment_by_name("demo/demo-nightly")
    assert run.deployment_id == deployment.id and run.labels["prefect.worker.name"] == "ui-worker"
    assert run.parameters == dict(ui["params"], storage=None)
    latest = store.read_json("leaderboards/demo/latest-subset.json")
    release = latest["uri"].removeprefix(store.root.rstrip("/") + "/")
    runs = store.read_parquet(f"{release}/runs.parquet").to_pylist()
    models = ["offline/solver", "offline/solver-noisy", "offline/echo", "offline/first-option"]
    assert latest["status"] == "complete" and {(r["deployment"], r["status"]) for r in runs} == {
        (m, "complete") for m in models}
    board = store.read_parquet(f"{release}/leaderboard.parquet").to_pylist()
    assert {r["deployment"]: r["arithmetic-3"] for r in board if r["deployment"] in models[::2]} == {
        "offline/solver": 1.0, "offline/echo": 0.0}
    for model in models:
        published = sum(store.read_parquet(f"runs/{r['run_id']}/requests.parquet").num_rows
                        for r in runs if r["deployment"] == model)
        assert published > 8 * 3 and offline_call_count(store, model) == published, model


def test_asset_events_name_their_cells(ui):
    reply = httpx.post(f"{ui['server'].url}/events/filter", timeout=30,
                       json={"filter": {"event": {"name": ["prefect.asset.materialization.succeeded"]}}})
    assert reply.status_code == 200, reply.text
    page, names = reply.json(), set()
    while True:  # every page: the board's cells and the worker's run each materialize assets
        names |= {e["resource"].get("prefect.resource.name") for e in page["events"]}
        if not page.get("next_page"):
            break
        page = httpx.get(page["next_page"], timeout=30).json()
    assert "demo leaderboard" in names, names
    assert "demo: dyck-3 x offline/solver run" in " ".join(n or "" for n in names), names


def test_ui_shows_names_graph_artifacts_and_events(ui, page):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    run = ui["flow_run"]
    base = f"{ui['ui']}/runs/flow-run/{run.id}"
    page.goto(base)
    expect(page.get_by_text(run.name, exact=True).first).to_be_visible()
    # the release is the board's one task run of its own (it was 51 side by side); a subflow run per scenario
    expect(page.get_by_text("1 Task run", exact=True).first).to_be_visible()
    graph = page.locator(".flow-run-graph")
    drawn = _drawn(page, graph.locator("canvas").first, 3000)
    _shot(page, "prefect-flow-run.png")

    graph.locator("button").last.click()  # the graph's settings
    page.get_by_text("Dependency grid", exact=True).click()
    page.get_by_text(run.name, exact=True).first.click()  # close the settings
    _drawn(page, graph.locator("canvas").first, 2000, unlike=drawn)  # nine named bars: readable without zooming in
    _shot(page, "prefect-flow-run-dependency.png")

    page.get_by_text("Task Runs", exact=True).first.click()
    expect(page.get_by_text("release demo", exact=True).first).to_be_visible()
    page.get_by_text("Subflow Runs", exact=True).first.click()
    for label in ("dyck-3", "arithmetic-3", "sr-induction"):
        expect(page.get_by_text(f"demo {label}", exact=True).first).to_be_visible()
    [dyck] = [s for s in ui["server"].subflow_runs(run.id) if s.name == "demo dyck-3"]
    page.goto(f"{ui['ui']}/runs/flow-run/{dyck.id}")  # a scenario's subflow run: its prepare and its cells
    expect(page.get_by_text("5 Task runs").first).to_be_visible()  # prepare + 4 models
    _drawn(page, page.locator(".flow-run-graph canvas").first, 3000)
    _shot(page, "prefect-scenario-subflow.png")
    page.goto(base)

    page.get_by_text("Artifacts", exact=True).first.click()
    # the release's three (the 40 per-run artifacts are on the scenarios' subflow runs; the API test reads them)
    for key in ("demo-leaderboard", "demo-release", "demo-release-link"):
        expect(page.get_by_text(key, exact=True).first).to_be_visible()
    _shot(page, "prefect-flow-run-artifacts.png")

    page.get_by_text("demo-leaderboard", exact=True).first.click()
    rows = page.get_by_role("row")
    expect(rows.filter(has_text="offline/solver-noisy").first).to_be_visible()
    _shot(page, "prefect-leaderboard-artifact.png")

    page.goto(f"{ui['ui']}/events")
    expect(page.get_by_text("Flow run completed").first).to_be_visible(timeout=180_000)  # slow on a busy machine
    asset_event = page.get_by_text("Asset materialization succeeded").first
    for _ in range(20):  # newest first: scroll down to the release's and runs' materializations
        if asset_event.is_visible():
            break
        page.mouse.wheel(0, 1500)
        with contextlib.suppress(PlaywrightTimeout):  # the next page of events, loaded as the feed scrolls
            asset_event.wait_for(state="visible", timeout=1000)
    asset_event.scroll_into_view_if_needed()
    expect(asset_event).to_be_visible()
    _shot(page, "prefect-event-feed.png")


def test_v2_ui_shows_the_same_run(ui, page):
    from playwright.sync_api import expect

    run = ui["flow_run"]
    page.goto(f"{ui['ui']}/v2/runs/flow-run/{run.id}")
    expect(page.get_by_text(run.name, exact=True).first).to_be_visible()
    expect(page.get_by_text("9 Task runs").first).to_be_visible()  # V2 counts the 8 standing for the subflows
    _drawn(page, page.locator("canvas").first, 15_000)  # V2 draws its graph later than V1
    _shot(page, "prefect-v2-flow-run.png")
    page.get_by_role("tab", name="Task Runs").click()
    expect(page.get_by_text("release demo", exact=True).first).to_be_visible()
    page.get_by_role("tab", name="Subflow Runs").click()
    expect(page.get_by_text("demo dyck-3", exact=True).first).to_be_visible()
    page.get_by_role("tab", name="Artifacts").click()
    expect(page.get_by_text("demo-leaderboard").first).to_be_visible()  # per-run ones page past the first screen
    _shot(page, "prefect-v2-artifacts.png")


def test_retry_button_reruns_only_the_failed_cell(ui, page):
    """A cell fails (the offline `fail:` option); the provider is fixed; the flow run's Retry button
    in the UI has the worker re-execute the same flow run, where only that cell's task (and the
    release) runs: task-run states from the API, request counts from the offline models' counters."""
    from playwright.sync_api import expect

    server, store = ui["server"], ui["store"]
    models_file = ui["work"] / "models.yaml"
    entry = "  - {{name: flaky/echo, client: offline, model: echo, revision: '1', options: {}}}\n"  # a journal of its own
    models_file.write_text("deployments:\n" + entry.format("{behavior: echo, fail: always}"))
    models = ["offline/solver", "offline/solver-noisy", "flaky/echo"]
    # dyck-3: a demo scenario without perturbation runs, so a cell is one run
    flow_run_id = _trigger(server, {"selection": {"max_instances": 4, "scenarios": ["dyck-3"], "models": models},
                                    "models_file": str(models_file)})
    failed = server.wait_flow_run(flow_run_id, timeout=600)
    assert failed.state.is_failed(), f"{failed.state}\n{server.tail()}"
    models_file.write_text("deployments:\n" + entry.format("{behavior: echo}"))
    counts = {m: offline_call_count(store, m) for m in models}
    before = {tr.id for tr in _task_runs(server, flow_run_id, 5)}

    page.goto(f"{ui['ui']}/runs/flow-run/{flow_run_id}")
    expect(page.get_by_text("Failed", exact=True).first).to_be_visible()
    _shot(page, "prefect-retry-before.png")
    page.get_by_role("button", name="Retry").first.click()
    confirm = page.get_by_role("dialog").get_by_role("button", name="Retry")
    if confirm.count():  # some UI versions confirm first
        confirm.click()
    retried = server.wait_flow_run(flow_run_id, after_runs=failed.run_count, timeout=600)
    assert retried.state.is_completed(), f"{retried.state}\n{server.tail()}"
    assert retried.id == flow_run_id and retried.run_count == failed.run_count + 1

    new_runs = [tr for tr in _task_runs(server, flow_run_id, len(before) + 5) if tr.id not in before]
    executed = sorted(tr.name for tr in new_runs if tr.state.name == "Completed")
    cached = sorted(tr.name for tr in new_runs if tr.state.name == "Cached")
    assert executed == ["release demo", "run dyck-3 x flaky/echo"], [(t.name, t.state.name) for t in new_runs]
    assert cached == ["prepare dyck-3", "run dyck-3 x offline/solver", "run dyck-3 x offline/solver-noisy"]
    after = {m: offline_call_count(store, m) for m in models}
    assert after == dict(counts, **{"flaky/echo": counts["flaky/echo"] + 4})  # its 4 requests, nothing else
    page.reload()
    expect(page.get_by_text("Completed", exact=True).first).to_be_visible()
    _shot(page, "prefect-retry-after.png")
