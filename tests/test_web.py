"""The web report through its real interfaces: the Starlette app (HTTP), the static export and the CLI.

The demo release is built with the plain pipeline functions (no Prefect), once per module; large and
hostile runs are synthesized in the published schemas by ``benchmarks/report_pages.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from starlette.testclient import TestClient

from helmflow import pipeline
from helmflow.storage import Store
from helmflow.web.app import create_app
from helmflow.web.data import CHUNK_ROWS, NotFound
from helmflow.web.export import export_report
from helmflow.web.plots import Point, cost_vs_score_svg, pareto_front
from tests.support.demo import FLOW_RUN_ID, build_demo, chunk_rows, judge_notes, report_pages

pytestmark = pytest.mark.slow  # its fixtures run a board through Prefect


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Store, str]:
    return build_demo(str(tmp_path_factory.mktemp("web") / "store"))


@pytest.fixture(scope="module")
def client(demo) -> TestClient:
    return TestClient(create_app(demo[0].root))


def test_board_page_has_every_model_scenario_and_citation(demo, client):
    store, release_id = demo
    home = client.get("/")
    assert home.status_code == 200 and f"/boards/demo/{release_id}/" in home.text
    latest = client.get("/boards/demo/", follow_redirects=False)
    assert latest.status_code == 307 and latest.headers["location"] == f"/boards/demo/{release_id}/"
    page = client.get(f"/boards/demo/{release_id}/")
    assert page.status_code == 200
    info = store.read_json(f"leaderboards/demo/{release_id}/release.json")
    board = store.read_parquet(f"leaderboards/demo/{release_id}/leaderboard.parquet").to_pylist()
    runs = store.read_parquet(f"leaderboards/demo/{release_id}/runs.parquet").to_pylist()
    assert f"release {release_id} (board version {info['board_version']}), created {info['created_at']}" in page.text
    body = page.text.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert body.count("<tr>") == len(board) + 1  # header + one row per model
    for label in info["scenarios"]:
        assert f">{label}</th>" in body
    for row in board:
        assert f'data-sort="{row["deployment"]}"' in body
    for run in runs:
        assert f'href="runs/{run["run_id"]}/"' in page.text
    first = board[0]
    label = info["scenarios"][0]
    assert (
        f"{first[label]:.3f}</a>" in body
        and f"[{first[label + ' ci_low']:.3f}, {first[label + ' ci_high']:.3f}]" in body
    )
    # offline models cost nothing: the cost plot says so instead of drawing a vertical line of dots
    assert page.text.count("<svg") == 1 and 'id="no-cost"' in page.text and "No cost data" in page.text


def test_run_page_shows_metrics_versions_and_lineage(demo, client, monkeypatch):
    store, release_id = demo
    run_id = store.read_json(f"leaderboards/demo/{release_id}/release.json")["run_ids"][0]
    info = store.read_json(f"runs/{run_id}/run.json")
    url = f"/boards/demo/{release_id}/runs/{run_id}/"
    monkeypatch.setenv("PREFECT_UI_URL", "http://prefect.example:4200")
    page = client.get(url).text
    assert f'href="http://prefect.example:4200/runs/flow-run/{FLOW_RUN_ID}"' in page
    for value in info["versions"].values():
        assert value in page
    assert info["dataset"]["revision"] in page and info["deployment"]["model"] in page
    for name in ("requests", "completions", "stats", "summary"):
        assert f'href="/files/runs/{run_id}/{name}.parquet"' in page
    for m in store.read_parquet(f"runs/{run_id}/summary.parquet").to_pylist():
        assert f"<td>{m['name']}</td>" in page
    assert f'data-total="{info["counts"]["requests"]}"' in page
    monkeypatch.delenv("PREFECT_UI_URL")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    page = client.get(url).text
    assert f'<code id="flow-run">{FLOW_RUN_ID}</code>' in page and "/runs/flow-run/" not in page
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4299/api")
    assert 'href="http://127.0.0.1:4299/runs/flow-run/' in client.get(url).text
    raw = client.get(f"/files/runs/{run_id}/requests.parquet")
    assert raw.status_code == 200 and raw.content == store.read_bytes(f"runs/{run_id}/requests.parquet")


def test_chunk_is_exactly_the_parquet_rows(demo, client):
    store, release_id = demo
    for run_id in store.read_json(f"leaderboards/demo/{release_id}/release.json")["run_ids"][:4]:
        base = f"/boards/demo/{release_id}/runs/{run_id}/"
        rows = chunk_rows(client.get(f"{base}chunk-0.js").text)
        requests = store.read_parquet(f"runs/{run_id}/requests.parquet").to_pylist()
        completions = store.read_parquet(f"runs/{run_id}/completions.parquet").to_pylist()
        stats = store.read_parquet(f"runs/{run_id}/stats.parquet").to_pylist()
        main = store.read_json(f"runs/{run_id}/run.json")["main_metric"]
        assert [r["instance_id"] for r in rows] == [r["instance_id"] for r in requests]
        for row, req, comp in zip(rows, requests, completions):
            assert row["prompt"] == req["prompt"] and row["request"] == json.loads(req["body_json"])
            assert row["completion"] == comp["text"] and row["response"]["request_hash"] == comp["request_hash"]
            mine = {s["name"]: s["value"] for s in stats if s["instance_id"] == req["instance_id"]}
            assert row["stats"] == mine and row["score"] == mine.get(main)
            assert any(ref["correct"] for ref in row["references"])
        index = json.loads(client.get(f"{base}index.js").text.removeprefix("helmflowIndex(").removesuffix(");\n"))
        assert index["score"] == [r["score"] for r in rows]
        assert index["error"] == [c["error"] is not None for c in completions]
        assert index["prompt_truncated"] == [r["prompt_truncated"] for r in requests]
        assert [index["splits"][code] for code in index["split"]] == [r["split"] for r in requests]
        assert client.get(f"{base}chunk-1.js").status_code == 404


def test_large_run_pages_read_one_row_group(tmp_path, monkeypatch):
    store = Store(str(tmp_path / "store"))
    run = report_pages.synthesize_run(store, "big", "synthetic", "offline/x", 1050)
    release_id = report_pages.synthesize_release(store, "big", [run])
    meta = pq.read_metadata(store.path("runs/big/requests.parquet"))
    assert meta.num_row_groups == 2 and meta.row_group(0).num_rows == pipeline.RUN_ROW_GROUP_ROWS == 10 * CHUNK_ROWS
    client = TestClient(create_app(store.root))
    base = f"/boards/big/{release_id}/runs/big/"
    client.get(f"{base}chunk-0.js")  # the run's per-instance columns are read once, on its first page
    decoded = []
    real = pq.ParquetFile.read_row_groups
    monkeypatch.setattr(
        pq.ParquetFile,
        "read_row_groups",
        lambda self, groups, **kw: decoded.append(list(groups)) or real(self, groups, **kw),
    )
    last = chunk_rows(client.get(f"{base}chunk-10.js").text)
    assert decoded == [[1], [1]]  # requests and completions: only the row group holding rows 1000-1049
    decoded.clear()
    client.get(f"{base}chunk-9.js")
    client.get(f"{base}chunk-8.js")
    assert decoded == [[0], [0]]  # rows 900-999 then 800-899: one row group, decoded once
    assert [r["row"] for r in last] == list(range(1000, 1050))
    completions = store.read_parquet("runs/big/completions.parquet")
    assert [r["completion"] for r in last] == completions["text"].to_pylist()[1000:]
    assert [r["error"] for r in last] == completions["error"].to_pylist()[1000:]
    index = client.get(f"{base}index.js").text
    index = json.loads(index.removeprefix("helmflowIndex(").removesuffix(");\n"))
    assert len(index["score"]) == 1050 and index["score"][:4] == [0.0, 1.0, 1.0, 0.0] and index["error"][5]
    assert set(index) == {"splits", "split", "score", "error", "prompt_truncated", "truncated_in_reasoning"}  # no text


def test_text_search_covers_prompts_answers_references_and_ids(tmp_path):
    store = Store(str(tmp_path / "store"))
    run = report_pages.synthesize_run(store, "s1", "synthetic", "offline/x", 1200)
    release_id = report_pages.synthesize_release(store, "b", [run])
    client = TestClient(create_app(store.root))

    def search(q: str) -> list[int]:
        js = client.get(f"/boards/b/{release_id}/runs/s1/search.js", params={"q": q}).text
        text, rows = json.loads("[" + js.removeprefix("helmflowSearch(").removesuffix(");\n") + "]")
        assert text == q
        return rows

    assert search("QUESTION 1150:") == [1150]  # prompt, any case
    assert search("id-0001033") == [1033]  # instance id
    completions = store.read_parquet("runs/s1/completions.parquet")["text"].to_pylist()
    references = [
        r[0]["text"] for r in store.read_parquet("instances/synthetic/sv-s1.parquet")["references"].to_pylist()
    ]
    assert (completions[1149], references[1149]) == ("2299", "2298")  # a wrong answer
    assert search("2299") == [1149]  # only in a completion
    assert search("2298") == [1149]  # only in a reference
    assert search("no such text anywhere") == []


def test_board_page_shows_what_changed_since_the_previous_release(tmp_path):
    store = Store(str(tmp_path / "store"))
    a = report_pages.synthesize_run(store, "ra", "s", "model/a", 30)
    b_old = report_pages.synthesize_run(store, "rb1", "s", "model/b", 30)
    first = report_pages.synthesize_release(store, "b", [a, b_old], "2026-01-01-00000001")
    b_new = dict(report_pages.synthesize_run(store, "rb2", "s", "model/b", 60), score=0.25)
    c = report_pages.synthesize_run(store, "rc", "s", "model/c", 30)
    second = report_pages.synthesize_release(store, "b", [a, b_new, c], "2026-01-01-00000000")  # same day, newer
    client = TestClient(create_app(store.root))
    page = client.get(f"/boards/b/{second}/").text
    assert f"What changed since {first}</h2>" in page
    table = page.split('<table id="changes"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 3  # header, model/b re-run, model/c new; model/a is the same run
    assert re.search(r"<td>model/b</td><td>s</td>.*?<td>data changed</td>", table, re.DOTALL)
    assert f"{0.25 - b_old['score']:+.3f}" in table
    assert re.search(r"<td>model/c</td><td>s</td>.*?<td>new</td>", table, re.DOTALL) and "model/a" not in table
    assert "What changed" not in client.get(f"/boards/b/{first}/").text  # the first release has no predecessor
    picker = page.split('id="release-picker"', 1)[1].split("</select>", 1)[0]
    assert picker.index(second) < picker.index(first)  # newest first, by creation time


def test_annotations_render_when_present(tmp_path):
    store = Store(str(tmp_path / "store"))
    run = report_pages.synthesize_run(store, "judged", "synthetic", "offline/x", 5)
    release_id = report_pages.synthesize_release(store, "b", [run])
    client = TestClient(create_app(store.root))
    assert chunk_rows(client.get(f"/boards/b/{release_id}/runs/judged/chunk-0.js").text)[0]["annotations"] == []
    judge_notes(store, "judged", "partly right", [1])
    client = TestClient(create_app(store.root))  # a fresh process sees the new file
    rows = chunk_rows(client.get(f"/boards/b/{release_id}/runs/judged/chunk-0.js").text)
    (note,) = rows[1]["annotations"]
    assert note["raw_output"] == "partly right so: 0.5" and note["judge"] == "offline/judge" and note["score"] == 0.5
    assert note["template_version"] == "2" and "request_hash" not in note
    assert [r["annotations"] for r in rows if r["row"] != 1] == [[]] * 4


def test_nothing_outside_published_files_is_served(demo, client):
    store, release_id = demo
    (Path(store.root).parent / "secret.txt").write_text("outside")
    store.write_bytes("work/private.parquet", b"not published")
    for path in (
        "/files/../secret.txt",
        "/files/%2e%2e/secret.txt",
        "/files/work/private.parquet",
        "/files/runs/..%2F..%2Fsecret.txt/run.json",
        "/boards/..%2F..%2Fsecret.txt/x/",
        f"/boards/demo/{release_id}/runs/..%2F..%2Fwork/",
        "/boards/demo/nope/",
        f"/boards/demo/{release_id}/runs/0000000000000000/",
        "/static/../data.py",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert "outside" not in response.text and "not published" not in response.text
    page = client.get(f"/boards/demo/{release_id}/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>" not in page.text.replace(" ", "")  # no inline script: the policy forbids it


def test_pareto_front_and_escaped_labels():
    pts = [
        Point("cheap-bad", 1.0, 0.2),
        Point("mid", 2.0, 0.6),
        Point("dominated", 3.0, 0.5),
        Point("best", 5.0, 0.9),
        Point("tie-costlier", 2.0, 0.6),
    ]
    assert [p.label for p in pareto_front(pts)] == ["cheap-bad", "mid", "tie-costlier", "best"]
    svg = str(cost_vs_score_svg([Point("<script>alert(1)</script>", 0.0, 1.0)]))
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_gpqa_text_never_leaves_in_a_static_export(tmp_path, cli):
    store = Store(str(tmp_path / "store"))
    secret = "ZEBRA-QUESTION-TEXT "
    runs = [
        report_pages.synthesize_run(store, "gp1", "gpqa", "offline/x", 30, text=secret),
        report_pages.synthesize_run(store, "ok1", "synthetic", "offline/x", 30, text="VISIBLE-TEXT "),
    ]
    judge_notes(store, "gp1", secret, [1])
    release_id = report_pages.synthesize_release(store, "mix", runs)
    out = cli("report", "mix", "--storage", store.root)
    assert out.returncode == 0, out.stderr
    report = Path(store.root) / "leaderboards" / "mix" / release_id / "report"
    assert f"open {report / 'index.html'}" in out.stdout
    texts = {p: p.read_text() for p in report.rglob("*") if p.is_file()}
    assert not [p for p, t in texts.items() if "ZEBRA" in t]
    gpqa_rows = chunk_rows(texts[report / "runs" / "gp1" / "chunk-0.js"])
    assert [r["instance_id"] for r in gpqa_rows] == [f"id-{i:07d}" for i in range(30)]
    assert gpqa_rows[1]["score"] == 1.0
    assert gpqa_rows[1]["annotations"] == [
        {
            "sample_index": 0,
            "score": 0.5,
            "error": None,
            "prompt_tokens": 40,
            "output_tokens": 9,
            "cost_usd": 0.0,
            "latency_s": 0.1,
            "reasoning_tokens": 5,  # a number: kept; the judge's reasoning text is not
        }
    ]
    assert "prompt" not in gpqa_rows[0] and "completion" not in gpqa_rows[0] and "references" not in gpqa_rows[0]
    assert 'data-redacted="true"' in texts[report / "runs" / "gp1" / "index.html"]
    assert "VISIBLE-TEXT" in texts[report / "runs" / "ok1" / "chunk-0.js"]  # other scenarios keep their text
    # the live app, on one's own machine, may show it
    live = TestClient(create_app(store.root)).get(f"/boards/mix/{release_id}/runs/gp1/chunk-0.js")
    assert "ZEBRA" in live.text


def test_report_command_exports_and_errors_clearly(demo, cli, tmp_path):
    store, release_id = demo
    out = cli("report", "demo", "--release", release_id, "--storage", store.root)
    assert out.returncode == 0, out.stderr
    report = Path(store.root) / "leaderboards" / "demo" / release_id / "report"
    info = store.read_json(f"leaderboards/demo/{release_id}/release.json")
    for run_id in info["run_ids"]:
        assert (report / "runs" / run_id / "index.html").exists() and (report / "runs" / run_id / "chunk-0.js").exists()
        assert (
            f'href="../../../../../../runs/{run_id}/requests.parquet"'
            in (report / "runs" / run_id / "index.html").read_text()
        )
    board = (report / "index.html").read_text()
    assert 'href="static/style.css"' in board and f'href="runs/{info["run_ids"][0]}/index.html"' in board
    assert not list(report.rglob("_tmp.*"))
    bad = cli("report", "no-such-board", "--storage", store.root)
    assert bad.returncode == 2 and "no-such-board" in bad.stderr and "Traceback" not in bad.stderr
    with pytest.raises(NotFound, match="2000-01-01-deadbeef"):
        export_report(store, "demo", "2000-01-01-deadbeef")


def test_web_commands_do_not_import_prefect():
    code = (
        "import sys, helmflow.web.app, helmflow.web.export, helmflow.cli; p = helmflow.cli.build_parser();"
        "p.parse_args(['serve', '--port', '1']); p.parse_args(['report', 'demo']); print('prefect' in sys.modules)"
    )
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert probe.stdout.strip() == "False", probe.stderr


def test_concurrent_first_pages_read_a_run_once(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from helmflow.web.data import Reports

    store = Store(str(tmp_path / "store"))
    report_pages.synthesize_run(store, "r", "synthetic", "offline/x", 2500)
    reads = []
    real = Store.read_parquet
    monkeypatch.setattr(
        Store, "read_parquet", lambda self, key, columns=None: reads.append(key) or real(self, key, columns)
    )
    run = Reports(store).run("r")
    with ThreadPoolExecutor(6) as pool:
        pages = list(pool.map(lambda k: run.chunk(k % 3), range(12)))
    assert sorted(reads) == ["instances/synthetic/sv-r.parquet", "runs/r/stats.parquet"]
    assert [p[0]["row"] for p in pages[:3]] == [0, 100, 200] and pages[3] == pages[0]


def test_symlinks_out_of_the_storage_root_are_never_followed(demo, tmp_path):
    """A planted file symlink (runs/evil/run.json -> a file outside) and a planted directory symlink
    (a board whose folder points outside) serve nothing: every path is resolved and must stay in the root."""
    store, release_id = demo
    outside = tmp_path / "outside"
    (outside / release_id).mkdir(parents=True)
    (outside / "passwd").write_text("root:x:0:0:outside-secret\n")
    for name in ("leaderboard.parquet", "runs.parquet"):  # a complete-looking release, outside the root
        (outside / release_id / name).write_bytes(store.read_bytes(f"leaderboards/demo/{release_id}/{name}"))
    info = store.read_json(f"leaderboards/demo/{release_id}/release.json")
    (outside / release_id / "release.json").write_text(json.dumps({**info, "board": "outside-secret"}))
    root = Path(store.root)
    (root / "runs" / "evil").mkdir(parents=True)
    (root / "runs" / "evil" / "run.json").symlink_to(outside / "passwd")
    (root / "leaderboards" / "evil").symlink_to(outside, target_is_directory=True)
    try:
        client = TestClient(create_app(store.root))
        for path in (
            "/files/runs/evil/run.json",
            f"/files/leaderboards/evil/{release_id}/release.json",
            f"/files/leaderboards/evil/{release_id}/leaderboard.parquet",
            f"/boards/evil/{release_id}/",
            "/boards/evil/",
        ):
            response = client.get(path)
            assert response.status_code == 404, path
            assert "outside-secret" not in response.text, path
        assert "evil" not in client.get("/").text  # not even listed
        with pytest.raises(PermissionError, match="outside the storage root"):
            store.read_bytes("runs/evil/run.json")
        assert not store.exists("runs/evil/run.json")
        assert client.get(f"/files/leaderboards/demo/{release_id}/release.json").status_code == 200  # the real one still is
    finally:
        (root / "runs" / "evil" / "run.json").unlink()
        (root / "runs" / "evil").rmdir()
        (root / "leaderboards" / "evil").unlink()


def test_prefect_link_comes_from_the_active_profile_too(tmp_path, monkeypatch):
    """Reproduced first: after `prefect config set PREFECT_API_URL=…` (a profile, no variable) the
    report showed a bare flow-run id."""
    from helmflow.web.pages import prefect_ui_url

    for name in ("PREFECT_UI_URL", "PREFECT_API_URL", "PREFECT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text('active = "team"\n[profiles.default]\n[profiles.team]\nPREFECT_API_URL = "http://10.1.2.3:4200/api"\n')
    monkeypatch.setenv("PREFECT_PROFILES_PATH", str(profiles))
    assert prefect_ui_url() == "http://10.1.2.3:4200"
    monkeypatch.setenv("PREFECT_PROFILE", "default")  # the profile chosen by the variable wins over `active`
    assert prefect_ui_url() is None
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4299/api")  # and the environment over any profile
    assert prefect_ui_url() == "http://127.0.0.1:4299"


def test_every_response_type_carries_the_security_headers(tmp_path):
    """Before: /static/*, the 405s and the 307 redirects carried no CSP nor nosniff."""
    from helmflow.web import pages
    from helmflow.web.app import SECURITY_HEADERS

    app = create_app(str(tmp_path / "store"))
    client = TestClient(app, raise_server_exceptions=False)

    def broken(*args, **kwargs):
        raise RuntimeError("secret detail of a bug")

    original, pages.home_html = pages.home_html, broken  # a bug in a page: Starlette's own 500 path
    try:
        crashed = client.get("/")
    finally:
        pages.home_html = original
    assert crashed.status_code == 500 and "secret detail" not in crashed.text and "unexpected error" in crashed.text
    for header, value in SECURITY_HEADERS.items():
        assert crashed.headers.get(header) == value, (header, dict(crashed.headers))
    responses = {
        "static": client.get("/static/app.js"),
        "405": client.post("/"),
        "307 (slash)": client.get("/boards/demo", follow_redirects=False),
        "404": client.get("/boards/none/"),
        "home": client.get("/"),
    }
    assert [r.status_code for r in responses.values()] == [200, 405, 307, 404, 200]
    for kind, response in responses.items():
        for header, value in SECURITY_HEADERS.items():
            assert response.headers.get(header) == value, (kind, header, dict(response.headers))
