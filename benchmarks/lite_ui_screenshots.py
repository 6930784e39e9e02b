"""HELM Lite in the Prefect UI at full size: the documentation's screenshots of the lite flow run and its
leaderboard artifact.

    python benchmarks/lite_ui_screenshots.py [--models offline/first-option,offline/echo,offline/solver]
        [--out DIR] [--update-docs] [--keep]

Needs the test and lite extras (`pip install -e ".[test,lite]"`: Playwright, the fixtures' libraries) and
Debian's Chromium (`apt-get install -y chromium`).

Builds every Lite source as fixture files (tests/support/lite_fixtures.py, served on 127.0.0.1 and mirrored with
`helmflow mirror lite`; tests/support/lite_hub_fixtures.py for MATH, LegalBench and WMT14), starts its own
`prefect server start` (tests/support/prefect_server.py: SQLite, throwaway PREFECT_HOME), runs `helmflow run lite`
through the real CLI against it (flows/lite.yaml: 28 runs per model), then drives headless Chromium
(/usr/bin/chromium, Playwright) at 1600x1400 over the flow run page and the `lite-leaderboard` artifact.
Writes prefect-lite-flow-run.png and prefect-lite-artifact.png into --out (default: a new folder under the
system's temporary directory, printed), copies them over the tracked docs/screenshots/ only with
--update-docs, and prints the task-run count the API recorded and the wall times. Its work folder (fixture
sources, mirror, storage, Prefect server: tens of MB) is removed at the end unless --keep is given.
A script, not a test: it asserts nothing beyond the pages loading.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="offline/first-option,offline/echo,offline/solver")
    parser.add_argument("--out", type=Path, help="where the screenshots go (default: a new temporary folder)")
    parser.add_argument("--update-docs", action="store_true", help="also copy them over docs/screenshots/")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (sources, storage, server)")
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401 - checked before any work
    except ImportError:
        sys.exit('needs Playwright: pip install -e ".[test,lite]" (and apt-get install -y chromium)')
    if not Path(CHROMIUM).exists():
        sys.exit(f"needs {CHROMIUM}: apt-get install -y chromium")
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="lite-ui-shots-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lite-ui-"))
    try:
        shots = take(args.models, work, out_dir)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.update_docs:
        for shot in shots:
            shutil.copy(shot, DOCS / shot.name)
        print(f"copied {', '.join(s.name for s in shots)} over {DOCS}")
    print(f"wrote {', '.join(str(s) for s in shots)}")


def take(models: str, work: Path, out_dir: Path) -> list[Path]:
    """Run Lite on fixtures in ``work`` against a dedicated Prefect server and screenshot it into ``out_dir``."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS
    from tests.support.lite_fixtures import serve, source_tree
    from tests.support.lite_hub_fixtures import hub_conversion_mirrors
    from tests.support.prefect_server import dedicated_prefect_server

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
        out = subprocess.run([sys.executable, "-m", "helmflow", "run", "lite", "--models", models,
                              "--storage", str(work / "store")],
                             env=dict(server.env, HELMFLOW_MIRROR=str(work / "mirror"), COLUMNS="200"),
                             capture_output=True, text=True, cwd=str(REPO))
        run_s = time.monotonic() - t0
        if out.returncode:
            sys.exit(f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        flow_run_id = UUID(re.search(r"flow run: ([0-9a-f-]{36})", out.stdout).group(1))
        time.sleep(5)  # task runs reach the API as events, a moment after the flow run ends
        names = sorted(t.name for t in server.task_runs(flow_run_id))  # its scenarios' subflows' task runs too
        kinds = {k: sum(n.startswith(k + " ") for n in names) for k in ("prepare", "run", "release")}
        subflows = server.subflow_runs(flow_run_id)
        print(f"helmflow run lite ({models}): {run_s:.1f} s; {len(names)} task runs {kinds}, "
              f"top level: {len(subflows)} scenario subflow runs and the release")
        print("longest task-run name:", max(names, key=len))
        ui = server.url.removesuffix("/api")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1600, "height": 1400}).new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{ui}/runs/flow-run/{flow_run_id}")
            page.get_by_text("1 Task run", exact=True).first.wait_for()  # the release; the rest are in subflows
            page.wait_for_timeout(5000)  # the graph draws on a canvas
            page.wait_for_timeout(2000)
            page.screenshot(path=str(out_dir / "prefect-lite-flow-run.png"))
            page.goto(f"{ui}/artifacts/artifact/{leaderboard_artifact(server, flow_run_id)}")
            page.get_by_role("row").first.wait_for()
            page.wait_for_timeout(2000)
            page.screenshot(path=str(out_dir / "prefect-lite-artifact.png"), full_page=True)
            columns = page.locator("thead th").count()
            print(f"leaderboard artifact: {page.get_by_role('row').count() - 1} rows, {columns} columns")
            browser.close()
    return [out_dir / "prefect-lite-flow-run.png", out_dir / "prefect-lite-artifact.png"]


if __name__ == "__main__":
    main()
