"""numericNLG as ToRR runs it: HTML tables from the Hub's Parquet shape read as unitxt's MapHTMLTableToJSON
reads them, through the table serialisations, and unitxt's own operators as the reference where it installs."""

from __future__ import annotations

import pytest

from helmflow.scenarios import ScenarioError, get_scenario
from tests.support import torr_numeric_fixtures as F

FILES = ("train", "validation", "test")


def numeric_nlg(root, **params):
    folder = root / "numeric_nlg" / "unpinned"
    return get_scenario("numeric_nlg", params).load({f"{s}.parquet": str(folder / f"{s}.parquet") for s in FILES})


def test_numeric_nlg_reads_html_tables_into_the_serialisations(tmp_path):
    pytest.importorskip("bs4")
    out = numeric_nlg(F.write_numeric_nlg_mirror(tmp_path), serialization="csv")
    assert [(i.id, i.split) for i in out] == [("train0", "train"), ("train1", "train"), ("validation0", "valid"),
                                              ("test0", "test"), ("test1", "test")]
    # the <b> tags' text is kept, the tags are not (BeautifulSoup's get_text)
    assert out[3].input.text == ("Table: Method,BLEU,ROUGE\nBaseline,21.4,30.2\nOurs,24.9,33.0\n"
                                 "Caption: Table 4: Test results.")
    assert out[4].input.text == 'Table: Set,Tables\ntrain,"1,084"\ntest,135\nCaption: Table 5: Sizes.'
    assert [r.text for r in out[4].references] == ["the test set is small."]
    md = numeric_nlg(tmp_path, serialization="markdown", augmentation="transpose")
    assert [i.id for i in md] == [i.id for i in out]  # every variant has the same ids: robustness matches on them
    assert md[4].input.text.startswith("Table: | |0|1|\n|---|---|---|\n|Set|train|test|\n|Tables|1,084|135|")


def test_a_table_without_a_head_is_one_clear_error(tmp_path):
    pytest.importorskip("bs4")
    folder = tmp_path / "numeric_nlg" / "unpinned"
    folder.mkdir(parents=True)
    for split in FILES:
        rows = [("Table 9.", "<table><tr><td>x</td></tr></table>", "text")] if split == "test" else F.NUMERIC_NLG[split]
        (folder / f"{split}.parquet").write_bytes(F.numeric_nlg_parquet(split, rows))
    with pytest.raises(ScenarioError, match=r"scenario 'numeric_nlg': .*test.parquet row 0: .*<thead>"):
        numeric_nlg(tmp_path)


@pytest.mark.slow
def test_tables_and_rouge_l_are_unitxts(tmp_path):
    pytest.importorskip("unitxt")
    pytest.importorskip("rouge_score")
    from unitxt.metrics import Rouge
    from unitxt.struct_data_operators import MapHTMLTableToJSON, SerializeTableAsMarkdown

    from helmflow.metrics.table_reasoning import unitxt_rouge_l
    from helmflow.scenarios.numeric_nlg import html_table

    # their requirement check looks for a distribution named "bs4" (the module's is beautifulsoup4): their
    # conversion itself needs only BeautifulSoup
    theirs = MapHTMLTableToJSON.__new__(MapHTMLTableToJSON)
    for _, table, _ in [*F.NUMERIC_NLG["train"], *F.NUMERIC_NLG["test"]]:
        assert html_table(table) == theirs.convert_to_json(table)
    out = numeric_nlg(F.write_numeric_nlg_mirror(tmp_path), serialization="markdown")
    for instance, (caption, table, _) in zip(out[3:], F.NUMERIC_NLG["test"], strict=True):
        md = SerializeTableAsMarkdown().serialize_table(theirs.convert_to_json(table))
        assert instance.input.text == f"Table: {md}\nCaption: {caption}"
    rouge = Rouge(sent_split_newline=False)  # rougeL reads no newlines (see test_scigen.py)
    for golds, output in [(["our method reaches 24.9 bleu."], "Our method reaches 24.9 BLEU on the test set."),
                          (["the test set is small."], "The test set has 135 tables")]:
        expected = rouge.compute([g.lower() for g in golds], output.lower(), {})["rougeL"]
        assert unitxt_rouge_l(golds, output) == pytest.approx(expected), (golds, output)
