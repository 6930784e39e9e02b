"""Corruption is found and named: published files carry their sha256.

Reproduced first: a byte-flipped ``completions.parquet`` read back silently as garbage in serve and
report; a truncated file gave a bare 500; one unreadable ``release.json`` took the home page down.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from helmflow import layout, pipeline
from helmflow.integrity import CorruptFile, sha256_hex
from helmflow.operations import cell_lineage
from helmflow.outcomes import ReleaseOutcome
from helmflow.plan.compile import prepare
from helmflow.storage import Store
from helmflow.web.app import create_app
from helmflow.web.export import export_report
from tests.support.tiny_board import TINY, release, run_board

pytestmark = pytest.mark.slow  # its fixtures run a board through Prefect


@pytest.fixture
def published(tmp_path: Path) -> tuple[Store, object, ReleaseOutcome]:
    board = tmp_path / "tiny.yaml"
    board.write_text(TINY)
    store = Store(str(tmp_path / "store"))
    plan = prepare(str(board))
    return store, plan, release(store, plan)


def flip_byte(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_run_and_release_json_record_each_file_sha256(published):
    store, plan, rel = published
    run = plan.runs[0]
    info = store.read_json(f"runs/{run.run_id}/run.json")
    assert set(info["sha256"]) == {*layout.RUN_FILES, layout.RUN_REFERENCES}
    for name, digest in info["sha256"].items():
        assert sha256_hex(store.read_bytes(f"runs/{run.run_id}/{name}")) == digest
    rinfo = store.read_json(f"leaderboards/tiny/{rel.release_id}/release.json")
    assert rinfo["sha256"]["leaderboard.parquet"] == sha256_hex(store.read_bytes(f"leaderboards/tiny/{rel.release_id}/leaderboard.parquet"))


def test_flipped_byte_is_one_error_naming_the_file_in_serve_report_and_lineage(published):
    store, plan, rel = published
    bad, good = plan.runs[0].run_id, plan.runs[1].run_id
    flip_byte(Path(store.path(f"runs/{bad}/completions.parquet")))
    client = TestClient(create_app(store.root), raise_server_exceptions=False)
    base = f"/boards/tiny/{rel.release_id}"
    assert client.get(f"{base}/").status_code == 200  # the board page still shows
    page = client.get(f"{base}/runs/{bad}/")
    assert page.status_code == 500 and f"runs/{bad}/completions.parquet is corrupt" in page.text
    assert "sha256" in page.text and "<html" in page.text.lower()  # an error page, not a bare 500
    assert client.get(f"{base}/runs/{bad}/chunk-0.js").status_code == 500
    assert client.get(f"{base}/runs/{good}/").status_code == 200  # that run only

    with pytest.raises(CorruptFile, match=f"runs/{bad}/completions.parquet is corrupt"):
        export_report(store, "tiny", rel.release_id)
    cells = {c["run_id"]: c for c in cell_lineage(store, "tiny")}
    assert f"runs/{bad}/completions.parquet is corrupt" in cells[bad]["corrupt"] and "corrupt" not in cells[good]


def test_truncated_file_gives_an_error_page_naming_it(published):
    store, plan, rel = published
    run_id = plan.runs[1].run_id
    path = Path(store.path(f"runs/{run_id}/requests.parquet"))
    path.write_bytes(path.read_bytes()[:100])
    client = TestClient(create_app(store.root), raise_server_exceptions=False)
    page = client.get(f"/boards/tiny/{rel.release_id}/runs/{run_id}/")
    assert page.status_code == 500 and f"runs/{run_id}/requests.parquet is corrupt" in page.text
    assert "(100 bytes)" in page.text


def test_corrupt_release_file_is_named_on_its_page(published):
    store, _plan, rel = published
    flip_byte(Path(store.path(f"leaderboards/tiny/{rel.release_id}/leaderboard.parquet")))
    page = TestClient(create_app(store.root), raise_server_exceptions=False).get(f"/boards/tiny/{rel.release_id}/")
    assert page.status_code == 500 and "leaderboard.parquet is corrupt" in page.text


def test_next_run_publishes_a_corrupt_run_again(published):
    store, plan, _rel = published
    run = plan.runs[0]
    key = f"runs/{run.run_id}/completions.parquet"
    original = store.read_bytes(key)
    flip_byte(Path(store.path(key)))
    assert "completions.parquet is corrupt" in pipeline.publication_problem(store, run.run_id)
    assert all(pipeline.publication_problem(store, r.run_id) is None for r in plan.runs[1:])
    outs = run_board(store, plan)
    assert outs[0].wrote and not any(o.wrote for o in outs[1:])  # only the corrupt run is written again
    assert store.read_bytes(key) == original and pipeline.publication_problem(store, run.run_id) is None


def test_one_bad_release_json_leaves_the_home_page_up(published, tmp_path):
    store, _plan, rel = published
    broken = "leaderboards/other/2026-01-01-0badf00d/release.json"
    store.write_bytes(broken, b'{"board": "other", "created_at": ')  # truncated JSON
    client = TestClient(create_app(store.root), raise_server_exceptions=False)
    home = client.get("/")
    assert home.status_code == 200  # before the fix: 500
    assert f"/boards/tiny/{rel.release_id}/" in home.text
    assert f"{broken} is corrupt: not valid JSON" in home.text
    assert client.get("/boards/tiny/").status_code in (200, 307)
