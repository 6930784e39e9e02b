"""ToRR's table serialisations and augmentations: golden strings worked out by hand from unitxt's
definitions, and, where unitxt is installed, the same strings and orders from unitxt itself."""

from __future__ import annotations

import random

import pytest

from helmflow.scenarios import tables as T

TABLE = {"header": ["name", "age"], "rows": [["Alex", "26"], ["Diana", "34"]]}
# a harder table: a comma and quotes (csv quoting), a non-ASCII cell (json escapes), an empty cell
HARD = {"header": ["city", "note"], "rows": [["Köln", 'say "hi", then go'], ["Oslo", ""]]}

GOLDEN = {
    "concat": "name age Alex 26 Diana 34",
    "csv": "name,age\nAlex,26\nDiana,34",
    "df": 'pd.DataFrame({\n"name": ["Alex", "Diana"], "age": ["26", "34"]},\nindex=[0, 1])',
    "html": ("<table>\n  <thead>\n    <tr><th>name</th><th>age</th></tr>\n  </thead>\n  <tbody>\n"
             "    <tr><td>Alex</td><td>26</td></tr>\n    <tr><td>Diana</td><td>34</td></tr>\n  </tbody>\n</table>"),
    "indexed_row_major": "col : name | age row 1 : Alex | 26 row 2 : Diana | 34",
    "json": '{"0": {"name": "Alex", "age": "26"}, "1": {"name": "Diana", "age": "34"}}',
    "markdown": "|name|age|\n|---|---|\n|Alex|26|\n|Diana|34|",
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_each_serialization_gives_its_golden_string(name):
    assert T.SERIALIZATIONS[name](TABLE) == GOLDEN[name]


def test_csv_quotes_json_escapes_and_df_renames_repeated_columns():
    assert T.as_csv(HARD) == 'city,note\nKöln,"say ""hi"", then go"\nOslo,'
    assert T.as_json(HARD) == '{"0": {"city": "K\\u00f6ln", "note": "say \\"hi\\", then go"}, "1": {"city": "Oslo", "note": ""}}'
    twice = {"header": ["a", "a", "b", "a"], "rows": [["1", "2", "3", "4"]]}
    assert T.as_df(twice) == 'pd.DataFrame({\n"a": ["1"], "a_1": ["2"], "b": ["3"], "a_2": ["4"]},\nindex=[0])'
    assert T.as_json(twice) == '{"0": {"a": "4", "b": "3"}}'  # a dict keeps a repeated key's last cell
    with pytest.raises(T.TableError):
        T.as_markdown({"header": ["a"], "rows": []})


def test_transpose_and_empty_rows_by_hand():
    assert T.transpose(TABLE) == {"header": [" ", "0", "1"], "rows": [["name", "Alex", "Diana"], ["age", "26", "34"]]}
    # Random(3) draws randint(0, 2) = 0, then randint(0, 3) = 1: an empty row first, then one after it
    assert (lambda r: (r.randint(0, 2), r.randint(0, 3)))(random.Random(3)) == (0, 1)
    got = T.insert_empty_rows(TABLE, rng=random.Random(3))
    assert got == {"header": ["name", "age"], "rows": [["", ""], ["", ""], ["Alex", "26"], ["Diana", "34"]]}
    assert T.render_table(TABLE, "markdown", "transpose") == "| |0|1|\n|---|---|---|\n|name|Alex|Diana|\n|age|26|34|"


def test_augmentations_are_pure_and_seeded():
    big = {"header": [f"c{j}" for j in range(6)], "rows": [[f"{i}-{j}" for j in range(6)] for i in range(8)]}
    before = repr(big)
    for name, fn in T.AUGMENTATIONS.items():
        assert fn(big, 0) == fn(big, 0), name  # the same table and seed give the same result
        assert repr(big) == before, name  # the input is never changed
    rows = T.shuffle_rows(big, 0)["rows"]
    assert sorted(rows) == sorted(big["rows"]) and rows != big["rows"]
    assert T.shuffle_rows(big, 1)["rows"] != rows  # another seed, another order
    cols = T.shuffle_cols(big, 0)
    assert sorted(cols["header"]) == big["header"] and cols["header"] != big["header"]
    assert all(c.endswith(h[1:]) for row in cols["rows"] for c, h in zip(row, cols["header"], strict=True))
    assert T.insert_empty_rows(big, 0)["rows"].count([""] * 6) == 2
    with pytest.raises(T.TableError, match="unknown table serialization 'xml'"):
        T.render_table(big, "xml")


def test_the_strings_and_orders_are_unitxts():
    s = pytest.importorskip("unitxt.struct_data_operators")
    from unitxt.serializers import TableSerializer

    theirs = {"concat": s.SerializeTableAsConcatenation(), "csv": TableSerializer(), "df": s.SerializeTableAsDFLoader(),
              "html": s.SerializeTableAsHTML(), "indexed_row_major": s.SerializeTableAsIndexedRowMajor(),
              "json": s.SerializeTableAsJson(), "markdown": s.SerializeTableAsMarkdown()}
    assert set(theirs) == set(T.SERIALIZATIONS)
    big = {"header": ["id", "city", "note"], "rows": [[str(i), f"town {i}", f"n,{i}"] for i in range(7)]}
    for table in (TABLE, HARD, big):
        for name, serializer in theirs.items():
            assert T.SERIALIZATIONS[name](table) == serializer.serialize(table, {}), name
    for table in (TABLE, big):
        assert T.shuffle_rows(table) == s.ShuffleTableRows().process_value(table)
        assert T.shuffle_cols(table) == s.ShuffleTableColumns().process_value(table)
        assert T.transpose(table) == s.TransposeTable().process_value(table)
        random.seed(11)  # unitxt draws empty-row positions from the global stream
        copy = {"header": list(table["header"]), "rows": [list(r) for r in table["rows"]]}
        unitxt_rows = s.InsertEmptyTableRows(times=2).process_value(copy)
        assert T.insert_empty_rows(table, rng=random.Random(11)) == unitxt_rows
