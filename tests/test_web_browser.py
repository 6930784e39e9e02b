"""The web report in a real browser (Debian's Chromium driven by Playwright): the live app started
with ``helmflow serve`` and the static export opened from disk, plus hostile model output.

A browser that cannot start fails these tests (never skips them): install it with
``apt-get install chromium`` (scripts/test.sh does so when run as root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.cli import REPO, run_cli, spawn_cli
from tests.support.demo import build_demo, judge_notes, report_pages
from tests.support.processes import free_port, stop_process, wait_http

pytestmark = pytest.mark.slow

HOSTILE = (
    '<script>window.__pwned="script"</script><img src=x onerror="window.__pwned=\'img\'">'
    '<a href="javascript:window.__pwned=\'link\'">click me</a> javascript:window.__pwned="bare" '
    '"><svg onload="window.__pwned=\'svg\'"></svg>'
)

# our own Arabic sentence ("which planet is the largest?"): its shadda comes before its kasra and its alef and hamza
# are two code points, both of which NFC would rewrite; then a Thai word whose SARA AM NFKC would split in two
RTL = "\u0623\u064a\u0651\u064f \u0627\u0654\u0644\u0643\u0648\u0627\u0643\u0628 \u0623\u0643\u0628\u0631\u061f \u0e19\u0e49\u0e33 "


WIDE_LABELS = [f"legalbench-international_citizenship_questions-{i}" for i in range(6)] + [
    "arithmetic-5x-chat", "sr-variable-substitution", "wmt_14-language_pair=de-en", "math-chain_of_thought"]
WIDE_MODELS = ["offline/solver", "offline/solver-noisy", "provider/a-model-with-a-rather-long-deployment-name"]


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.problems = []
    pg.on("pageerror", lambda e: pg.problems.append(f"page error: {e}"))
    pg.on("dialog", lambda d: (pg.problems.append(f"dialog: {d.message}"), d.dismiss()))
    yield pg
    context.close()


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    """A demo release, plus a 'hostile' board whose prompts, answers, judge text and model name attack the page."""
    folder = tmp_path_factory.mktemp("browser")
    models = folder / "models.yaml"  # the shipped solver with what a models file may say of its model
    models.write_text(yaml.safe_dump({"deployments": [{
        "name": "offline/solver", "client": "offline", "model": "solver", "revision": "1.1",
        "options": {"behavior": "solver", "accuracy": 1.0},
        "metadata": {"display_name": f"Solver {HOSTILE}", "creator": "helmflow", "parameters": 1_500_000_000,
                     "release_date": "2026-11-01", "access": "open", "link": "https://example.org/solver"}}]}))
    store, release_id = build_demo(str(folder / "store"), models_file=str(models))
    run = report_pages.synthesize_run(store, "hostile1", "synthetic", f"offline/{HOSTILE}", 12, text=HOSTILE)
    judge_notes(store, "hostile1", HOSTILE, list(range(12)))
    report_pages.synthesize_release(store, "hostile", [run])
    report_pages.synthesize_release(store, "rtl", [report_pages.synthesize_run(store, "rtl1", "alghafa", "offline/rtl", 3,
                                                                           text=RTL)])
    wide = [report_pages.synthesize_run(store, f"wide{i}-{j}", label, model, 3)  # HELM Lite's longest labels
            for i, label in enumerate(WIDE_LABELS) for j, model in enumerate(WIDE_MODELS)]
    report_pages.synthesize_release(store, "wide", wide)
    return store, release_id


@pytest.fixture(scope="module")
def live(storage):
    """``helmflow serve`` on a free port (the real command, default host)."""
    store, _ = storage
    port = free_port()
    log = Path(store.root).parent / "serve.log"
    proc = spawn_cli(["serve", "--storage", store.root, "--port", str(port)], stdout=log.open("w"),
                     stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
    try:
        wait_http(f"http://127.0.0.1:{port}/", timeout=60, proc=proc)
        assert f"at http://127.0.0.1:{port}/" in log.read_text()
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def exported(storage):
    store, _release_id = storage
    for board in ("demo", "hostile"):
        out = run_cli("report", board, "--storage", store.root, cwd=REPO)
        assert out.returncode == 0, out.stderr
    return Path(store.root) / "leaderboards"


def screenshot(page, name: str, tmp_dir: Path) -> None:
    """Saved with the test run; ``HELMFLOW_UPDATE_SCREENSHOTS=1`` also refreshes docs/screenshots/ (the
    documentation's)."""
    targets = [tmp_dir / name]
    if os.environ.get("HELMFLOW_UPDATE_SCREENSHOTS") == "1":
        targets.append(REPO / "docs" / "screenshots" / name)
    if name == "run.png":  # the run page from its top: metrics, lineage, filters and the first instances
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(targets[0]), full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": 1500})
    else:
        page.screenshot(path=str(targets[0]), full_page=name == "board.png")
    assert targets[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for t in targets[1:]:
        shutil.copy(targets[0], t)


def wait_ready(page) -> None:
    page.wait_for_selector("#viewer[data-state=ready]", timeout=15_000)


def column(page, index: int) -> list[str]:
    return page.eval_on_selector_all(
        f"#leaderboard tbody tr td:nth-child({index})", "tds => tds.map(t => t.dataset.sort)"
    )


def walk_the_report(page, board_url: str, store, release_id: str, shots: Path | None) -> None:
    """Open the board, sort, click a cell, filter to incorrect, open one instance, compare with the Parquet."""
    page.goto(board_url)
    assert page.inner_text("#release-id") == release_id
    board = store.read_parquet(f"leaderboards/demo/{release_id}/leaderboard.parquet").to_pylist()
    assert sorted(column(page, 1)) == sorted(r["deployment"] for r in board)
    page.click("#leaderboard th:nth-child(2)")  # mean score: highest first
    scores = [float(v) for v in column(page, 2)]
    assert scores == sorted((r["mean_score"] for r in board), reverse=True)
    page.click("#leaderboard th:nth-child(2)")
    assert [float(v) for v in column(page, 2)] == sorted(scores)
    page.click("#leaderboard th:nth-child(1)")
    assert column(page, 1) == sorted(r["deployment"] for r in board)
    if shots:
        screenshot(page, "board.png", shots)

    runs = store.read_parquet(f"leaderboards/demo/{release_id}/runs.parquet").to_pylist()
    cell = min((r for r in runs if r["score"] is not None and 0 < r["score"] < 1), key=lambda r: abs(r["score"] - 0.5))
    page.click(f'#leaderboard td.cell a[href^="runs/{cell["run_id"]}/"]')
    wait_ready(page)
    requests = store.read_parquet(f"runs/{cell['run_id']}/requests.parquet").to_pylist()
    completions = store.read_parquet(f"runs/{cell['run_id']}/completions.parquet").to_pylist()
    stats = store.read_parquet(f"runs/{cell['run_id']}/stats.parquet").to_pylist()
    main = {s["instance_id"]: s["value"] for s in stats if s["name"] == cell["main_metric"]}
    assert f"of {len(requests)}" in page.inner_text("#page-info")

    page.select_option("select[name=status]", "incorrect")
    wait_ready(page)
    incorrect = [
        i
        for i, (r, c) in enumerate(zip(requests, completions))
        if c["error"] is None and main.get(r["instance_id"]) is not None and main[r["instance_id"]] < 0.5
    ]
    assert incorrect and f"of {len(incorrect)}" in page.inner_text("#page-info")
    shown = page.eval_on_selector_all("#instances > li", "lis => lis.map(li => Number(li.dataset.row))")
    assert shown == incorrect[:20]
    page.select_option("select[name=split]", "test")  # every demo instance is a test instance
    wait_ready(page)
    assert f"of {len(incorrect)}" in page.inner_text("#page-info") and "split=test" in page.url
    assert set(page.eval_on_selector_all("#instances .verdict", "bs => bs.map(b => b.textContent)")) == {"incorrect"}

    card = page.locator("#instances > li").nth(0)
    card.locator("details.raw > summary").click()
    row = incorrect[0]
    body = json.loads(requests[row]["body_json"])
    if body.get("messages"):  # a chat run shows each message as sent
        assert card.locator("pre.message").all_text_contents() == [m["content"] for m in body["messages"]]
    else:
        assert card.locator("pre.prompt").text_content() == requests[row]["prompt"]
    assert card.locator("pre.completion").text_content() == completions[row]["text"]
    assert json.loads(card.locator("pre.request").text_content()) == json.loads(requests[row]["body_json"])
    response = json.loads(card.locator("pre.response").text_content())
    assert response["request_hash"] == completions[row]["request_hash"] and response["text"] == completions[row]["text"]
    # the open instance reaches the URL from the details' toggle event, a moment after the click
    page.wait_for_function("row => new URLSearchParams(location.hash.slice(1)).get('open') === String(row)", arg=row)
    assert f"open={row}" in page.url and "status=incorrect" in page.url
    if shots:
        screenshot(page, "run.png", shots)
    page.reload()  # the filter and the open instance survive a reload (state lives in the URL)
    wait_ready(page)
    assert page.locator("#instances > li details.raw[open]").count() == 1


def test_live_app_in_a_browser(page, live, storage, tmp_path):
    store, release_id = storage
    walk_the_report(page, f"{live}/boards/demo/", store, release_id, tmp_path)
    assert page.problems == []


def test_static_export_from_disk(page, exported, storage, tmp_path):
    store, release_id = storage
    walk_the_report(
        page, (exported / "demo" / release_id / "report" / "index.html").as_uri(), store, release_id, tmp_path
    )
    assert page.url.startswith("file://")
    page.click("#back")
    assert page.url.endswith("/report/index.html")
    assert page.problems == []


@pytest.mark.parametrize("where", ["live", "static"])
def test_text_search_finds_the_instance(page, live, exported, storage, where):
    store, release_id = storage
    run_id = store.read_json(f"leaderboards/demo/{release_id}/release.json")["run_ids"][0]
    prompts = store.read_parquet(f"runs/{run_id}/requests.parquet")["prompt"].to_pylist()
    needle = max(prompts[3].split(), key=len)  # a word of the 4th prompt
    if where == "live":
        page.goto(f"{live}/boards/demo/{release_id}/runs/{run_id}/")
    else:
        page.goto((exported / "demo" / release_id / "report" / "runs" / run_id / "index.html").as_uri())
    wait_ready(page)
    page.fill("input[name=q]", needle)
    page.click("#filters button[type=submit]")
    wait_ready(page)
    expected = [i for i, p in enumerate(prompts) if needle.lower() in p.lower()]
    assert 3 in expected
    assert page.eval_on_selector_all("#instances > li", "lis => lis.map(li => Number(li.dataset.row))") == expected[:20]


@pytest.mark.parametrize("where", ["live", "static"])
def test_hostile_text_never_runs(page, live, exported, where, tmp_path):
    if where == "live":
        board_url = f"{live}/boards/hostile/"
    else:
        board_url = next((exported / "hostile").glob("*/report/index.html")).as_uri()
    page.goto(board_url)
    assert HOSTILE in page.inner_text("#leaderboard")  # the model name, shown as text
    page.click("#leaderboard td.cell a")
    wait_ready(page)
    for status in ("error", "incorrect", ""):
        page.select_option("select[name=status]", status)
        wait_ready(page)
        for summary in page.locator("#instances details.raw > summary").all():
            summary.click()
        page.mouse.move(300, 300)
        page.wait_for_timeout(200)
        assert page.evaluate("window.__pwned") is None
    first = page.locator("#instances > li").nth(0)
    assert first.locator("pre.prompt").text_content().startswith(HOSTILE)
    assert HOSTILE in first.locator("pre.completion").text_content()
    # the reasoning is folded under the answer, apart from it, and shown as text once opened
    assert not first.locator("details.reasoning").get_attribute("open") is not None
    first.locator("details.reasoning > summary").click()
    assert first.locator("pre.reasoning-text").text_content() == f"{HOSTILE}thinking about 0"
    assert "thinking about" not in first.locator("pre.completion").text_content()
    assert page.evaluate("window.__pwned") is None
    page.select_option("select[name=status]", "reasoning")  # the instances whose budget ran out while reasoning
    wait_ready(page)
    assert page.eval_on_selector_all("#instances > li", "lis => lis.map(li => Number(li.dataset.row))") == [3]
    assert page.locator("#instances > li .badge-reasoning").text_content() == "truncated in reasoning"
    page.select_option("select[name=status]", "")
    wait_ready(page)
    first.locator(".annotation details > summary").click()
    assert first.locator(".annotation pre.judge-output").text_content() == f"{HOSTILE} so: 0.5"
    assert HOSTILE in first.locator(".annotation details pre").text_content()
    assert HOSTILE in first.locator("ul.refs").text_content()
    dom = page.evaluate("""() => ({
        scripts: document.querySelectorAll('main script, #instances script').length,
        images: document.querySelectorAll('img').length,
        links: [...document.querySelectorAll('a')].map(a => a.getAttribute('href'))
                   .filter(h => /^\\s*javascript:/i.test(h)),
        svgs: document.querySelectorAll('#instances svg').length,
    })""")
    assert dom == {"scripts": 0, "images": 0, "links": [], "svgs": 0}
    page.goto(board_url)
    page.click("#compare-link")
    page.wait_for_selector("#compare[data-state=ready]")
    page.select_option("select[name=show]", "")
    page.wait_for_selector("#compare[data-state=ready]")
    page.locator("#pairs details > summary").first.click()
    assert HOSTILE in page.locator("#pairs pre.completion").first.text_content()
    assert page.problems == []
    assert page.evaluate("window.__pwned") is None


def test_arabic_text_reads_right_to_left_unnormalised(page, live):
    import unicodedata

    assert unicodedata.normalize("NFC", RTL) != RTL and unicodedata.normalize("NFKC", RTL) != RTL
    page.goto(f"{live}/boards/rtl/")
    page.click("#leaderboard td.cell a")
    wait_ready(page)
    first = page.locator("#instances > li").nth(0)
    for where in ("pre.prompt", "pre.completion", "ul.refs li"):
        shown = first.locator(where).first
        assert shown.get_attribute("dir") == "auto"
        assert shown.evaluate("e => e.matches(':dir(rtl)')"), where  # its first strong character is Arabic
        assert shown.text_content().removeprefix("✓ ").startswith(RTL)  # the same code points, in the same order
    assert page.problems == []


@pytest.mark.parametrize("where", ["live", "static"])
def test_two_models_side_by_side(page, live, exported, storage, where, tmp_path):
    store, release_id = storage
    runs = store.read_parquet(f"leaderboards/demo/{release_id}/runs.parquet").to_pylist()
    same = [r for r in runs if r["scenario"] == runs[0]["scenario"] and r["score"] is not None]
    a, b = max(same, key=lambda r: r["score"]), min(same, key=lambda r: r["score"])

    def correct(run):  # per request row, from the Parquet
        ids = store.read_parquet(f"runs/{run['run_id']}/requests.parquet")["instance_id"].to_pylist()
        stats = store.read_parquet(f"runs/{run['run_id']}/stats.parquet").to_pylist()
        main = {s["instance_id"]: s["value"] for s in stats if s["name"] == run["main_metric"]}
        return ids, [main.get(i) is not None and main[i] >= 0.5 for i in ids]

    (ids_a, ok_a), (ids_b, ok_b) = correct(a), correct(b)
    assert ids_a == ids_b
    only_a = [n for n, (x, y) in enumerate(zip(ok_a, ok_b)) if x and not y]
    assert only_a, "the best and the worst model should disagree somewhere"
    if where == "live":
        page.goto(f"{live}/boards/demo/{release_id}/")
    else:
        page.goto((exported / "demo" / release_id / "report" / "index.html").as_uri())
    page.click("#compare-link")
    page.wait_for_selector("#compare[data-state=ready]")
    page.select_option("select[name=scenario]", a["scenario"])
    page.select_option("select[name=a]", a["run_id"])
    page.select_option("select[name=b]", b["run_id"])
    page.select_option("select[name=show]", "a")
    page.wait_for_selector("#compare[data-state=ready]")
    assert f"only A {len(only_a)} " in page.inner_text("#summary")
    shown = page.eval_on_selector_all("#pairs > li", "lis => lis.map(li => Number(li.dataset.row))")
    assert shown == only_a[:20]
    completions = store.read_parquet(f"runs/{b['run_id']}/completions.parquet")["text"].to_pylist()
    assert page.locator("#pairs > li").nth(0).locator(".side-b pre.completion").text_content() == completions[only_a[0]]
    assert page.locator("#pairs > li").nth(0).locator(".instance-id").text_content() == ids_a[only_a[0]]
    # the paired difference of the picked pair, as helmflow compare computes it from the stored stats
    from helmflow import compare

    rows = compare.compare_models(store, compare.load_release(store, "demo", release_id), a["deployment"], b["deployment"])
    want = next(r for r in rows if r["scenario"] == a["scenario"])
    assert (f"A − B = {want['delta']:+.3f} [{want['ci_low']:+.3f}, {want['ci_high']:+.3f}]"
            in page.inner_text("#paired-pick"))
    assert page.locator("#paired tr.current").count() == 1
    if where == "live":
        screenshot(page, "compare.png", tmp_path)
    assert page.problems == []


@pytest.mark.parametrize("where", ["live", "static"])
def test_ranks_and_tied_groups_on_the_board_page(page, live, exported, storage, where):
    """Each model's rank with its 95% interval (``2 (1–3)``), its tied group, and each cell's rank, as the
    leaderboard Parquet has them."""
    from helmflow.terminal import rank_text

    store, release_id = storage
    board = store.read_parquet(f"leaderboards/demo/{release_id}/leaderboard.parquet").to_pylist()
    labels = store.read_json(f"leaderboards/demo/{release_id}/release.json")["scenarios"]
    if where == "live":
        page.goto(f"{live}/boards/demo/{release_id}/")
    else:
        page.goto((exported / "demo" / release_id / "report" / "index.html").as_uri())
    assert page.inner_text("#rank-header") == "rank (95%)"
    shown = page.eval_on_selector_all("#leaderboard tbody tr", """trs => trs.map(tr => ({
        model: tr.cells[0].dataset.sort, rank: tr.querySelector('td.rank').textContent.trim(),
        tied: tr.querySelector('td.tied').textContent.trim(),
        cells: [...tr.querySelectorAll('td.cell .rank')].map(s => s.textContent.trim())}))""")
    assert [r["model"] for r in shown] == [r["deployment"] for r in board]
    for got, row in zip(shown, board, strict=True):
        assert got["rank"] == rank_text(row) and got["tied"] == str(row["tied_group"])
        assert got["cells"] == [f"rank {rank_text(row, lab + ' ')}" for lab in labels]
    page.click("#rank-header")  # sorts by rank, best first
    order = page.eval_on_selector_all("#leaderboard tbody td.rank", "tds => tds.map(t => Number(t.dataset.sort))")
    assert order == sorted(order)
    assert page.problems == []


def test_every_run_page_shows_its_first_request_as_sent(page, live, storage):
    """Text and chat prompts alike: the first instance of every run equals its requests.parquet row."""
    store, release_id = storage
    kinds = set()
    for run_id in store.read_json(f"leaderboards/demo/{release_id}/release.json")["run_ids"]:
        requests = store.read_parquet(f"runs/{run_id}/requests.parquet")
        page.goto(f"{live}/boards/demo/{release_id}/runs/{run_id}/")
        wait_ready(page)
        first = requests.slice(0, 1).to_pylist()[0]
        body = json.loads(first["body_json"])
        card = page.locator("#instances > li").nth(0)
        assert card.locator(".instance-id").text_content() == first["instance_id"]
        if body.get("messages"):
            kinds.add("chat")
            shown = card.locator("pre.message").all_text_contents()
            assert shown == [m["content"] for m in body["messages"]]
        else:
            kinds.add("text")
            assert card.locator("pre.prompt").text_content() == body["prompt"] == first["prompt"]
    assert page.problems == []
    assert kinds, "no run was checked"


def test_board_page_marks_the_best_per_column_and_shows_model_facts(page, live, storage):
    """Against the published leaderboard: every column's best deployments carry the mark (all of them on
    a tie), no other cell does; the models table shows the facts, escaped; intervals stay on the score's line."""
    store, release_id = storage
    page.goto(f"{live}/boards/demo/")
    board = store.read_parquet(f"leaderboards/demo/{release_id}/leaderboard.parquet").to_pylist()
    labels = store.read_json(f"leaderboards/demo/{release_id}/release.json")["scenarios"]
    headers = page.eval_on_selector_all("#leaderboard thead th", "ths => ths.map(t => t.textContent.trim())")
    marked = page.eval_on_selector_all(
        "#leaderboard tbody tr", "trs => trs.map(tr => [tr.cells[0].dataset.sort, "
        "[...tr.cells].map((c, i) => c.classList.contains('best') ? i : -1).filter(i => i >= 0)])")
    for key in ["mean_score", "mean_win_rate", *labels]:
        values = [r[key] for r in board if r[key] is not None]
        index = headers.index({"mean_score": "mean score", "mean_win_rate": "mean win rate"}.get(key, key))
        got = sorted(name for name, cols in marked if index in cols)
        expected = sorted(r["deployment"] for r in board if r[key] == max(values)) if len(set(values)) > 1 else []
        assert got == expected, (key, got, expected)
    assert any(cols for _, cols in marked)  # the demo's columns do differ: some cell is marked

    facts = page.eval_on_selector_all("#model-facts tbody tr", "trs => trs.map(tr => tr.innerText)")
    solver = next(f for f in facts if f.startswith("offline/solver\t"))
    assert "helmflow" in solver and "1.5B" in solver and "2026-11-01" in solver and "open" in solver
    assert page.get_attribute('#model-facts a[href="https://example.org/solver"]', "rel") == "noopener noreferrer nofollow"
    assert page.evaluate("window.__pwned") is None and not page.problems, page.problems
    assert "<script>" in page.inner_text("#model-facts")  # shown as text, not run
    cell = page.query_selector("#leaderboard td.cell")
    box = page.evaluate("c => [c.querySelector('a').getBoundingClientRect().top, "
                        "c.querySelector('.ci').getBoundingClientRect().top]", cell)
    assert abs(box[0] - box[1]) < 4, box  # the interval sits beside its score, not under it
    assert "No cost data" in page.inner_text("#no-cost")  # offline models cost nothing: no line of dots


def test_a_wide_board_page_fits_1400_px_and_its_table_scrolls_inside_with_the_model_column_in_view(browser, live):
    """At a 1,400 px viewport the page never scrolls sideways: a leaderboard wider than that scrolls in its own
    box, the model column stays in view, headers stay on one line (no break at a hyphen) and each interval
    beside its score."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        pg = context.new_page()
        for board in ("demo", "wide"):
            pg.goto(f"{live}/boards/{board}/")
            assert pg.evaluate("document.documentElement.scrollWidth") <= 1400, board
            lines = pg.eval_on_selector_all("#leaderboard thead th", "ths => ths.map(t => { const r = "
                                            "document.createRange(); r.selectNodeContents(t); "
                                            "return [t.textContent.trim(), r.getClientRects().length]; })")
            assert [t for t, n in lines if n != 1] == [], lines
            tops = pg.eval_on_selector_all("#leaderboard td.cell", "tds => tds.map(c => c.querySelector('a')"
                                           ".getBoundingClientRect().top - c.querySelector('.ci').getBoundingClientRect().top)")
            assert tops and max(map(abs, tops)) < 4, tops
        assert {t for t, _ in lines} >= set(WIDE_LABELS)
        box = pg.evaluate_handle("document.querySelector('#leaderboard').parentElement")
        width, shown = pg.evaluate("b => [b.scrollWidth, b.clientWidth]", box)
        assert shown <= 1400 < width, (width, shown)  # wider than the viewport: it scrolls inside its box
        pg.evaluate("b => { b.scrollLeft = b.scrollWidth; }", box)  # to its last column
        names = pg.eval_on_selector_all("#leaderboard tbody td:first-child", "tds => tds.map(td => [td.textContent.trim(), "
                                        "td.getBoundingClientRect().left - td.closest('.table-scroll').getBoundingClientRect().left])")
        assert sorted(n for n, _ in names) == sorted(WIDE_MODELS) and all(abs(x) < 2 for _, x in names), names
        last = pg.evaluate("b => [b.querySelector('thead th:last-child').getBoundingClientRect().right, "
                           "b.getBoundingClientRect().right, b.scrollLeft]", box)
        assert last[2] > 0 and last[0] <= last[1] + 1, last  # scrolled, and the last column is in the box
    finally:
        context.close()
