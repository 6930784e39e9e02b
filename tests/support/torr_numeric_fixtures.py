"""Fixture mirrors for ToRR's numericNLG, FinQA and QTSumm in their sources' raw shapes, holding items written
here (never real rows)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from tests.support.torr_fixtures import parquet_bytes, write_unpinned_splits

# numericNLG: the Hub's Parquet columns (a subset of the 21 the card ignores is kept, typed as the Hub has them)
NUMERIC_NLG_SCHEMA = pa.schema([("table_id_paper", pa.string()), ("caption", pa.string()),
                                ("table_html_clean", pa.large_string()), ("table_name", pa.string()),
                                ("paper_id", pa.string()), ("description", pa.large_string()),
                                ("valid", pa.int32())])


def html(header: list[str], rows: list[list[str]]) -> str:
    head = "<thead><tr>" + "".join(f"<th>{c}</th>" for c in header) + "</tr></thead>"
    body = "<tbody>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</tbody>"
    return f'<table border="1">{head}{body}</table>'


SCORES = html(["Method", "BLEU", "ROUGE"], [["Baseline", "21.4", "30.2"], ["<b>Ours</b>", "<b>24.9</b>", "33.0"]])
SIZES = html(["Set", "Tables"], [["train", "1,084"], ["test", "135"]])
NUMERIC_NLG = {
    "train": [("Table 1: Results.", SCORES, "ours improves bleu by 3.5 points."),
              ("Table 2: Data.", SIZES, "the training set has 1,084 tables.")],
    "validation": [("Table 3: Dev results.", SCORES, "ours is best on both metrics.")],
    "test": [("Table 4: Test results.", SCORES, "our method reaches 24.9 bleu."),
             ("Table 5: Sizes.", SIZES, "the test set is small.")],
}


def numeric_nlg_parquet(split: str, rows: list[tuple[str, str, str]] | None = None) -> bytes:
    records = [{"table_id_paper": f"P{k}-{split}", "caption": c, "table_html_clean": t, "table_name": f"Table {k}",
                "paper_id": f"P{k}", "description": d, "valid": 1} for k, (c, t, d) in enumerate(rows or NUMERIC_NLG[split])]
    return parquet_bytes(records, NUMERIC_NLG_SCHEMA)


def write_numeric_nlg_mirror(root: Path) -> Path:
    """numericNLG's three split files at ``<root>/numeric_nlg/unpinned/<split>.parquet``."""
    return write_unpinned_splits(root, "numeric_nlg", NUMERIC_NLG, numeric_nlg_parquet)


# FinQA: items in its dataset JSON's shape (pre_text/post_text sentence lists, table as row lists, qa)
def finqa_item(k: int, table: list[list[str]], question: str, program: str, answer: str, exe: float) -> dict:
    return {"pre_text": [f"report {k} opens with this sentence .", "a second sentence the card drops ."],
            "post_text": [f"report {k} goes on after the table .", "more text ."],
            "filename": f"ABC/2019/page_{k}.pdf", "table_ori": table, "table": table,
            "qa": {"question": question, "answer": answer, "explanation": "", "ann_table_rows": [1],
                   "ann_text_rows": [], "steps": [], "program": program, "gold_inds": {}, "exe_ans": exe,
                   "tfidftopn": {}, "program_re": program, "model_input": []},
            "id": f"ABC/2019/page_{k}.pdf-1"}


REVENUE = [["", "2019", "2018"], ["revenue", "$ 120", "$ 100"], ["costs", "80", "70"]]
ONE_ROW = [["", "2019"]]
FINQA = {
    "train": [finqa_item(0, REVENUE, "what was the growth in revenue?", "subtract(120, 100), divide(#0, 100)",
                         "20%", 0.2),
              finqa_item(1, ONE_ROW, "what is the header?", "add(1, 1)", "2", 2.0),  # dropped: one row
              finqa_item(2, REVENUE, "what were total costs?", "add(80, 70)", "150", 150.0)],
    "dev": [finqa_item(3, REVENUE, "what was the margin in 2019?", "subtract(120, 80)", "40", 40.0)],
    "test": [finqa_item(4, REVENUE, "what was the change in costs?", "subtract(80, 70)", "10", 10.0),
             finqa_item(5, ONE_ROW, "nothing?", "add(2, 2)", "4", 4.0),
             finqa_item(6, REVENUE, "what is the average revenue?", "table_average(revenue, none)", "110", 110.0)],
}


def write_finqa_mirror(root: Path, items: dict[str, list[dict]] | None = None) -> Path:
    """FinQA's three files at ``<root>/torr_fin_qa/<commit>/<file>.json``."""
    import json

    from helmflow.scenarios.fin_qa import COMMIT

    folder = root / "torr_fin_qa" / COMMIT
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in (items or FINQA).items():
        (folder / f"{split}.json").write_text(json.dumps(rows, indent=1))
    return root


# QTSumm: items in the Hub's JSON shape (the table's keys in the files' order: title, table_id, header, rows)
def qtsumm_item(k: int, title: str, header: list[str], rows: list[list[str]], query: str, summary: str) -> dict:
    return {"example_id": f"ex-{k}", "table": {"title": title, "table_id": f"t-{k}", "header": header, "rows": rows},
            "query": query, "summary": summary, "row_ids": [0]}


CLUBS = (["Club", "Founded", "Titles"], [["Rovers", "1901", "3"], ["United", "1899", "5"], ["City", "1920", "0"],
                                         ["Athletic", "1888", "2"]])
QTSUMM = {
    "qtsumm_train.json": [qtsumm_item(0, "Clubs", *CLUBS, "which club has won the most?", "United has five titles."),
                          qtsumm_item(1, "Clubs", *CLUBS, "which club is oldest?", "Athletic, founded in 1888.")],
    "qtsumm_dev.json": [qtsumm_item(2, "Clubs", *CLUBS, "which club has no titles?", "City has won nothing.")],
    "qtsumm_test.json": [qtsumm_item(3, "Clubs of the league", *CLUBS, "summarise the titles won.",
                                     "United leads with five titles, Rovers has three and City none."),
                         qtsumm_item(4, "Clubs", *CLUBS, "when were the clubs founded?",
                                     "All four were founded between 1888 and 1920.")],
}


def write_qtsumm_mirror(root: Path, items: dict[str, list[dict]] | None = None) -> Path:
    """QTSumm's three files at ``<root>/qtsumm/unpinned/<file>``: JSON arrays, as the Hub holds them."""
    import json

    folder = root / "qtsumm" / "unpinned"
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (items or QTSUMM).items():
        (folder / name).write_text(json.dumps(rows, indent=1))
    return root
