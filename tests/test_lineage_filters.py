"""``helmflow lineage``'s cell selection and its task-run line, on lineage records as cell_lineage returns them."""

from __future__ import annotations

import pytest

from helmflow.errors import HelmflowError
from helmflow.operations import chosen_cells, task_run_lines

CELLS = [{"scenario": s, "deployment": d} for s in ("dyck-3", "arithmetic 3 x 2") for d in ("offline/solver", "a/b")]


def pairs(cells):
    return [(c["scenario"], c["deployment"]) for c in cells]


def test_no_filter_keeps_every_cell():
    assert chosen_cells(CELLS, [], [], []) == CELLS


def test_scenario_model_and_cell_filters_combine():
    assert pairs(chosen_cells(CELLS, ["dyck-3"], [], [])) == [("dyck-3", "offline/solver"), ("dyck-3", "a/b")]
    assert pairs(chosen_cells(CELLS, [], ["a/b"], [])) == [("dyck-3", "a/b"), ("arithmetic 3 x 2", "a/b")]
    # a label that itself contains " x " splits at the last one, as lineage prints the cell
    assert pairs(chosen_cells(CELLS, [], [], ["arithmetic 3 x 2 x a/b"])) == [("arithmetic 3 x 2", "a/b")]
    assert chosen_cells(CELLS, ["dyck-3"], [], ["arithmetic 3 x 2 x a/b"]) == []


@pytest.mark.parametrize("args, named", [((["nope"], [], []), "no scenario nope"), (([], ["x/y"], []), "no model x/y"),
                                         (([], [], ["dyck-3 offline/solver"]), "LABEL x DEPLOYMENT")])
def test_a_name_the_release_lacks_is_bad_input(args, named):
    with pytest.raises(HelmflowError, match=named):
        chosen_cells(CELLS, *args)


def test_one_task_run_is_one_line():
    same = {f"{k}_task_run_id": "t1" for k in ("query", "score", "publish")}
    assert task_run_lines(same) == ["task run t1 (query, score and publish)"]
    split = {"query_task_run_id": "t1", "score_task_run_id": "t2", "publish_task_run_id": "t2"}
    assert task_run_lines(split) == ["query task run t1", "score task run t2", "publish task run t2"]
    assert task_run_lines({}) == []
