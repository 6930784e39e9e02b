"""Judge agreement (``helmflow agreement``): Krippendorff's alpha and Cohen's kappa against hand
computations and scikit-learn, the share of instances judged more than a point apart, human labels,
and the one-line errors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helmflow import agreement
from helmflow.records import ANNOTATION_SCHEMA
from helmflow.storage import Store
from tests.support.paired_fixtures import write_release

J1 = [8, 7, 3, 9, 5]
J2 = [8, 4, 3, 7, 5]  # apart by 0, 3, 0, 2, 0 points


def annotations(store: Store, run_id: str, verdicts: dict[str, list[float | None]]) -> None:
    rows = []
    for judge, scores in verdicts.items():
        for i, score in enumerate(scores):
            rows.append({"instance_id": f"q{i}", "sample_index": 0, "request_hash": f"h{i}", "judge": judge,
                         "template": "wildbench", "template_version": "1", "judge_request_hash": f"{judge}{i}",
                         "prompt": "p", "raw_output": "r", "score": score, "details_json": "{}",
                         "error": None if score is not None else "no score in the output",
                         "prompt_tokens": 1, "output_tokens": 1, "cost_usd": 0.0, "latency_s": 0.1})
    store.write_parquet(f"runs/{run_id}/annotations.parquet", pa.Table.from_pylist(rows, schema=ANNOTATION_SCHEMA))


@pytest.fixture
def juried(tmp_path):
    store = Store(str(tmp_path / "store"))
    ids = [f"q{i}" for i in range(5)]
    write_release(store, "hand", "2026-01-03-0000jury", {
        ("wb", "m/a"): ("run-wb", dict.fromkeys(ids, 0.5)),
        ("plain", "m/a"): ("run-plain", dict.fromkeys(ids, 1.0)),
    }, metric="wildbench_score_rescaled")
    annotations(store, "run-wb", {"j/one": [*J1], "j/two": [*J2[:4], None]})  # j/two's last verdict did not parse
    return store


def test_binary_alpha_and_kappa_equal_the_hand_computation():
    a, b = np.array([1.0, 1, 0, 0]), np.array([1.0, 0, 0, 0])
    # coincidences: o11 = 2, o10 = o01 = 1, o00 = 4 (n = 8); alpha = 1 - (2/8) / (2*3*5 / (8*7)) = 8/15
    assert agreement.krippendorff_alpha(np.vstack([a, b]), binary=True) == pytest.approx(8 / 15)
    # kappa: observed 3/4, chance 1/2 * 1/4 + 1/2 * 3/4 = 1/2, so (3/4 - 1/2) / (1/2) = 1/2
    assert agreement.cohen_kappa(a, b) == pytest.approx(0.5)
    assert agreement.krippendorff_alpha(np.vstack([a, a]), binary=True) == 1.0
    assert agreement.krippendorff_alpha(np.ones((2, 3)), binary=True) is None  # no variation: undefined


def test_weighted_kappa_matches_scikit_learn():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.integers(1, 11, size=30).astype(float)
        y = np.clip(x + rng.integers(-2, 3, size=30), 1, 10)
        assert agreement.cohen_kappa(x, y, "quadratic") == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"))
        assert agreement.cohen_kappa(x, y) == pytest.approx(cohen_kappa_score(x, y))


def test_the_command_writes_each_juried_cells_agreement(juried, cli, tmp_path):
    from sklearn.metrics import cohen_kappa_score

    labels = tmp_path / "labels.csv"
    labels.write_text("instance_id,score,note\nq0,8,fine\nq1,6,\nq2,3,\nzz,5,not in the run\n")
    out = cli("agreement", "hand", "--human-labels", str(labels), "--storage", juried.root)
    assert out.returncode == 0, out.stderr
    (row,) = pq.read_table(juried.path("leaderboards/hand/2026-01-03-0000jury/agreement.parquet")).to_pylist()
    assert (row["scenario"], row["deployment"], row["run_id"], row["template"]) == ("wb", "m/a", "run-wb", "wildbench")
    assert row["judges"] == ["j/one", "j/two"] and row["judge_counts"] == [5, 4]
    assert row["judge_means"] == [pytest.approx(32 / 5), pytest.approx(22 / 4)]
    assert row["units"] == 4 and row["binary"] is False
    assert row["disagree_share"] == pytest.approx(2 / 4)  # 3 and 2 points apart, of the 4 both judged
    both = np.array([J1[:4], J2[:4]], float)
    assert row["kappa"] == pytest.approx(cohen_kappa_score(both[0], both[1], weights="quadratic"))
    import krippendorff

    data = np.array([J1, [*J2[:4], np.nan]], float)
    assert row["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
    # human labels for q0-q2: the jury's means are 8, 5.5 and 3
    assert row["human_units"] == 3
    want = krippendorff.alpha(reliability_data=np.array([[8, 5.5, 3], [8, 6, 3]]), level_of_measurement="interval")
    assert row["human_alpha"] == pytest.approx(want)
    assert len(row["human_judge_alpha"]) == 2
    assert "j/one 6.400, j/two 5.500" in out.stdout and "50%" in out.stdout


@pytest.mark.parametrize("text, message", [
    ("id,score\nq0,1\n", "expected a header with instance_id and score"),
    ("instance_id,score\nq0,high\n", "labels.csv:2: score 'high' is not a number"),
    ("instance_id,score\nq0,1\nq0,2\n", "labels.csv:3: instance 'q0' is labelled twice"),
    ("instance_id,score\nnope,1\n", "no labelled instance id is one the juried cells scored"),
])
def test_bad_human_labels_are_one_line_and_exit_2(juried, cli, tmp_path, text, message):
    labels = tmp_path / "labels.csv"
    labels.write_text(text)
    out = cli("agreement", "hand", "--human-labels", str(labels), "--storage", juried.root)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert not juried.exists("leaderboards/hand/2026-01-03-0000jury/agreement.parquet")


def test_a_release_without_juried_cells_says_so(tmp_path, cli):
    store = Store(str(tmp_path / "store"))
    write_release(store, "hand", "2026-01-03-00000none", {("plain", "m/a"): ("r1", {"q": 1.0})})
    out = cli("agreement", "hand", "--storage", store.root)
    assert out.returncode == 2 and "has no juried cell" in out.stderr
    out = cli("agreement", "hand", "--scenario", "nope", "--storage", store.root)
    assert out.returncode == 2 and "has no column 'nope' (its columns: plain)" in out.stderr


def test_the_board_page_shows_agreement_beside_the_juried_column(juried, cli, tmp_path):
    from starlette.testclient import TestClient

    from helmflow.web.app import create_app

    client = TestClient(create_app(juried.root))
    page = client.get("/boards/hand/2026-01-03-0000jury/").text  # computed from the verdicts
    cells = page.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert cells.count('class="agreement"') == 1 and "50% &gt;1 pt apart" in cells
    table = page.split('<table id="agreement"', 1)[1].split("</table>", 1)[0]
    assert "j/one 6.400" in table and "j/two 5.500" in table and '<td class="humans">—</td>' in table
    labels = tmp_path / "labels.csv"
    labels.write_text("instance_id,score\nq0,8\nq1,6\nq2,3\n")
    assert cli("agreement", "hand", "--human-labels", str(labels), "--storage", juried.root).returncode == 0
    page = TestClient(create_app(juried.root)).get("/boards/hand/2026-01-03-0000jury/").text  # the Parquet now
    assert "humans α" in page.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
    assert '<td class="humans">3, ' in page
