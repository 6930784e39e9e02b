"""Fixture files in the real schema and format of MMLU-Pro (Parquet) and GPQA (CSV), rows written here.

No row comes from the real datasets: questions and options are generated text. The shapes match
the pinned revisions (column names, Arrow types, option counts, CSV quoting), so the loaders, the
data path and HELM's ordering/sampling rules are exercised exactly as on the real files.
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MMLU_CATEGORIES = [
    "biology", "business", "chemistry", "computer science", "economics", "engineering", "health",
    "history", "law", "math", "other", "philosophy", "physics", "psychology",
]
MMLU_SCHEMA = pa.schema(
    [
        ("question_id", pa.int64()),
        ("question", pa.string()),
        ("options", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("answer_index", pa.int64()),
        ("cot_content", pa.string()),
        ("category", pa.string()),
        ("src", pa.string()),
    ]
)


def mmlu_pro_rows(n: int, start_id: int = 0, seed: int = 0, with_cot: bool = False) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        qid = start_id + k
        category = MMLU_CATEGORIES[k % len(MMLU_CATEGORIES)]
        count = 10 if rng.random() < 0.85 else rng.randint(3, 9)  # most rows have 10 options, some fewer
        options = [f"fixture option {j} of item {qid}" for j in range(count)]
        index = rng.randrange(count)
        rows.append(
            {
                "question_id": qid,
                "question": f"Fixture item {qid} ({category}): which listed option is the keyed one?",
                "options": options,
                "answer": "ABCDEFGHIJ"[index],
                "answer_index": index,
                "cot_content": f"A: Let's think step by step. The keyed option is {'ABCDEFGHIJ'[index]}." if with_cot else "",
                "category": category,
                "src": f"fixture-{category.replace(' ', '_')}",
            }
        )
    return rows


def writer_neutral(data: bytes) -> bytes:
    """Parquet bytes as pyarrow 26.0.1 wrote them when the recorded run ids were taken: a Parquet footer names
    its writer's version (``created_by``), so the fixture files' sha256 (part of scenario_version) would follow
    whichever pyarrow the extras resolve to. Only a same-length version is rewritten (the footer stays valid)."""
    import re

    return re.sub(rb"parquet-cpp-arrow version \d+\.\d+\.\d+", lambda m: b"parquet-cpp-arrow version 26.0.1"
                  if len(m.group(0)) == len(b"parquet-cpp-arrow version 26.0.1") else m.group(0), data)


def parquet_bytes(rows: list[dict], schema: pa.Schema = MMLU_SCHEMA) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return writer_neutral(buf.getvalue())


def mmlu_pro_files(n_test: int = 1500, n_validation: int = 70) -> dict[str, bytes]:
    """Our scenario filenames -> bytes: validation (5 per category, as the real 70) and test."""
    return {
        "validation.parquet": parquet_bytes(mmlu_pro_rows(n_validation, start_id=0, seed=1, with_cot=True)),
        "test.parquet": parquet_bytes(mmlu_pro_rows(n_test, start_id=70, seed=2)),
    }


# Real gpqa_main.csv has ~30 columns; these are the ones HELM reads plus a few metadata columns,
# in a plausible order, so the loader is shown to select by name.
GPQA_HEADER = [
    "Pre-Revision Question", "Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
    "Incorrect Answer 3", "Explanation", "Subdomain", "Record ID", "High-level domain", "Canary String",
]


def gpqa_rows(n: int = 448, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                "Pre-Revision Question": f"draft {i}",
                # quoted commas, quotes and a newline, as real rows have
                "Question": f"  Fixture GPQA-shaped item {i}: given \"x, y\" and\na second line, which is keyed?  ",
                "Correct Answer": f" keyed answer {i} ",
                "Incorrect Answer 1": f"distractor {i}-1",
                "Incorrect Answer 2": f"distractor {i}-2",
                "Incorrect Answer 3": f"distractor {i}-3",
                "Explanation": f"Because item {i} is keyed that way.",
                "Subdomain": rng.choice(["Fixture Physics", "Fixture Chemistry", "Fixture Biology"]),
                "Record ID": f"rec{i:05d}",
                "High-level domain": "Fixture",
                "Canary String": "FIXTURE-CANARY",
            }
        )
    return rows


def csv_bytes(rows: list[dict], header: list[str] = GPQA_HEADER) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def mirror_folder(root: Path, name: str, files: dict[str, bytes]) -> str:
    """A scenario's mirror folder ``root/name`` holding ``files`` (name -> bytes): what
    ``HELMFLOW_MIRROR_<SCENARIO>`` points at."""
    path = root / name
    path.mkdir(parents=True)
    for filename, data in files.items():
        (path / filename).write_bytes(data)
    return str(path)
