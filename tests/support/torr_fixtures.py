"""Fixture mirrors for the table scenarios, in the datasets' raw shapes, holding items written here (never
real rows): WikiTQ's release zip (tab-separated question files and ``csv/<n>-csv/<k>.tsv`` tables) and
TabFact's Parquet conversion (``table_text`` with ``#`` cells) and SciGen's Parquet files (literal lists)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow.scenarios.tab_fact import SPLITS
from helmflow.scenarios.wikitq import RELEASE, ZIP

# WikiTQ: two small tables and one of 21 x 10 = 210 cells (over the 200-cell limit, so its question is dropped)
TOWNS = "Town\tPeople\tRiver\nAlder\t120\tOuse\nBirch\t 95 \tTees\nCedar\t300\t\"Wye, upper\"\n"
PEAKS = "Peak\tHeight\nNorth Top\t812\nSouth Top\t640\n"
WIDE = "\t".join(f"c{j}" for j in range(10)) + "\n" + "".join(
    "\t".join(f"{i}.{j}" for j in range(10)) + "\n" for i in range(21))
QUESTIONS = {
    "train": [("nt-0", "which town has 120 people?", "csv/200-csv/0.csv", "Alder"),
              ("nt-1", "which peak is higher?", "csv/200-csv/1.csv", "North Top")],
    "dev": [("nt-2", "which river runs by Birch?", "csv/200-csv/0.csv", "Tees")],
    "test": [("nu-0", "which town is biggest?", "csv/200-csv/0.csv", "Cedar"),
             ("nu-1", "how tall is South Top?", "csv/200-csv/1.csv", "640"),
             ("nu-2", "which towns have over 100 people?", "csv/200-csv/0.csv", "Alder|Cedar"),
             ("nu-3", "what is c0 of row 3?", "csv/201-csv/9.csv", "3.0")],
}
QUESTION_FILES = {"train": "random-split-1-train.tsv", "dev": "random-split-1-dev.tsv",
                  "test": "pristine-unseen-tables.tsv"}


def wikitq_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for split, name in QUESTION_FILES.items():
            lines = ["id\tutterance\tcontext\ttargetValue"] + ["\t".join(q) for q in QUESTIONS[split]]
            z.writestr(f"WikiTableQuestions/data/{name}", "\n".join(lines) + "\n")
        for path, text in (("200-csv/0", TOWNS), ("200-csv/1", PEAKS), ("201-csv/9", WIDE)):
            z.writestr(f"WikiTableQuestions/csv/{path}.tsv", text)
            z.writestr(f"WikiTableQuestions/csv/{path}.csv", text.replace("\t", ","))  # the .csv beside it, unread
    return buf.getvalue()


# TabFact: (table_text, statement, label) per split; labels 1 = entailed, 0 = refuted
SHIPS = "ship#launched#tons\nAster#1901#300\nBrill#1907#\"1,200\"\nCrane#1912#850\n"
TABFACT = {
    "train": [(SHIPS, "brill was launched in 1907", 1), (SHIPS, "crane is the oldest ship", 0),
              (SHIPS, "aster weighs 300 tons", 1), (SHIPS, "there are 5 ships", 0),
              (SHIPS, "crane was launched after brill", 1), (SHIPS, "aster was launched in 1912", 0)],
    "validation": [(SHIPS, "brill weighs 1,200 tons", 1)],
    "test": [(SHIPS, "aster was launched first", 1), (SHIPS, "crane weighs the most", 0),
             (SHIPS, "three ships are listed", 1), (SHIPS, "brill was launched in 1901", 0)],
}
TABFACT_SCHEMA = pa.schema([("id", pa.int64()), ("table_id", pa.string()), ("table_text", pa.string()),
                            ("table_caption", pa.string()), ("statement", pa.string()), ("label", pa.int64())])


def tab_fact_parquet(split: str) -> bytes:
    rows = [{"id": k, "table_id": "1-100-1.html.csv", "table_text": t, "table_caption": "ships",
             "statement": s, "label": label} for k, (t, s, label) in enumerate(TABFACT[split])]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=TABFACT_SCHEMA), buf)
    return buf.getvalue()


def write_mirror(root: Path) -> Path:
    """``<root>/<scenario>/<revision>/<file>``, the layout ``$HELMFLOW_MIRROR`` reads."""
    (root / "wikitq" / RELEASE).mkdir(parents=True, exist_ok=True)
    (root / "wikitq" / RELEASE / ZIP).write_bytes(wikitq_zip())
    (root / "tab_fact" / "unpinned").mkdir(parents=True, exist_ok=True)
    for split, _ in SPLITS:
        (root / "tab_fact" / "unpinned" / f"{split}.parquet").write_bytes(tab_fact_parquet(split))
    write_scigen_mirror(root)
    return root


# SciGen: (table_caption, table_column_names, table_content_values, text) per split, the columns as the Hub's
# Parquet files hold them (Python literal lists in strings); a row with no values ("[]") is dropped by the card
SCIGEN_SCHEMA = pa.schema([("paper", pa.string()), ("paper_id", pa.string()), ("table_caption", pa.string()),
                           ("table_column_names", pa.large_string()), ("table_content_values", pa.large_string()),
                           ("text", pa.large_string())])
SCIGEN_HEADER = "['Model', 'Acc.', 'F1']"
SCIGEN_VALUES = "[['base', '71.2', '68.0'], ['ours', '[BOLD] 74.5', '70.1']]"
SCIGEN = {
    "train": [("Table 1: results on dev.", SCIGEN_HEADER, SCIGEN_VALUES, "ours beats base by 3.3 points."),
              ("Table 2: empty.", SCIGEN_HEADER, "[]", "nothing to say."),
              ("Table 3: ablation.", "['Setting', 'Acc.']", "[['full', '74.5'], ['no pretraining', '69.9']]",
               "pretraining adds 4.6 points.")],
    "validation": [("Table 4: sizes.", "['Split', 'Size']", "[['train', '1000']]", "the train split has 1000 rows.")],
    "test": [("Table 5: test results.", SCIGEN_HEADER, SCIGEN_VALUES, "ours improves accuracy and f1."),
             ("Table 6: none.", SCIGEN_HEADER, "[]", "no values."),
             ("Table 7: speed.", "['Model', 'Tokens/s']", "[['base', '410'], ['ours', '395']]",
              "the models run at similar speeds.")],
}


def parquet_bytes(records: list[dict], schema: pa.Schema) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(records, schema=schema), buf)
    return buf.getvalue()


def write_unpinned_splits(root: Path, scenario: str, splits: Iterable[str], parquet: Callable[[str], bytes]) -> Path:
    """A Hub dataset read unpinned, mirrored: each split's file at ``<root>/<scenario>/unpinned/<split>.parquet``."""
    (root / scenario / "unpinned").mkdir(parents=True, exist_ok=True)
    for split in splits:
        (root / scenario / "unpinned" / f"{split}.parquet").write_bytes(parquet(split))
    return root


def scigen_parquet(split: str, rows: list[tuple[str, str, str, str]] | None = None) -> bytes:
    records = [{"paper": "A paper", "paper_id": f"{split}-{k}", "table_caption": c, "table_column_names": h,
                "table_content_values": v, "text": t} for k, (c, h, v, t) in enumerate(rows or SCIGEN[split])]
    return parquet_bytes(records, SCIGEN_SCHEMA)


def write_scigen_mirror(root: Path) -> Path:
    """SciGen's three split files at ``<root>/scigen/unpinned/<split>.parquet``."""
    return write_unpinned_splits(root, "scigen", SCIGEN, scigen_parquet)
