"""The ToRR table scenarios on fixtures in their raw shapes (WikiTQ's release zip, TabFact's Parquet), and
their scores worked out by hand and, where unitxt is installed, by unitxt's own post-processors and metrics."""

from __future__ import annotations

import pytest

from helmflow.scenarios import get_scenario
from helmflow.scenarios.tables import TableParams, as_markdown, parse_delimited, transpose
from tests.support import torr_fixtures as F


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    return F.write_mirror(tmp_path_factory.mktemp("torr"))


def wikitq(mirror, **params):
    folder = mirror / "wikitq" / F.RELEASE
    return get_scenario("wikitq", params).load({F.ZIP: str(folder / F.ZIP)})


def tab_fact(mirror, **params):
    folder = mirror / "tab_fact" / "unpinned"
    return get_scenario("tab_fact", params).load({f"{s}.parquet": str(folder / f"{s}.parquet")
                                                  for s in ("train", "validation", "test")})


def test_wikitq_reads_questions_and_tables_drops_big_tables_and_splits_answers(mirror):
    out = wikitq(mirror, serialization="markdown")
    assert [(i.id, i.split) for i in out] == [("nt-0", "train"), ("nt-1", "train"), ("nt-2", "valid"),
                                              ("nu-0", "test"), ("nu-1", "test"), ("nu-2", "test")]  # nu-3: 210 cells
    towns = "|Town|People|River|\n|---|---|---|\n|Alder|120|Ouse|\n|Birch|95|Tees|\n|Cedar|300|Wye, upper|"
    assert out[3].input.text == f"Question: which town is biggest?\nTable: {towns}"  # " 95 " stripped, quotes read
    assert [r.text for r in out[5].references] == ["Alder", "Cedar"]
    ids = [i.id for i in wikitq(mirror, serialization="json", augmentation="transpose")]
    assert ids == [i.id for i in out]  # every variant has the same instances: robustness matches on ids


def test_tab_fact_labels_ids_and_a_transposed_table(mirror):
    out = tab_fact(mirror, serialization="markdown", augmentation="transpose")
    assert [i.id for i in out][:2] == ["train0", "train1"] and out[6].id == "validation0" and out[7].split == "test"
    assert [i.references[0].text for i in out[7:]] == ["entailed", "refuted", "entailed", "refuted"]
    table = "| |0|1|2|\n|---|---|---|---|\n|ship|Aster|Brill|Crane|\n|launched|1901|1907|1912|\n|tons|300|1,200|850|"
    assert out[7].input.text == f"Table: {table}\nStatement: aster was launched first"
    assert as_markdown(transpose(parse_delimited(F.SHIPS, "#"))) == table


def test_a_bad_variant_is_one_clear_error():
    from helmflow.scenarios import ScenarioError

    with pytest.raises(ScenarioError, match="serialization"):
        get_scenario("wikitq", {"serialization": "xml"})
    fields = TableParams.model_fields
    from helmflow.scenarios.tables import AUGMENTATIONS, SERIALIZATIONS

    assert set(fields["serialization"].annotation.__args__) == set(SERIALIZATIONS)  # type: ignore[union-attr]
    assert set(fields["augmentation"].annotation.__args__) == set(AUGMENTATIONS)  # type: ignore[union-attr]


def test_wikitq_f1_strings_counts_the_lists_brackets_as_helm_does():
    pytest.importorskip("spacy")
    from helmflow.metrics.table_reasoning import answers_f1, label_accuracy, wikitq_f1

    # both sides become "['Cedar']": 5 tokens [ ' cedar ' ]; a right answer is 1
    assert wikitq_f1(["Cedar"], "Cedar\nbecause it is big") == 1.0
    # a wrong answer still shares the 4 bracket and quote tokens: P = R = 4/5, F1 = 0.8 (HELM's number)
    assert wikitq_f1(["Cedar"], "Alder") == pytest.approx(0.8)
    assert answers_f1(["Cedar"], "Alder") == 0.0  # the corrected one: the answers' own tokens only
    # "640" -> str(float) is not reached (a list), references ['Alder'] ['Cedar'] joined: 10 tokens;
    # "Alder, Cedar" -> ['Alder', 'Cedar']: 9 tokens ([ ' alder ' , ' cedar ' ]); common: [ ] ' x4 alder cedar = 8
    assert wikitq_f1(["Alder", "Cedar"], "Alder, Cedar") == pytest.approx(2 * (8 / 9) * (8 / 10) / (8 / 9 + 8 / 10))
    assert answers_f1(["Alder", "Cedar"], "Alder, Cedar") == 1.0
    assert answers_f1(["640"], "640") == 1.0  # "640.0" on both sides
    assert label_accuracy(["entailed"], "Entailed. The table says so") == 1.0
    assert label_accuracy(["refuted"], "entailed") == 0.0


@pytest.mark.slow
def test_the_scores_are_unitxts():
    pytest.importorskip("spacy")
    pytest.importorskip("unitxt")
    import spacy
    from unitxt.metrics import F1Strings
    from unitxt.processors import LowerCaseTillPunc, StrToFloatFormat, TakeFirstNonEmptyLine, ToListByCommaSpace

    from helmflow.metrics.table_reasoning import label_accuracy, wikitq_f1

    def theirs(text):
        for op in (TakeFirstNonEmptyLine(), ToListByCommaSpace(), StrToFloatFormat()):
            text = op.process_value(text)
        return text

    f1 = F1Strings.__new__(F1Strings)  # compute() needs only the tokenizer (their en_core_web_sm's rules)
    f1.nlp = spacy.blank("en")
    f1.main_score = "f1_strings"
    cases = [(["Cedar"], "Alder"), (["Alder", "Cedar"], "Alder, Cedar"), (["640"], " 640 \n"), (["3.5"], "3.50"),
             (["North Top"], "north top, South Top"), (["don't"], "don't know")]
    for golds, output in cases:
        expected = f1.compute([theirs(g) for g in golds], theirs(output), [])["f1_strings"][0]
        assert wikitq_f1(golds, output) == pytest.approx(expected), (golds, output)
    low = LowerCaseTillPunc()
    for gold, output in [("entailed", "Entailed, surely"), ("refuted", "\n refuted!"), ("refuted", "entailed")]:
        same = low.process_value(TakeFirstNonEmptyLine().process_value(output)) == low.process_value(gold)
        assert label_accuracy([gold], output) == float(same)
