"""QTSumm as ToRR runs it: the Hub's JSON items (the table a dict with its title) through the table
serialisations, the shuffles seeded by the whole dict as unitxt seeds them, and unitxt's rougeL; checked by hand
and against unitxt's own operators and Rouge where it installs."""

from __future__ import annotations

import pytest

from helmflow.scenarios import ScenarioError, get_scenario
from tests.support import torr_numeric_fixtures as F
from tests.support.unitxt_cards import unitxt_test_split

FILES = ("qtsumm_train.json", "qtsumm_dev.json", "qtsumm_test.json")


def qtsumm(root, **params):
    folder = root / "qtsumm" / "unpinned"
    return get_scenario("qtsumm", params).load({name: str(folder / name) for name in FILES})


def test_qtsumm_reads_table_dicts_and_seeds_the_shuffles_with_the_title(tmp_path):
    out = qtsumm(F.write_qtsumm_mirror(tmp_path), serialization="csv")
    assert [(i.id, i.split) for i in out] == [("train0", "train"), ("train1", "train"), ("validation0", "valid"),
                                              ("test0", "test"), ("test1", "test")]
    assert out[3].input.text == ("Table: Club,Founded,Titles\nRovers,1901,3\nUnited,1899,5\nCity,1920,0\n"
                                 "Athletic,1888,2\nQuery: summarise the titles won.")  # the title is not written
    assert [r.text for r in out[3].references] == ["United leads with five titles, Rovers has three and City none."]
    shuffled = qtsumm(tmp_path, serialization="csv", augmentation="shuffle_rows")
    assert [i.id for i in shuffled] == [i.id for i in out]  # every variant has the same ids
    # the same rows under two titles: two orders (the title is part of the seed, as in unitxt)
    assert shuffled[3].input.text.startswith("Table: Club,Founded,Titles\nUnited,1899,5\nAthletic,1888,2\n"
                                             "City,1920,0\nRovers,1901,3\n")
    assert shuffled[4].input.text.startswith("Table: Club,Founded,Titles\nRovers,1901,3\nCity,1920,0\n")


def test_an_item_without_a_table_is_one_clear_error(tmp_path):
    bad = {k: v for k, v in F.QTSUMM["qtsumm_test.json"][0].items() if k != "table"}
    F.write_qtsumm_mirror(tmp_path, {**F.QTSUMM, "qtsumm_test.json": [bad]})
    with pytest.raises(ScenarioError, match=r"scenario 'qtsumm': .*qtsumm_test.json item 0: not a QTSumm item"):
        qtsumm(tmp_path)


@pytest.mark.slow
def test_tables_and_rouge_l_are_unitxts(tmp_path):
    pytest.importorskip("unitxt")
    pytest.importorskip("rouge_score")
    from unitxt.metrics import Rouge
    from unitxt.struct_data_operators import (
        SerializeTableAsJson,
        SerializeTableAsMarkdown,
        ShuffleTableColumns,
        ShuffleTableRows,
    )

    from helmflow.metrics.table_reasoning import unitxt_rouge_l

    F.write_qtsumm_mirror(tmp_path)
    for augmentation, theirs in (("shuffle_rows", ShuffleTableRows()), ("shuffle_cols", ShuffleTableColumns())):
        for serialization, serializer in (("markdown", SerializeTableAsMarkdown()), ("json", SerializeTableAsJson())):
            out = qtsumm(tmp_path, serialization=serialization, augmentation=augmentation)
            items = [item for name in FILES for item in F.QTSUMM[name]]
            for instance, item in zip(out, items, strict=True):
                table = serializer.serialize(theirs.process_value(item["table"]), {})
                assert instance.input.text == f"Table: {table}\nQuery: {item['query']}", (augmentation, serialization)
    rouge = Rouge(sent_split_newline=False)  # rougeL reads no newlines (see test_scigen.py)
    # the card's template does not lower-case: rouge-score's tokenizer does, on both sides
    for golds, output in [(["United leads with five titles, Rovers has three and City none."],
                           "UNITED leads with 5 titles; Rovers has three."),
                          (["All four were founded between 1888 and 1920."], "They were founded from 1888 to 1920")]:
        assert unitxt_rouge_l(golds, output) == pytest.approx(rouge.compute(golds, output, {})["rougeL"])


@pytest.mark.slow
def test_the_prompts_tables_and_references_are_unitxts_through_its_own_cards(tmp_path):
    """unitxt's catalog cards (qtsumm, fin_qa) with their loaders swapped for the fixture rows: each test
    instance's table in unitxt's rendered prompt, and its reference, equal ours in the same order."""
    pytest.importorskip("unitxt")

    from helmflow.scenarios.fin_qa import COMMIT

    F.write_qtsumm_mirror(tmp_path)
    F.write_finqa_mirror(tmp_path)
    checks = 0
    for serialization, augmentation in (("markdown", "shuffle_rows"), ("json", "shuffle_cols"), ("df", "transpose")):
        unitxt_rows = unitxt_test_split("cards.qtsumm", {"test": F.QTSUMM["qtsumm_test.json"]}, serialization, augmentation)
        ours = [i for i in qtsumm(tmp_path, serialization=serialization, augmentation=augmentation)
                if i.split == "test"]
        assert len(unitxt_rows) == len(ours) == 2
        for row, inst in zip(unitxt_rows, ours, strict=True):
            table = row["source"].split("Table:\n", 1)[1].rsplit("\nQuery:\n", 1)[0]
            assert inst.input.text.startswith(f"Table: {table}\nQuery: "), (serialization, augmentation)
            assert row["references"] == [inst.references[0].text]
            checks += 1
        folder = tmp_path / "torr_fin_qa" / COMMIT
        unitxt_rows = unitxt_test_split("cards.fin_qa", {"test": F.FINQA["test"]}, serialization, augmentation)
        ours = [i for i in get_scenario("torr_fin_qa", {"serialization": serialization, "augmentation": augmentation})
                .load({f"{s}.json": str(folder / f"{s}.json") for s in ("train", "dev", "test")}) if i.split == "test"]
        assert len(unitxt_rows) == len(ours) == 2  # the one-row table is filtered out by both
        indent = "\n" + " " * 16  # the card's input format is an indented multi-line string
        for row, inst in zip(unitxt_rows, ours, strict=True):
            pre, rest = row["source"].split(f"{indent}Table: ", 1)
            table, post = rest.split(f"{indent}Post-table text: ", 1)
            assert inst.input.text.startswith(f"Pre-table text: {pre.rsplit('Pre-table text: ', 1)[1]}\n"
                                              f"Table: {table}\nPost-table text: {post.split(indent)[0]}\n")
            assert row["references"] == [inst.references[0].text]
            checks += 1
    assert checks == 12
