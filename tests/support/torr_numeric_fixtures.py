"""Fixture mirrors for ToRR's numericNLG, FinQA and QTSumm in their sources' raw shapes, holding items written
here (never real rows)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

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
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(records, schema=NUMERIC_NLG_SCHEMA), buf)
    return buf.getvalue()


def write_numeric_nlg_mirror(root: Path) -> Path:
    """numericNLG's three split files at ``<root>/numeric_nlg/unpinned/<split>.parquet``."""
    (root / "numeric_nlg" / "unpinned").mkdir(parents=True, exist_ok=True)
    for split in NUMERIC_NLG:
        (root / "numeric_nlg" / "unpinned" / f"{split}.parquet").write_bytes(numeric_nlg_parquet(split))
    return root
