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
# (uuid, subset, difficulty, LaTeX source): one per board cell, each small (a few 8x8 blocks, so
# HELM's block EMD, quadratic in blocks, stays quick)
SOURCES = [
    ("eq-1", "equation", "easy", "$$x^2$$"),
    ("eq-2", "equation", "medium", "$$a+b$$"),
    ("eq-3", "equation", "hard", "$$\\sqrt{y}$$"),
    ("tab-1", "table", "easy", "\\begin{tabular}{|c|}\\hline a \\\\ \\hline\\end{tabular}"),
    ("tab-2", "table", "medium", "\\begin{tabular}{c|c} 1 & 2 \\end{tabular}"),
    ("tab-3", "table", "hard", "\\begin{tabular}{cc} p & q \\end{tabular}"),
    ("plot-1", "plot", "easy", "\\rule{8mm}{1mm}"),
    ("plot-2", "plot", "medium", "\\rule{1mm}{8mm}"),
    ("plot-3", "plot", "hard", "\\rule{4mm}{4mm}"),
    ("alg-1", "algorithm", "easy", "if $a$"),
    ("alg-2", "algorithm", "medium", "do $b$"),
    ("alg-3", "algorithm", "hard", "end"),
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


BROKEN = "tab-1"  # the fixture the policy answers with LaTeX that does not compile
ANSWERS = "image2struct-answers.json"


def write_answers(root: Path) -> Path:
    """{image sha256: answer} for :func:`policy`: the fixture's own source (a ```latex block), except
    :data:`BROKEN`, answered with an unclosed environment."""
    import hashlib
    import json

    table = pq.read_table(next((root / "image2latex").rglob("*.parquet"))).to_pylist()
    answers = {hashlib.sha256(row["image"]["bytes"]).hexdigest():
               ("\\begin{tabular}{c" if row["uuid"] == f'"{BROKEN}"' else answer_for(row["uuid"].strip('"')))
               for row in table}
    path = root / ANSWERS
    path.write_text(json.dumps(answers))
    return path


def policy(prompt: str, payload: dict) -> str:
    """A dev-server policy answering from the image: the source that drew it ($IMAGE2STRUCT_ANSWERS)."""
    import json
    import os

    answers = json.loads(Path(os.environ["IMAGE2STRUCT_ANSWERS"]).read_text())
    for part in payload.get("_parts", []):
        if isinstance(part, dict) and part.get("type") == "image":
            return answers.get(part["sha256"], "no idea")
    return "no image"
