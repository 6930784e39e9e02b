"""Fixture mirrors for the VHELM board: Parquet files in each dataset's real schema (Hugging Face
``Image`` structs with the bytes embedded), holding items written here, never real rows.

``write_mirror(root)`` lays them out as ``$HELMFLOW_MIRROR`` reads them:
``<root>/<scenario>/<revision>/<filename>``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from helmflow.scenarios import get_scenario
from helmflow.scenarios.mm_star import CATEGORIES
from helmflow.scenarios.mmmu import SUBJECTS
from helmflow.scenarios.vision_shapes import Shape, draw

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def picture(k: int, fmt: str = "PNG") -> dict:
    """A distinct small image per ``k`` (a coloured square somewhere), as an HF Image cell."""
    colors = ["red", "green", "blue", "yellow", "purple", "orange"]
    data = draw([Shape(kind=["square", "circle", "triangle"][k % 3], color=colors[k % 6], cell=k % 9)])
    if fmt != "PNG":
        buf = io.BytesIO()
        Image.open(io.BytesIO(data)).convert("RGB").save(buf, format=fmt)
        data = buf.getvalue()
    return {"bytes": data, "path": f"fixture-{k}.{fmt.lower()}"}


def _write(root: Path, scenario: str, params: dict, filename: str, table: pa.Table) -> None:
    revision = get_scenario(scenario, params).dataset_revision()
    path = root / scenario / revision / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def mm_star(n_per_category: int = 3) -> pa.Table:
    rows = []
    for c, category in enumerate(CATEGORIES.values()):
        for j in range(n_per_category):
            k = c * 10 + j
            rows.append({
                "index": k, "image": picture(k),
                "question": f"Fixture {k}: which shape is drawn? Options: A: square, B: circle, C: triangle, D: star",
                "answer": "ABC"[k % 3], "category": category, "l2_category": "fixture",
                "meta_info": {"source": "helmflow-fixture", "split": "val", "image_path": f"{k}.png"}})
    schema = pa.schema([("index", pa.int64()), ("question", pa.string()), ("image", IMAGE), ("answer", pa.string()),
                        ("category", pa.string()), ("l2_category", pa.string()),
                        ("meta_info", pa.struct([("source", pa.string()), ("split", pa.string()), ("image_path", pa.string())]))])
    return pa.Table.from_pylist(rows, schema=schema)


def mmmu(subject: str, n: int = 3) -> pa.Table:
    schema = pa.schema([("id", pa.string()), ("question", pa.string()), ("options", pa.string()),
                        ("explanation", pa.string()), *((f"image_{k}", IMAGE) for k in range(1, 8)),
                        ("img_type", pa.string()), ("answer", pa.string()), ("topic_difficulty", pa.string()),
                        ("question_type", pa.string()), ("subfield", pa.string())])
    rows = []
    for j in range(n):
        row = {"id": f"validation_{subject}_{j + 1}", "explanation": "", "img_type": "['Diagrams']",
               "topic_difficulty": "Easy", "subfield": "fixture", "question_type": "multiple-choice"}
        row.update({f"image_{k}": None for k in range(1, 8)})
        if j == 0:  # two images interleaved with the text
            row.update(question=f"Compare <image 1> with <image 2> ({subject}): which has more sides?",
                       options="['the first', 'the second']",
                       answer="A", image_1=picture(1), image_2=picture(2, "JPEG"))
        elif j == 1:  # image-valued options
            row.update(question=f"Which picture shows a circle ({subject})?", options="['<image 1>', '<image 2>', '<image 3>']",
                       answer="B", image_1=picture(3), image_2=picture(4), image_3=picture(5))
        else:  # an open question, which the multiple-choice run leaves out
            row.update(question="Describe <image 1>.", options="[]", answer="a square", image_1=picture(6),
                       question_type="open")
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def pope(shard: int, n: int = 3) -> pa.Table:
    rows = [{"id": f"{shard}-{j}", "question_id": str(shard * 100 + j), "question": "Is there a circle in the image?",
             "answer": "yes" if j % 3 == 1 else "no", "image_source": "fixture", "image": picture(shard * 3 + j),
             "category": "random"} for j in range(n)]
    schema = pa.schema([("id", pa.string()), ("question_id", pa.string()), ("question", pa.string()),
                        ("answer", pa.string()), ("image_source", pa.string()), ("image", IMAGE), ("category", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def a_okvqa(n: int = 4) -> pa.Table:
    rows = [{"image": picture(20 + j, "JPEG"), "question_id": f"fixture{j}", "question": "What could this shape hold?",
             "choices": ["water", "light", "sound", "nothing"], "correct_choice_idx": j % 4,
             "direct_answers": ["water"] * 10, "difficult_direct_answer": False, "rationales": ["A fixture."]}
            for j in range(n)]
    schema = pa.schema([("image", IMAGE), ("question_id", pa.string()), ("question", pa.string()),
                        ("choices", pa.list_(pa.string())), ("correct_choice_idx", pa.int64()),
                        ("direct_answers", pa.list_(pa.string())), ("difficult_direct_answer", pa.bool_()),
                        ("rationales", pa.list_(pa.string()))])
    return pa.Table.from_pylist(rows, schema=schema)


def exams_v(shard: int) -> pa.Table:
    rows = []
    for j, (language, group, kind) in enumerate([("English", "Natural Science", "image_text"),
                                                  ("Chinese", "Natural Science", "image_text"),
                                                  ("German", "Natural Science", "image_text"),
                                                  ("English", "Social Sciences", "image_text"),
                                                  ("English", "Natural Science", "text")]):
        rows.append({"image": picture(30 + shard * 5 + j), "sample_id": f"s{shard}-{j}", "answer_key": "ABCD"[j % 4],
                     "type": kind, "grade": "12", "subject": "Physics", "language": language,
                     "chemical_structure": 0, "table": 0, "figure": 1, "graph": 0, "subject_grouped": group})
    schema = pa.schema([("image", IMAGE), ("sample_id", pa.string()), ("answer_key", pa.string()), ("type", pa.string()),
                        ("grade", pa.string()), ("subject", pa.string()), ("language", pa.string()),
                        ("chemical_structure", pa.int64()), ("table", pa.int64()), ("figure", pa.int64()),
                        ("graph", pa.int64()), ("subject_grouped", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def write_mirror(root: Path) -> Path:
    """Every VHELM board file as a fixture under ``root`` (the ``$HELMFLOW_MIRROR`` layout)."""
    _write(root, "mm_star", {}, "mmstar.parquet", mm_star())
    for subject in SUBJECTS:
        _write(root, "mmmu", {"subject": subject}, f"{subject}/validation-00000-of-00001.parquet", mmmu(subject))
    for k in range(3):
        _write(root, "pope", {}, f"data/test-0000{k}-of-00003.parquet", pope(k))
        _write(root, "exams_v", {}, f"data/test-0000{k}-of-00003.parquet", exams_v(k))
    _write(root, "a_okvqa", {}, "data/validation-00000-of-00001.parquet", a_okvqa())
    return root
