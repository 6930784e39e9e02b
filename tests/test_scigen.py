"""SciGen as ToRR runs it: rows from the Hub's Parquet shape (literal lists, the card's "[]" filter, ids
after the filter) through the table serialisations, and unitxt's rougeL (no stemmer), by hand and
against unitxt's own Rouge where it installs."""

from __future__ import annotations

import pytest

from helmflow.scenarios import ScenarioError, get_scenario
from tests.support import torr_fixtures as F

FILES = ("train", "validation", "test")


def scigen(root, **params):
    folder = root / "scigen" / "unpinned"
    return get_scenario("scigen", params).load({f"{s}.parquet": str(folder / f"{s}.parquet") for s in FILES})


def test_scigen_reads_literal_tables_drops_empty_ones_and_numbers_ids_after_the_filter(tmp_path):
    out = scigen(F.write_scigen_mirror(tmp_path), serialization="csv")
    assert [(i.id, i.split) for i in out] == [("train0", "train"), ("train1", "train"), ("validation0", "valid"),
                                              ("test0", "test"), ("test1", "test")]  # the "[]" rows are gone
    assert out[3].input.text == ("Table: Model,Acc.,F1\nbase,71.2,68.0\nours,[BOLD] 74.5,70.1\n"
                                 "Caption: Table 5: test results.")
    assert [r.text for r in out[4].references] == ["the models run at similar speeds."]
    assert out[1].references[0].text == "pretraining adds 4.6 points."  # train row 2 is train1 after the filter
    md = scigen(tmp_path, serialization="markdown", augmentation="transpose")
    assert [i.id for i in md] == [i.id for i in out]  # every variant has the same ids: robustness matches on them
    assert md[4].input.text.startswith("Table: | |0|1|\n|---|---|---|\n|Model|base|ours|\n|Tokens/s|410|395|")


@pytest.mark.parametrize(("header", "values", "why"), [
    ("['a']", "__import__('os').system('true')", "malformed node"),  # a literal, never code
    ("['a']", "[['x'", "never closed"),
    ("'a'", "[['x']]", "the header must be a list"),
])
def test_a_row_that_is_not_a_literal_table_is_one_clear_error(tmp_path, header, values, why):
    folder = tmp_path / "scigen" / "unpinned"
    folder.mkdir(parents=True)
    for split in FILES:
        rows = [("Table 1.", header, values, "text")] if split == "test" else F.SCIGEN[split]
        (folder / f"{split}.parquet").write_bytes(F.scigen_parquet(split, rows))
    with pytest.raises(ScenarioError, match=rf"scenario 'scigen': .*test.parquet row 0: .*{why}"):
        scigen(tmp_path)


def test_rouge_l_is_unstemmed_as_unitxts_where_helms_rouge_l_stems():
    pytest.importorskip("rouge_score")
    from helmflow.metrics.table_reasoning import unitxt_rouge_l
    from helmflow.metrics.text_overlap import rouge_l_score

    gold, output = "The model improves accuracy", "the models improve Accuracy"
    # tokens: the model improves accuracy / the models improve accuracy: LCS "the accuracy" = 2 of 4 each side
    assert unitxt_rouge_l([gold], output) == pytest.approx(0.5)
    assert rouge_l_score(gold, output) == pytest.approx(1.0)  # HELM's rouge_l stems: all four tokens match
    # the best reference counts: "ours is faster" vs "ours is slower" (2/3) and "ours is faster" itself (1)
    assert unitxt_rouge_l(["ours is slower", "ours is faster"], "Ours is faster.") == pytest.approx(1.0)
    assert unitxt_rouge_l(["ours is slower"], "ours is faster") == pytest.approx(2 / 3)


@pytest.mark.slow
def test_rouge_l_is_unitxts():
    pytest.importorskip("unitxt")
    pytest.importorskip("rouge_score")
    from unitxt.metrics import Rouge

    from helmflow.metrics.table_reasoning import unitxt_rouge_l

    # their sentence split (NLTK's punkt, not downloadable here) joins sentences with newlines, which only
    # rougeLsum reads: rougeL's tokenizer takes a newline as a space, so it is left out
    rouge = Rouge(sent_split_newline=False)
    cases = [(["ours beats base by 3.3 points."], "Ours beats the base model by 3.3 points"),
             (["the train split has 1000 rows.", "1000 rows in train"], "The train split has 1,000 rows."),
             (["pretraining adds 4.6 points."], "no idea")]
    for golds, output in cases:
        theirs = rouge.compute([g.lower() for g in golds], output.lower(), {})["rougeL"]
        assert unitxt_rouge_l(golds, output) == pytest.approx(theirs), (golds, output)
