"""HELM Lite in the Prefect UI at full size: the documentation's screenshots of the lite flow run and its
leaderboard artifact.

    python benchmarks/lite_ui_screenshots.py [--models offline/first-option,offline/echo,offline/solver]

Builds every Lite source as fixture files (tests/support/lite_fixtures.py, served on 127.0.0.1 and mirrored with
`helmflow mirror lite`; tests/support/lite_hub_fixtures.py for MATH, LegalBench and WMT14), starts its own
`prefect server start` (tests/support/prefect_server.py: SQLite, throwaway PREFECT_HOME), runs `helmflow run lite`
through the real CLI against it (flows/lite.yaml: 28 runs per model), then drives headless Chromium
(/usr/bin/chromium, Playwright) at 1600x1400 over the flow run page and the `lite-leaderboard` artifact.
Writes docs/screenshots/prefect-lite-flow-run.png and prefect-lite-artifact.png and prints the task-run
count the API recorded and the wall times. A script, not a test: it asserts nothing beyond the pages loading.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from uuid import UUID

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DOCS = REPO / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"


def leaderboard_artifact(server, flow_run_id: UUID) -> UUID:
    """The id of the flow run's ``lite-leaderboard`` artifact (its page is what a reader opens from the Artifacts tab)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with server.client() as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]), key=ArtifactFilterKey(any_=["lite-leaderboard"])))
    return found[0].id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="offline/first-option,offline/echo,offline/solver")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS
    from tests.support.lite_fixtures import serve, source_tree
    from tests.support.lite_hub_fixtures import hub_conversion_mirrors
    from tests.support.prefect_server import dedicated_prefect_server

    work = Path(tempfile.mkdtemp(prefix="lite-ui-"))
    root = source_tree(work / "src", small=True)
    with serve(root) as host:
        out = subprocess.run([sys.executable, "-m", "helmflow", "mirror", "lite", "--to", str(work / "mirror")],
                             env={**os.environ, "HELMFLOW_SOURCE_HOST": host.url, **hub_conversion_mirrors(work)},
                             capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stdout + out.stderr)
    with dedicated_prefect_server(work / "server") as server:
        print(f"prefect server up in {server.startup_s:.1f} s")
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "helmflow", "run", "lite", "--models", args.models,
                              "--storage", str(work / "store")],
                             env=dict(server.env, HELMFLOW_MIRROR=str(work / "mirror"), COLUMNS="200"),
                             capture_output=True, text=True, cwd=str(REPO))
        run_s = time.monotonic() - t0
        if out.returncode:
            sys.exit(f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        flow_run_id = UUID(re.search(r"flow run: ([0-9a-f-]{36})", out.stdout).group(1))
        time.sleep(5)  # task runs reach the API as events, a moment after the flow run ends
        names = sorted(t.name for t in server.task_runs(flow_run_id))
        kinds = {k: sum(n.startswith(k + " ") for n in names) for k in ("prepare", "run", "release")}
        print(f"helmflow run lite ({args.models}): {run_s:.1f} s; {len(names)} task runs {kinds}")
        print("longest task-run name:", max(names, key=len))
        ui = server.url.removesuffix("/api")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1600, "height": 1400}).new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{ui}/runs/flow-run/{flow_run_id}")
            page.get_by_text(f"{len(names)} Task runs").first.wait_for()
            page.wait_for_timeout(5000)  # the graph draws on a canvas
            page.get_by_text("Task Runs", exact=True).first.click()
            page.get_by_text("release lite", exact=True).first.wait_for()
            page.wait_for_timeout(2000)
            page.screenshot(path=str(DOCS / "prefect-lite-flow-run.png"))
            page.goto(f"{ui}/artifacts/artifact/{leaderboard_artifact(server, flow_run_id)}")
            page.get_by_role("row").first.wait_for()
            page.wait_for_timeout(2000)
            page.screenshot(path=str(DOCS / "prefect-lite-artifact.png"), full_page=True)
            columns = page.locator("thead th").count()
            print(f"leaderboard artifact: {page.get_by_role('row').count() - 1} rows, {columns} columns")
            browser.close()
    print(f"wrote {DOCS / 'prefect-lite-flow-run.png'} and {DOCS / 'prefect-lite-artifact.png'}; work dir {work}")


if __name__ == "__main__":
    main()
