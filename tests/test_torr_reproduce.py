"""``helmflow reproduce torr --explain``: HELM's ToRR cap and every known difference, through the command."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli


@pytest.mark.slow
def test_reproduce_torr_explains_the_cap_the_missing_datasets_and_the_pins(tmp_path):
    out = run_cli("reproduce", "torr", "--explain", "--storage", str(tmp_path / "store"))
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "reproducing torr (v1): at most 100 instances per scenario" in text  # HELM's --max-eval-instances 100
    assert ("all 10 of HELM's ToRR datasets are ported (wikitq, tab_fact, scigen, numeric_nlg, fin_qa, qtsumm, "
            "tablebench_fact_checking") in text
    assert "tablebench: unitxt reads Multilingual-Multimodal-NLP/TableBench at revision 90593ad8" in text
    assert "turl_col_type: unitxt reads stanford-crfm/helm-scenarios' main branch unpinned" in text
    assert "pins: HELM's ToRR recipes read unitxt's catalog" in text
    assert "wikitq: the question and table files come from the 1.0.2 release zip" in text
    assert "tab_fact: unitxt reads wenhu/tab_fact's Parquet conversion unpinned" in text
    assert "scigen: unitxt reads kasnerz/scigen's main branch unpinned" in text
    assert "qtsumm: unitxt reads the gated yale-nlp/QTSumm unpinned" in text
    assert "fin_qa: unitxt's execution_accuracy is not computed" in text
    assert "numeric_nlg: unitxt reads kasnerz/numericnlg's main branch unpinned" in text
    assert "insert_empty_rows:" in text and "robustness:" in text
    assert not (tmp_path / "store").exists()  # --explain runs nothing
