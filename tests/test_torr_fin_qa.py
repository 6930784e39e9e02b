"""FinQA as ToRR runs it: the card's reading of FinQA's JSON (first sentences, the one-row filter, ids after it)
through the table serialisations, and unitxt's program_accuracy (its prediction-first call of FinQA's check),
by hand and against unitxt's own FinQAEval and table operators where it installs."""

from __future__ import annotations

import pytest

from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.fin_qa import COMMIT
from tests.support import torr_numeric_fixtures as F

FILES = ("train", "dev", "test")


def fin_qa(root, **params):
    folder = root / "torr_fin_qa" / COMMIT
    return get_scenario("torr_fin_qa", params).load({f"{s}.json": str(folder / f"{s}.json") for s in FILES})


def test_fin_qa_reads_first_sentences_drops_one_row_tables_and_numbers_ids_after_the_filter(tmp_path):
    out = fin_qa(F.write_finqa_mirror(tmp_path), serialization="csv")
    assert [(i.id, i.split) for i in out] == [("train0", "train"), ("train1", "train"), ("validation0", "valid"),
                                              ("test0", "test"), ("test1", "test")]
    assert out[3].input.text == ("Pre-table text: report 4 opens with this sentence .\n"
                                 "Table: ,2019,2018\nrevenue,$ 120,$ 100\ncosts,80,70\n"
                                 "Post-table text: report 4 goes on after the table .\n"
                                 "Question: what was the change in costs?")
    assert [r.text for r in out[1].references] == ["add(80, 70)"]  # train item 2 is train1 after the filter
    js = fin_qa(tmp_path, serialization="json", augmentation="transpose")
    assert [i.id for i in js] == [i.id for i in out]  # every variant has the same ids: robustness matches on them
    assert '"0": {" ": "", "0": "revenue", "1": "costs"}' in js[3].input.text


def test_an_item_without_text_is_one_clear_error(tmp_path):
    bad = dict(F.FINQA["test"][0], pre_text=[])
    F.write_finqa_mirror(tmp_path, {**F.FINQA, "test": [bad]})
    with pytest.raises(ScenarioError, match=r"scenario 'torr_fin_qa': .*test.json item 0: not a FinQA item"):
        fin_qa(tmp_path)


CASES = [
    ("subtract(120, 100), divide(#0, 100)", "subtract(120, 100), divide(#0, 100)"),
    ("subtract(120, 100), divide(#0, 100)", "\n  subtract(120, 100), divide(#0, 100)\nbecause growth"),
    ("add(80, 70)", "add(70, 80)"),  # sympy: the same sum
    ("subtract(120, 80)", "subtract(80, 120)"),
    ("add(80, 70)", "add(1, 2), add(80, 70)"),  # an extra step: right under unitxt's prediction-first call
    ("add(80, 70), divide(#0, 2)", "add(80, 70)"),  # a step short
    ("table_average(revenue, none)", "table_average(revenue, none)"),
    ("add(80, 70)", "the total is 150"),
    ("add(80, 70)", "add(#3, 70)"),
]


def test_program_accuracy_is_unitxts_call_of_finqas_check():
    pytest.importorskip("sympy")
    from helmflow.metrics.fin_qa import equal_program, tokenize, unitxt_program_accuracy

    got = [unitxt_program_accuracy(gold, output) for gold, output in CASES]
    assert got == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    # HELM Finance's order (gold first) rejects the extra step: its argument 1 is not the gold's
    assert not equal_program(tokenize("add(80, 70)"), tokenize("add(1, 2), add(80, 70)"))


@pytest.mark.slow
def test_tables_and_program_accuracy_are_unitxts(tmp_path):
    pytest.importorskip("unitxt")
    pytest.importorskip("sympy")
    from types import SimpleNamespace

    from unitxt.metrics import FinQAEval
    from unitxt.processors import TakeFirstNonEmptyLine
    from unitxt.struct_data_operators import MapTableListsToStdTableJSON, SerializeTableAsHTML

    from helmflow.metrics import fin_qa as ours

    out = fin_qa(F.write_finqa_mirror(tmp_path), serialization="html")
    table = MapTableListsToStdTableJSON(field="table").process_value(F.REVENUE)
    assert f"\nTable: {SerializeTableAsHTML().serialize_table(table)}\nPost-table text:" in out[3].input.text
    # FinQAEval downloads FinQA's evaluate.py when prepared; its compute() is given FinQA's functions as ported
    # here (program_tokenization, equal_program), so what is checked is unitxt's call: the argument order, the
    # first-line post-processing, the errors that score 0
    metric = FinQAEval.__new__(FinQAEval)
    metric.finqa_module = SimpleNamespace(program_tokenization=ours.tokenize, equal_program=ours.equal_program,
                                          eval_program=lambda program, table: (1, None))  # execution: not compared
    for gold, output in CASES:
        said = TakeFirstNonEmptyLine().process_value(output)
        theirs = metric.compute([gold], said, {"program_re": gold, "answer": "0", "table": table})
        assert ours.unitxt_program_accuracy(gold, output) == theirs["program_accuracy"], (gold, output)
