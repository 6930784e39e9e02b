"""TableBench's three ToRR sets and TURL's column types on fixture mirrors in the sources' shapes: the rows each
keeps, unitxt's random 20/20/60 deal of TableBench's one split, the tables with numeric cells and TURL's row range,
and their scores (rougeL after the cards' post-processors, per-instance f1_micro) by hand and against unitxt's own
operators and metrics where it installs."""

from __future__ import annotations

import json
import re

import pytest

from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.tables import SERIALIZATIONS, TableParams
from tests.support import table_qa_fixtures as F
from tests.support.unitxt_cards import unitxt_test_split

TURL_FILES = ("train", "dev", "test")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("tableqa")
    return F.write_turl_mirror(F.write_tablebench_mirror(root))


def tablebench(root, **params):
    return get_scenario("tablebench", params).load({"test.jsonl": str(root / "tablebench" / "unpinned" / "test.jsonl")})


def turl(root, **params):
    folder = root / "turl_col_type" / "unpinned"
    return get_scenario("turl_col_type", params).load(
        {f"{s}.table_col_type.json": str(folder / f"{s}.table_col_type.json") for s in TURL_FILES})


def test_tablebench_keeps_its_tasks_dp_rows_and_deals_them_into_three_splits(mirror):
    out = tablebench(mirror, serialization="markdown")
    # the 8 DP FactChecking rows (PoT, SCoT and the other question types dropped), dealt by Random("42/test")
    assert [i.id for i in out] == ["validation0", "test0", "test1", "train0", "test2", "test3", "validation1",
                                   "train1"]
    assert [i.split for i in out][:4] == ["valid", "test", "test", "train"]
    lakes = "|lake|area|depth|\n|---|---|---|\n|Mere|12.5|40|\n|Tarn|3|11|\n|Loch Ness|56|227|"
    assert out[0].input.text == f"Table: {lakes}\nQuestion: Is Tarn the smallest lake?\n{F.FORMAT}"
    assert [i.references[0].text for i in out[1:3]] == ["Yes", "No"]
    [analysis] = tablebench(mirror, task="data_analysis")
    assert analysis.id == "validation0" and analysis.references[0].text == "The town owns the oldest mill."
    assert analysis.input.text.startswith("Table: mill,built,owner\nOld Mill,1820,the town\n")
    frame = tablebench(mirror, serialization="df")[0].input.text  # numbers through pandas, as unitxt: 3 beside 12.5 is 3.0
    assert frame.startswith('Table: pd.DataFrame({\n"lake": ["Mere", "Tarn", "Loch Ness"], "area": [12.5, 3.0, 56.0], ')
    moved = tablebench(mirror, serialization="json", augmentation="shuffle_cols")
    assert [i.id for i in moved] == [i.id for i in out]  # every variant has the same ids: robustness matches on them
    with pytest.raises(ScenarioError, match="task"):
        get_scenario("tablebench", {"task": "summaries"})


def test_a_tablebench_row_whose_table_is_not_json_is_one_clear_error(tmp_path):
    folder = tmp_path / "tablebench" / "unpinned"
    folder.mkdir(parents=True)
    row = {"qtype": "FactChecking", "instruction_type": "DP", "table": "{'columns': [", "question": "q", "answer": "a"}
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ScenarioError, match=r"scenario 'tablebench': .*test.jsonl line 1: "):
        tablebench(tmp_path)


def test_turl_reads_one_instance_per_column_with_the_loaders_row_range(mirror):
    out = turl(mirror, serialization="csv")
    assert [(i.id, i.split) for i in out][:5] == [("train0", "train"), ("train1", "train"), ("train2", "train"),
                                                  ("train3", "train"), ("validation0", "valid")]
    # rows 0 and 2 of RIVERS (row 1 is empty everywhere; row 3, the largest index, is out of the loader's range)
    assert out[-4].input.text == ("Page Title: Rivers of Nowhere\nSection Title: Main rivers\nTable caption: Rivers "
                                  "by length\nTable: river,mouth\nAsh,North Sea\nElm,Irish Sea\nSelected Column: river")
    assert out[-4].references[0].text == "geography.river, location.location"
    assert out[-1].id == "test3" and out[-1].input.text.endswith("Ash United,Ash Park\nSelected Column: ground")
    instructions = get_scenario("turl_col_type", {}).default_adapter.instructions
    assert instructions.count(", ") >= 254 and "royalty.noble_person, business.business_operation" in instructions


def test_the_scores_by_hand():
    pytest.importorskip("rouge_score")
    from helmflow.metrics.table_reasoning import f1_micro_one, tablebench_answer, tablebench_rouge_l

    assert tablebench_answer("  The Town, owns a mill!\nmore") == "town owns mill"
    assert tablebench_rouge_l(["Yes"], "yes.") == 1.0
    # "town owns oldest mill" vs "town owns mill": LCS 3, P 3/3, R 3/4
    assert tablebench_rouge_l(["The town owns the oldest mill."], "The town owns a mill") == pytest.approx(6 / 7)
    gold = "geography.river, location.location"
    assert f1_micro_one([gold], "Geography.River, location.location\nbecause") == 1.0
    assert f1_micro_one([gold], "geography.river, music.album") == pytest.approx(2 / 3)  # a wrong type costs nothing
    assert f1_micro_one([gold], "music.album") == 0.0


@pytest.mark.slow
def test_tables_splits_and_scores_are_unitxts(mirror):
    pytest.importorskip("unitxt")
    pytest.importorskip("rouge_score")
    pytest.importorskip("sklearn")
    from unitxt import processors as P
    from unitxt.loaders import TURLColumnTypeAnnotationLoader
    from unitxt.metrics import F1MicroMultiLabel, Rouge
    from unitxt.serializers import TableSerializer
    from unitxt.split_utils import parse_random_mix_string, random_mix_streams
    from unitxt.struct_data_operators import (
        SerializeTableAsConcatenation,
        SerializeTableAsDFLoader,
        SerializeTableAsHTML,
        SerializeTableAsIndexedRowMajor,
        SerializeTableAsJson,
        SerializeTableAsMarkdown,
        ShuffleTableColumns,
        ShuffleTableRows,
    )

    from helmflow.metrics.table_reasoning import f1_micro_one, tablebench_rouge_l
    from helmflow.scenarios.tablebench import deal_splits
    from helmflow.scenarios.turl_col_type import turl_table

    # the deal: unitxt's SplitRandomMix of the cards on 40 rows
    mix = {"train": "test[20%]", "validation": "test[20%]", "test": "test[60%]"}
    streams = random_mix_streams({"test": list(range(40))}, {k: parse_random_mix_string(v) for k, v in mix.items()})
    theirs = {name: list(stream) for name, stream in streams.items()}
    dealt = deal_splits(40)
    for name in mix:
        assert [k for k, s in enumerate(dealt) if s == name] == list(theirs[name]), name

    # the tables: TableBench's JSON table (numeric cells) and TURL's loader table, through every serialisation
    lakes = json.loads(F.LAKES)
    tables = [{"header": lakes["columns"], "rows": lakes["data"]},
              TURLColumnTypeAnnotationLoader._load_table(F.RIVERS), TURLColumnTypeAnnotationLoader._load_table(F.CLUBS)]
    assert tables[1] == turl_table(F.RIVERS[5], F.RIVERS[6]) and tables[2] == turl_table(F.CLUBS[5], F.CLUBS[6])
    serializers = {"concat": SerializeTableAsConcatenation(), "csv": TableSerializer(), "df": SerializeTableAsDFLoader(),
                   "html": SerializeTableAsHTML(), "indexed_row_major": SerializeTableAsIndexedRowMajor(),
                   "json": SerializeTableAsJson(), "markdown": SerializeTableAsMarkdown()}
    for table in tables:
        for name, serializer in serializers.items():
            assert SERIALIZATIONS[name](table) == serializer.serialize(table, {}), name
        for augmentation, op in (("shuffle_rows", ShuffleTableRows()), ("shuffle_cols", ShuffleTableColumns())):
            ours = TableParams(serialization="markdown", augmentation=augmentation).render(table)
            assert ours == SerializeTableAsMarkdown().serialize(op.process_value(json.loads(json.dumps(table))), {})

    # rougeL after the TableBench cards' post-processors
    steps = [P.TakeFirstNonEmptyLine(), P.LowerCase(), P.RemovePunctuations(), P.RemoveArticles(), P.FixWhiteSpace()]

    def processed(text):
        for op in steps:
            text = op.process_value(text)
        return text

    rouge = Rouge(sent_split_newline=False)  # punkt is not downloadable here; rougeL reads no newlines
    for gold, output in [("The town owns the oldest mill.", "The town owns a mill"), ("71.5", "71.5\nsince"),
                         ("Yes", "No, it is not"), ("an increasing trend", "The trend: increasing!")]:
        expected = rouge.compute([processed(gold)], processed(output), {})["rougeL"]
        assert tablebench_rouge_l([gold], output) == pytest.approx(expected), (gold, output)

    # f1_micro on one instance, as unitxt scores an instance alone
    listed = [P.TakeFirstNonEmptyLine(), P.LowerCase(), P.ToListByComma()]

    def as_list(text):
        for op in listed:
            text = op.process_value(text)
        return text

    f1 = F1MicroMultiLabel()
    for gold, output in [("geography.river, location.location", "geography.river, music.album"),
                         ("geography.river, location.location", "Location.Location,geography.river"),
                         ("sports.sports_facility", "sports.sports_facility"), ("sports.sports_facility", "food.food"),
                         ("a.b, c.d, e.f", "c.d\na.b")]:
        expected = f1.compute([[as_list(gold)]], [as_list(output)], [{}])["f1_micro"]
        assert f1_micro_one([gold], output) == pytest.approx(expected), (gold, output)


@pytest.mark.slow
def test_helmflow_run_torr_scores_the_new_sets_end_to_end(tmp_path, prefect_server):
    pytest.importorskip("rouge_score")
    import pyarrow.parquet as pq
    import yaml

    from tests.support.cli import run_cli

    mirror, storage = F.write_turl_mirror(F.write_tablebench_mirror(tmp_path / "mirror")), tmp_path / "store"
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": name, "client": "offline", "model": name.split("/")[1], "options": {"behavior": "constant",
                                                                                     "answer": answer}}
        for name, answer in (("offline/says-yes", "Yes."), ("offline/river", "geography.river, music.album"))]}))
    variants = "tablebench_fact_checking-csv-none,tablebench_fact_checking-json-shuffle_rows,turl_col_type-html-none"
    out = run_cli("run", "torr", "--scenarios", variants, "--models", "offline/says-yes,offline/river",
                  "--models-file", str(models), "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)},
                  timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/torr/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    yes, river = rows["offline/says-yes"], rows["offline/river"]
    # the fact-checking test rows answer Yes, No, Yes, No: "yes." is "yes" after the cards' post-processors
    assert yes["tablebench_fact_checking/rougeL"] == pytest.approx(0.5)
    assert yes["tablebench_fact_checking/variant_robustness"] == pytest.approx(1.0)
    assert river["tablebench_fact_checking/rougeL"] == 0.0
    # TURL's four test columns: river (2 types, 1 named: 2/3), then three columns with no type named
    assert river["turl_col_type/f1_micro"] == pytest.approx((2 / 3) / 4) and yes["turl_col_type/f1_micro"] == 0.0


@pytest.mark.slow
def test_the_prompts_tables_and_references_are_unitxts_through_its_own_cards(mirror):
    """unitxt's catalog cards with their loaders swapped for the fixture rows (as the cards' loaders hand them on):
    each test instance's table in unitxt's rendered prompt, and its reference, equal ours in the same order."""
    pytest.importorskip("unitxt")
    from unitxt.loaders import TURLColumnTypeAnnotationLoader

    rows = [json.loads(line) for line in F.tablebench_jsonl().decode().splitlines()]
    checks = 0
    for serialization, augmentation in (("df", "shuffle_cols"), ("json", "transpose"), ("markdown", "shuffle_rows")):
        # the card's loader keeps the DP rows of its question type (its filtering_lambda)
        data = {"test": [r for r in rows if r["instruction_type"] == "DP" and r["qtype"] == "FactChecking"]}
        unitxt_rows = unitxt_test_split("cards.tablebench_fact_checking", data, serialization, augmentation)
        ours = [i for i in tablebench(mirror, serialization=serialization, augmentation=augmentation)
                if i.split == "test"]
        assert len(unitxt_rows) == len(ours) == 4
        for row, inst in zip(unitxt_rows, ours, strict=True):
            table = row["source"].split("\nTable: ", 1)[1].rsplit(" \nQuestion: ", 1)[0]
            assert inst.input.text.startswith(f"Table: {table}\nQuestion: "), (serialization, augmentation)
            assert row["references"] == [inst.references[0].text]
            checks += 1
    # TURL: the instances its loader yields for the test file, one per column
    items = F.TURL["test"]
    data = {"test": [{"page_title": t[1], "section_title": t[3], "table_caption": t[4],
                      "table": TURLColumnTypeAnnotationLoader._load_table(t), "colname": col, "annotations": t[7][j]}
                     for t in items for j, col in enumerate(t[5])]}
    for serialization, augmentation in (("html", "shuffle_cols"), ("indexed_row_major", "insert_empty_rows")):
        unitxt_rows = unitxt_test_split("cards.turl_col_type", data, serialization, augmentation)
        ours = [i for i in turl(mirror, serialization=serialization, augmentation=augmentation) if i.split == "test"]
        assert len(unitxt_rows) == len(ours) == 4
        for row, inst in zip(unitxt_rows, ours, strict=True):
            table = row["source"].split("\nTable: \n", 1)[1].rsplit(" \nSelected Column: ", 1)[0]
            mine = inst.input.text.split("\nTable: ", 1)[1].rsplit("\nSelected Column: ", 1)[0]
            if augmentation == "insert_empty_rows":  # unitxt draws the positions from the global stream: the
                # same rows in the same order around two empty ones, wherever those fall
                cells = [[c.strip() for c in re.split(r"row \d+ :", t)] for t in (table, mine)]
                assert [c for c in cells[0] if c.strip("| ")] == [c for c in cells[1] if c.strip("| ")]
                assert [c for c in cells[0] if not c.strip("| ")] == [c for c in cells[1] if not c.strip("| ")] == [
                    "|", "|"]  # two empty rows each
            else:
                assert table == mine
            assert row["references"] == [inst.references[0].text]
            checks += 1
    assert checks == 20
