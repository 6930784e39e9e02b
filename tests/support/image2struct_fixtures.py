"""Fixture mirrors for the Image2Struct board: Parquet in the datasets' row shape (``uuid``, PNG
``image`` as a Hugging Face Image struct, ``structure``, ``text``, ``difficulty``, ``category`` quoted
as HELM reads it, ``assets``), holding items written here and drawn by helmflow's own renderer, never
real rows. ``SOURCES`` doubles as the answers a perfect model gives (``answer_for``)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow import render
from helmflow.scenarios import get_scenario

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
# (uuid, subset, difficulty, LaTeX source)
SOURCES = [
    ("eq-1", "equation", "easy", "$$x^2 + y^2 = z^2$$"),
    ("eq-2", "equation", "medium", "$$\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$$"),
    ("tab-1", "table", "easy", "\\begin{tabular}{|c|c|}\\hline a & b \\\\ \\hline 1 & 2 \\\\ \\hline\\end{tabular}"),
]


def png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def latex_rows(subset: str) -> pa.Table:
    rows = []
    for uuid, sub, difficulty, source in SOURCES:
        out = render.render_latex(source)
        assert out.image is not None, out.error
        rows.append({"uuid": f'"{uuid}"', "image": {"bytes": png(out.image), "path": f"{uuid}.png"},
                     "structure": source, "text": out.text, "difficulty": difficulty, "category": f'"{sub}"',
                     "assets": []})
    schema = pa.schema([("uuid", pa.string()), ("image", IMAGE), ("structure", pa.string()), ("text", pa.string()),
                        ("difficulty", pa.string()), ("category", pa.string()), ("assets", pa.list_(pa.string()))])
    return pa.Table.from_pylist(rows, schema=schema)


def write_mirror(root: Path) -> Path:
    """Every LaTeX subset file (each holds all rows, as HELM filters on ``category``)."""
    table = latex_rows("")
    for subset in ("equation", "table", "plot", "algorithm"):
        s = get_scenario("image2latex", {"subset": subset})
        path = root / "image2latex" / s.dataset_revision() / s.file()
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
    return root


def answer_for(uuid: str) -> str:
    """What a perfect model answers for a fixture: its source in a ```latex block."""
    source = next(s for u, _, _, s in SOURCES if u == uuid)
    return f"Here is the code:\n```latex\n{source}\n```"
