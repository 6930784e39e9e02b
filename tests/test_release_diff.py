"""``helmflow diff`` and the report's release-diff page: a second demo release where one deployment got
noisier, against the first, from the runs' stored per-instance stats."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from helmflow import compare
from helmflow.web.app import create_app
from tests.support.demo import build_demo

pytestmark = pytest.mark.slow  # its fixtures run a board through Prefect

NOISIER = """deployments:
  - name: offline/solver
    client: offline
    model: solver-2
    revision: "2"
    description: The solver, now wrong on a seeded half of the requests.
    options: {behavior: solver, accuracy: 0.5}
"""


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("diff") / "store"
    models = root.parent / "noisier.yaml"
    models.write_text(NOISIER)
    store, first = build_demo(str(root), max_instances=30)
    _, second = build_demo(str(root), max_instances=30, models_file=str(models))
    assert first != second
    return store, first, second


def values(store, run_id):
    return compare.instance_values(store, run_id, "exact_match")


def test_the_noisier_cells_changed_significantly_and_the_rest_are_the_same_run(two_releases):
    store, first, second = two_releases
    diff = compare.release_diff(store, "demo")  # default: the previous and the latest release
    assert (diff["from"], diff["to"]) == (first, second)
    cells = {(c["scenario"], c["deployment"]): c for c in diff["cells"]}
    moved = [c for c in diff["cells"] if c["what"] != "same run"]
    assert {c["deployment"] for c in moved} == {"offline/solver"}
    assert all(c["what"] == "same run" for k, c in cells.items() if k[1] != "offline/solver")
    assert diff["cells"][:len(moved)] == moved  # the significant changes sort first
    for c in moved:
        assert c["changed"] == ["model"] and c["what"] == "model changed"
        before, after = values(store, c["run_before"]), values(store, c["run_after"])
        shared = sorted(before.keys() & after.keys())
        assert c["n"] == len(shared) == 30
        assert c["delta"] == pytest.approx(sum(after[i] - before[i] for i in shared) / 30)
        assert c["ci_high"] < 0 and c["significant"]
        went_wrong = [i for i in shared if before[i] == 1 and after[i] == 0]
        assert c["flipped"] == len(went_wrong) > 5 and [f["instance_id"] for f in c["flips"]] == went_wrong
        rows = store.read_parquet(f"runs/{c['run_after']}/requests.parquet")["instance_id"].to_pylist()
        assert all(rows[f["row_after"]] == f["instance_id"] for f in c["flips"])
    assert compare.regressions(diff) == moved
    assert compare.regressions(diff, threshold=1.0) == []  # no cell fell by a whole point


def test_the_diff_command_lists_changes_flips_and_links(two_releases, cli):
    store, first, second = two_releases
    out = cli("diff", "demo", "--storage", store.root, env={"HELMFLOW_REPORT_URL": "http://report.example"})
    assert out.returncode == 0, out.stderr
    assert f"demo: {first} → {second}" in out.stdout
    assert re.search(r"arithmetic-3\s+│\s+offline/solver\s+│\s+1\.000\s+│\s+0\.\d+\s+│\s+-0\.\d+ \[-0\.\d+, -0\.\d+\] \*",
                     out.stdout), out.stdout
    assert "model changed" in out.stdout and "offline/echo" not in out.stdout.split("cells:")[0]
    flip = re.search(r"flipped arithmetic-3 x offline/solver (\S+): 1 → 0  before (\S+)  after (\S+)", out.stdout)
    assert flip, out.stdout
    assert flip.group(2).startswith(f"http://report.example/boards/demo/{first}/runs/")
    assert flip.group(3).startswith(f"http://report.example/boards/demo/{second}/runs/")
    with_all = cli("diff", "demo", "--all", "--flips", "0", "--from", first, "--to", second, "--storage", store.root)
    assert "offline/echo" in with_all.stdout and "same run" in with_all.stdout and "\nflipped " not in with_all.stdout


@pytest.mark.parametrize("argv, message", [
    (["--from", "2020-01-01-deadbeef"], "has no release '2020-01-01-deadbeef'"),
    (["--to", "../x"], "has no release '../x'"),
    (["--flips", "-1"], "--flips must be 0 or more"),
])
def test_bad_releases_are_one_line_and_exit_2(two_releases, cli, argv, message):
    store, _, _ = two_releases
    out = cli("diff", "demo", *argv, "--storage", store.root)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr


def test_a_board_with_one_release_has_nothing_to_diff(tmp_path, cli):
    store, only = build_demo(str(tmp_path / "store"), max_instances=4)
    out = cli("diff", "demo", "--storage", store.root)
    assert out.returncode == 2 and f"no release before {only}" in out.stderr


def test_the_release_diff_page_sorts_by_significance_and_links_both_answers(two_releases):
    store, first, second = two_releases
    client = TestClient(create_app(store.root))
    board = client.get(f"/boards/demo/{second}/").text
    assert 'id="diff-link" href="diff/"' in board
    changes = board.split('<table id="changes"', 1)[1].split("</table>", 1)[0]
    assert changes.count('class="significant"') == changes.count("<td>offline/solver</td>") == 3
    page = client.get(f"/boards/demo/{second}/diff/")
    assert page.status_code == 200
    html = page.text
    cells = re.findall(r'<li class="diff-cell( significant)?" data-scenario="([^"]+)" data-deployment="([^"]+)"', html)
    assert [c[2] for c in cells] == ["offline/solver"] * 3 and all(c[0] for c in cells)
    before = re.findall(r'class="answer-before" href="([^"]+)"', html)
    after = re.findall(r'class="answer-after" href="([^"]+)"', html)
    assert before and len(before) == len(after)
    assert before[0].startswith(f"../../{first}/runs/") and "#page=" in before[0]
    assert after[0].startswith(f"../../{second}/runs/")
    assert client.get(before[0].replace("../../", "/boards/demo/").split("#")[0]).status_code == 200
    assert client.get(f"/boards/demo/{first}/diff/").status_code == 404  # the first release has no predecessor


def test_compare_on_the_demo_board_through_the_cli(two_releases, cli):
    store, first, second = two_releases
    out = cli("compare", "demo", "offline/solver", "offline/solver-noisy", "--release", first, "--storage", store.root)
    assert out.returncode == 0, out.stderr
    assert re.search(r"arithmetic-3 +│ exact_match │ 30 │ 1\.000 │ 0\.\d+ │ \+0\.\d+ \[\+0\.\d+, \+0\.\d+\] │ .* │ A better",
                     out.stdout), out.stdout
    assert store.exists(f"leaderboards/demo/{first}/comparisons/offline--solver__offline--solver-noisy.parquet")


def test_regression_events_follow_the_threshold_and_skip_a_release_written_before(two_releases, monkeypatch):
    from helmflow.outcomes import ReleaseOutcome
    from helmflow.tasks.alerts import REGRESSED, alert_regressions, regression_events

    store, first, second = two_releases
    release = ReleaseOutcome(release_id=second, uri=store.url(f"leaderboards/demo/{second}"), status="complete",
                             wrote=True, subset=True)
    events = regression_events(store, "demo", release)
    expected = compare.regressions(compare.release_diff(store, "demo", first, second))
    assert [e["payload"]["cell"] for e in events] == [f"{c['scenario']} x {c['deployment']}" for c in expected]
    assert all(e["event"] == REGRESSED and e["payload"]["threshold"] == 0.0 for e in events)
    smallest = min(-c["delta"] for c in expected)
    monkeypatch.setenv("HELMFLOW_REGRESSION_THRESHOLD", str(smallest + 1e-9))  # the smallest drop no longer counts
    assert len(regression_events(store, "demo", release)) == len(expected) - 1
    monkeypatch.setenv("HELMFLOW_REGRESSION_THRESHOLD", "1")
    assert regression_events(store, "demo", release) == []
    first_release = release.model_copy(update={"release_id": first})
    assert regression_events(store, "demo", first_release, threshold=0.0) == []  # nothing before it
    assert alert_regressions(store, "demo", release.model_copy(update={"wrote": False})) == []  # cached: no event
