"""Fixture mirrors for TableBench and TURL's column types, in the sources' raw shapes, holding items written
here (never real rows): TableBench's test split as JSON lines (the ``table`` a JSON string of columns and
data, every instruction type and question type mixed), and TURL's ``<split>.table_col_type.json`` lists."""

from __future__ import annotations

import json
from pathlib import Path

FORMAT = ("The answer should follow the format below:\n[Answer Format]\nFinal Answer: AnswerName1, AnswerName2...\n"
          "Ensure the final answer is as short as possible.")
LAKES = json.dumps({"columns": ["lake", "area", "depth"],
                    "data": [["Mere", 12.5, 40], ["Tarn", 3, 11], ["Loch Ness", 56, 227]]})
MILLS = json.dumps({"columns": ["mill", "built", "owner"],
                    "data": [["Old Mill", 1820, "the town"], ["New Mill", 1901, "a family"]]})


def _row(n: int, qtype: str, kind: str, table: str, question: str, answer: str) -> dict[str, object]:
    return {"id": f"fixture-{n}", "qtype": qtype, "qsubtype": "Written", "instruction": "(the full prompt)",
            "instruction_type": kind, "table": table, "question": question, "answer": answer,
            "answer_formatter": FORMAT}


# (qtype, instruction type, table, question, answer): the DP FactChecking rows are the fact_checking task's, in order
TABLEBENCH_ROWS = [
    ("FactChecking", "DP", LAKES, "Is Tarn the smallest lake?", "Yes"),
    ("FactChecking", "PoT", LAKES, "Is Tarn the smallest lake?", "Yes"),  # another instruction type: dropped
    ("NumericalReasoning", "DP", LAKES, "What is the total area?", "71.5"),
    ("FactChecking", "DP", MILLS, "Was the Old Mill built before 1850?", "Yes"),
    ("FactChecking", "DP", LAKES, "Is Mere deeper than Loch Ness?", "No"),
    ("DataAnalysis", "DP", MILLS, "What does the table suggest about ownership?", "The town owns the oldest mill."),
    ("FactChecking", "DP", MILLS, "Does a family own the New Mill?", "Yes"),
    ("FactChecking", "DP", LAKES, "Is Loch Ness the deepest lake?", "Yes"),
    ("FactChecking", "DP", MILLS, "Were both mills built in the 1800s?", "No"),
    ("FactChecking", "SCoT", MILLS, "Were both mills built in the 1800s?", "No"),
    ("FactChecking", "DP", LAKES, "Is the area of Mere 12.5?", "Yes"),
    ("FactChecking", "DP", MILLS, "Was the New Mill built in 1901?", "Yes"),
]


def tablebench_jsonl() -> bytes:
    rows = [_row(n, *r) for n, r in enumerate(TABLEBENCH_ROWS)]
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode("utf-8")


def write_tablebench_mirror(root: Path) -> Path:
    """``<root>/tablebench/unpinned/test.jsonl``."""
    (root / "tablebench" / "unpinned").mkdir(parents=True, exist_ok=True)
    (root / "tablebench" / "unpinned" / "test.jsonl").write_bytes(tablebench_jsonl())
    return root


def _column(j: int, cells: dict[int, str]) -> list[list[list[object]]]:
    return [[[i, j], [f"e{i}{j}", text]] for i, text in sorted(cells.items())]


# TURL: [table id, page title, page id, section title, caption, headers, columns (cells), types per column]
# the first column's last cell sits at row 3, so rows 0-2 are shown (the loader's range); row 1 is empty in every
# column and is dropped
RIVERS = ["t-1", "Rivers of Nowhere", 11, "Main rivers", "Rivers by length", ["river", "mouth"],
          [_column(0, {0: "Ash", 2: "Elm", 3: "Yew"}), _column(1, {0: "North Sea", 2: "Irish Sea"})],
          [["geography.river", "location.location"], ["geography.body_of_water"]]]
CLUBS = ["t-2", "Clubs of Somewhere", 12, "Teams", "", ["club", "ground"],
         [_column(0, {0: "Ash United", 1: "Elm Rovers"}), _column(1, {0: "Ash Park", 1: "Elm Road"})],
         [["sports.sports_team", "soccer.football_team"], ["sports.sports_facility"]]]
TURL = {"train": [RIVERS, CLUBS], "dev": [CLUBS], "test": [RIVERS, CLUBS]}


def write_turl_mirror(root: Path) -> Path:
    """``<root>/turl_col_type/unpinned/<split>.table_col_type.json``."""
    folder = root / "turl_col_type" / "unpinned"
    folder.mkdir(parents=True, exist_ok=True)
    for split, items in TURL.items():
        (folder / f"{split}.table_col_type.json").write_text(json.dumps(items))
    return root
