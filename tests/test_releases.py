"""Releases and their pointers, with the pipeline's own stages (no Prefect).

Each case reproduced a bug before its fix: a subset run took the board's ``latest.json``; a rerun
after a kill between ``release.json`` and ``latest.json`` never moved the pointer; a cached run
under a new label showed ``missing``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helmflow import aggregate
from helmflow.plan.compile import prepare
from helmflow.storage import Store
from tests.support import release_faults
from tests.support.cli import run_cli
from tests.support.tiny_board import TINY, pointer, release, run_board


@pytest.fixture
def board_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def test_selection_names_what_a_run_narrows(board_file):
    assert prepare(str(board_file)).selection == {}
    assert prepare(str(board_file), max_instances=3).selection == {}  # the board's own value is no narrowing
    assert prepare(str(board_file), models=["offline/echo", "offline/solver"]).selection == {}  # order only
    assert prepare(str(board_file), models=["offline/echo"]).selection == {"models": ["offline/echo"]}
    assert prepare(str(board_file), scenarios=["dyck-2"]).selection == {"scenarios": ["dyck-2"]}
    assert prepare(str(board_file), max_instances=2).selection == {"max_instances": 2}


@pytest.mark.slow
def test_subset_run_publishes_a_marked_release_and_never_moves_latest(board_file, store):
    full = release(store, prepare(str(board_file)))
    assert full.wrote and not full.subset and pointer(store) == full.release_id

    sub_plan = prepare(str(board_file), models=["offline/echo"], scenarios=["dyck-2"], max_instances=2)
    sub = release(store, sub_plan)
    assert sub.wrote and sub.subset and sub.release_id != full.release_id
    info = store.read_json(f"leaderboards/tiny/{sub.release_id}/release.json")
    assert info["subset"] is True
    assert info["selection"] == {"models": ["offline/echo"], "scenarios": ["dyck-2"], "max_instances": 2}
    assert pointer(store) == full.release_id  # before the fix: the subset's release
    assert pointer(store, "latest-subset.json") == sub.release_id
    lineage = run_cli("lineage", "tiny", "--release", sub.release_id, "--storage", store.root)
    assert lineage.returncode == 0 and "a subset of the board: max_instances=2; models=offline/echo; " \
        "scenarios=dyck-2" in lineage.stdout, lineage.stdout + lineage.stderr
    full_lineage = run_cli("lineage", "tiny", "--release", full.release_id, "--storage", store.root)
    assert "a subset of the board" not in full_lineage.stdout

    # the full board again: the same release, and its pointer is already in place (nothing written)
    again = release(store, prepare(str(board_file)))
    assert (again.release_id, again.wrote, again.pointer) == (full.release_id, False, None)


def test_full_run_repoints_latest_when_it_names_another_release(board_file, store):
    plan = prepare(str(board_file))
    first = release(store, plan)
    store.write_json("leaderboards/tiny/latest.json", {"release_id": "2020-01-01-deadbeef", "status": "complete"})
    again = release(store, plan)
    assert again.release_id == first.release_id and not again.wrote
    assert again.pointer == "leaderboards/tiny/latest.json" and pointer(store) == first.release_id


def test_a_kill_between_release_json_and_latest_is_finished_by_the_rerun(board_file, store, monkeypatch):
    plan = prepare(str(board_file))
    runs = run_board(store, plan)
    published = aggregate.publish_release(store, plan, runs, [])
    with monkeypatch.context() as patched:
        release_faults.inject("before-pointer", patched.setattr)
        with pytest.raises(release_faults.InjectedCrash, match="before-pointer"):
            aggregate.point_release(store, plan, published)
    assert store.exists(f"leaderboards/tiny/{published.release_id}/release.json") and pointer(store) is None
    again = release(store, plan, runs)  # what the flow does with a cached release task, too
    assert not again.wrote and pointer(store) == published.release_id


@pytest.mark.slow
def test_cached_runs_under_new_labels_and_order_fill_their_cells(board_file, store, tmp_path):
    first_plan = prepare(str(board_file))
    cached = run_board(store, first_plan)  # outcomes carry the labels add-2 and dyck-2
    relabelled = tmp_path / "relabelled.yaml"
    relabelled.write_text(TINY.replace("label: dyck-2", "label: dyck-two").replace("label: add-2", "label: sum-2")
                          .replace("scenarios:\n", "scenarios:\n  - name: dyck_language\n    params: {num_parenthesis_pairs: 2}\n"
                                   "    label: dyck-two\n", 1).rsplit("  - name: dyck_language", 1)[0])
    plan = prepare(str(relabelled))
    assert [s.label for s in plan.scenarios] == ["dyck-two", "sum-2"]
    assert sorted(r.run_id for r in plan.runs) == sorted(r.run_id for r in first_plan.runs)  # all cached
    out = release(store, plan, cached)  # before the fix: every cell "missing"
    rows = {r["deployment"]: r for r in out.table}
    assert rows["offline/solver"]["sum-2"] == 1.0 and rows["offline/solver"]["dyck-two"] is not None
    assert {r["missing"] for r in out.table} == {0}
    runs = store.read_parquet(f"leaderboards/tiny/{out.release_id}/runs.parquet").to_pylist()
    assert {r["scenario"] for r in runs} == {"dyck-two", "sum-2"}


@pytest.mark.slow
def test_cli_subset_then_full_then_kill_before_pointer(prefect_server, board_file, tmp_path):
    """Through the real flow and Prefect's task cache: a subset leaves latest.json alone; a full run
    killed after its (cached) release task still gets its pointer from the next, all-cached run."""
    from tests.support.cli import run_cli

    root = tmp_path / "store"
    store = Store(str(root))
    args = ["run", "--board-file", str(board_file), "--storage", str(root)]
    sub = run_cli(*args, "--models", "offline/echo", "--scenarios", "dyck-2")
    assert sub.returncode == 0, sub.stdout + sub.stderr
    assert "latest.json was not moved" in sub.stdout
    assert pointer(store) is None and pointer(store, "latest-subset.json")

    killed = run_cli(*args, env=release_faults.fault_env("before-pointer"))
    assert killed.returncode == 1, killed.stdout + killed.stderr
    (full_id,) = [k.rsplit("/", 1)[-1] for k in store.ls("leaderboards/tiny")
                  if store.exists(f"{k}/release.json") and not store.read_json(f"{k}/release.json")["subset"]]
    assert pointer(store) is None  # release.json written, its pointer not

    rerun = run_cli(*args)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "unchanged: nothing written" in rerun.stdout and "latest.json now points at this release" in rerun.stdout
    assert pointer(store) == full_id
