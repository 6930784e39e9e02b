"""The run page of an Image2Struct run shows each instance's image, what the model's answer renders to and the
answer itself side by side: the render is served from the media store as a checked raster, the source is text
(a hostile answer stays inert), and a failed compile says so with its error."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from starlette.testclient import TestClient

from helmflow import render
from helmflow.plan.compile import prepare
from helmflow.storage import Store
from helmflow.web.app import create_app
from helmflow.web.export import export_report
from tests.support.demo import chunk_rows
from tests.test_vision_report import publish

pytest.importorskip("cv2")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("pdflatex") is None, reason="needs TeX Live (texlive-latex-base)")]

CELLS = ["image2latex-equation-easy", "image2latex-table-easy"]
# a LaTeX comment: the answer draws $$x^2$$ exactly, and its source is markup a page must not run
HOSTILE = '$$x^2$$ % </pre><img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'


@pytest.fixture(scope="module")
def board(tmp_path_factory) -> Iterator[tuple[Store, str, dict[str, str]]]:
    from helmflow.devserver import start_dev_server
    from tests.support.image2struct_fixtures import write_answers, write_mirror

    root = tmp_path_factory.mktemp("image2struct-report")
    mirror = write_mirror(root / "mirror", music=False)
    answers = write_answers(mirror)
    table = json.loads(answers.read_text())
    for sha, answer in table.items():
        if answer.endswith("\n$$x^2$$\n```"):  # eq-1's answer
            table[sha] = answer.replace("$$x^2$$", HOSTILE)
    answers.write_text(json.dumps(table))
    repo = Path(__file__).resolve().parents[1]
    with pytest.MonkeyPatch.context() as patch, start_dev_server(
            "--policy", "fn:tests.support.image2struct_fixtures:policy",
            env={"PYTHONPATH": str(repo), "IMAGE2STRUCT_ANSWERS": str(answers)}) as server:
        patch.setenv("HELMFLOW_MIRROR", str(mirror))
        models = root / "models.yaml"
        models.write_text(json.dumps({"deployments": [
            {"name": "dev/vlm", "client": "openai-compatible", "model": "dev-vlm", "base_url": server.openai_url,
             "context_window": 32768}]}))
        store = Store(str(root / "store"))
        plan = prepare("image2struct", models=["dev/vlm"], models_file=str(models), scenarios=CELLS)
        runs, release = publish(store, plan)
        yield store, release, {r.scenario: r.run_id for r in runs}


def test_a_row_carries_its_render_and_the_render_is_served_and_exported(board):
    store, release, runs = board
    client = TestClient(create_app(store.root))
    (row,) = chunk_rows(client.get(f"/boards/image2struct/{release}/runs/{runs[CELLS[0]]}/chunk-0.js").text)
    drawn = row["render"]
    assert (drawn["renderer"], drawn["renderer_version"], drawn["compiled"], drawn["reused"]) == (
        "latex", render.VERSIONS["latex"], True, False)
    served = client.get(f"/{drawn['image']['uri']}")
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    assert hashlib.sha256(served.content).hexdigest() == drawn["image"]["sha256"]
    assert Image.open(io.BytesIO(served.content)).size[0] > 10
    (broken,) = chunk_rows(client.get(f"/boards/image2struct/{release}/runs/{runs[CELLS[1]]}/chunk-0.js").text)
    assert broken["render"]["compiled"] is False and broken["render"]["image"] is None and broken["render"]["error"]
    from helmflow.operations import cell_lineage

    lineage = {c["scenario"]: c["renders"] for c in cell_lineage(store, "image2struct", release)}
    assert lineage[CELLS[0]] == {"renderers": {"latex": render.VERSIONS["latex"]}, "rendered": 1, "reused": 0, "failed": 0}
    assert lineage[CELLS[1]]["failed"] == 1  # helmflow lineage prints these
    exported = export_report(store, "image2struct", release)
    assert not exported.refused
    copied = {k.rpartition("/")[2] for k in store.find(f"leaderboards/image2struct/{release}/report/media")}
    assert f"{drawn['image']['sha256']}.png" in copied  # the static page shows the render too


def test_the_run_page_shows_image_render_and_source_side_by_side_in_chromium(board, browser):
    """The static report (helmflow report's pages, served as plain files): the app serves the same viewer."""
    import functools
    import http.server
    import threading

    store, release, runs = board
    export_report(store, "image2struct", release)
    folder = Path(store.path(f"leaderboards/image2struct/{release}/report"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    context = browser.new_context(viewport={"width": 1400, "height": 3000})
    problems: list[str] = []
    try:
        shown = {}
        for cell in CELLS:
            page = context.new_page()
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"http://127.0.0.1:{server.server_port}/runs/{runs[cell]}/index.html")
            page.wait_for_selector("#viewer[data-state=ready]", timeout=15_000)
            for _ in range(150):  # the page's CSP forbids eval: poll from here until every image settled
                state = page.eval_on_selector_all(".structure img.thumb", "i => i.map(x => [x.complete, x.naturalWidth])")
                if state and all(done for done, _ in state):
                    break
                page.wait_for_timeout(100)
            shown[cell] = page.eval_on_selector_all(".structure figure", """fs => fs.map(f => {
                const r = f.getBoundingClientRect(), img = f.querySelector('img');
                return {cls: f.className, top: r.top, left: r.left, width: img ? img.naturalWidth : null,
                        text: f.querySelector('pre') ? f.querySelector('pre').textContent : null}; })""")
            shown[cell + " title"] = page.title()
            shown[cell + " planted"] = page.eval_on_selector_all("img[src='x'], .structure script", "e => e.length")
            page.close()
        image, drawn, source = shown[CELLS[0]]
        assert [f["cls"] for f in (image, drawn, source)] == ["structure-image", "structure-render", "structure-source"]
        assert image["top"] == drawn["top"] == source["top"] and image["left"] < drawn["left"] < source["left"]
        assert image["width"] > 0 and drawn["width"] > 0  # both decoded: the original and the render
        assert HOSTILE in source["text"]  # the answer as text, verbatim
        assert shown[CELLS[0] + " planted"] == 0 and "pwned" not in shown[CELLS[0] + " title"]
        _, failed, _ = shown[CELLS[1]]
        assert failed["width"] is None and failed["text"].startswith("did not compile: ")
        assert not problems
    finally:
        context.close()
        server.shutdown()
        server.server_close()
