"""Fixture files for HELM Lite's MATH, LegalBench and WMT14 scenarios, in the schema of the Hub's
Parquet conversions (column names and Arrow types), with rows written here: generated text, no
benchmark row. Sizes are realistic where HELM's rules depend on them (a test pool above 1,000, a
train split above 20,000 with duplicate targets)."""

from __future__ import annotations

import io
import random

import pyarrow as pa
import pyarrow.parquet as pq

MATH_TYPES = ["Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra", "Number Theory", "Prealgebra", "Precalculus"]
MATH_SCHEMA = pa.schema([("problem", pa.string()), ("level", pa.string()), ("type", pa.string()), ("solution", pa.string())])


def parquet_bytes(rows: list[dict], schema: pa.Schema) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return buf.getvalue()


def math_rows(n: int, seed: int) -> list[dict]:
    """Problems in no particular order (the loader sorts them), over every type and level."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        a, b = rng.randint(1, 6), rng.randint(1, 6)  # sums of two dice: 7 is common
        rows.append({
            "problem": f"{rng.choice('KQWZ')}{k:04d}: what is ${a} + {b}$?",
            "level": f"Level {1 + k % 5}" if k % 41 else "Level ?",  # the real data has a few odd levels
            "type": MATH_TYPES[k % 7],
            "solution": f"Adding, ${a} + {b} = {a + b}$, so the answer is $\\boxed{{{a + b}}}$.",
        })  # fmt: skip
    return rows


def math_files(n_train: int = 700, n_test: int = 500) -> dict[str, bytes]:
    return {"train.parquet": parquet_bytes(math_rows(n_train, 1), MATH_SCHEMA),
            "test.parquet": parquet_bytes(math_rows(n_test, 2), MATH_SCHEMA)}  # fmt: skip


LEGALBENCH_SCHEMAS = {
    "abercrombie": pa.schema([("answer", pa.string()), ("index", pa.string()), ("text", pa.string())]),
    "corporate_lobbying": pa.schema([
        ("answer", pa.string()), ("bill_summary", pa.string()), ("bill_title", pa.string()),
        ("company_description", pa.string()), ("company_name", pa.string()), ("index", pa.string()),
    ]),  # fmt: skip
    "international_citizenship_questions": pa.schema([("question", pa.string()), ("answer", pa.string()), ("index", pa.string())]),
    "function_of_decision_section": pa.schema([("Citation", pa.string()), ("Paragraph", pa.string()), ("answer", pa.string()), ("index", pa.string())]),
    "proa": pa.schema([("answer", pa.string()), ("index", pa.string()), ("text", pa.string())]),
}
LEGALBENCH_LABELS = {
    "abercrombie": ["generic", "descriptive", "suggestive", "arbitrary", "fanciful"],
    "corporate_lobbying": ["Yes", "No"],
    "international_citizenship_questions": ["Yes", "No"],
    "function_of_decision_section": ["Facts", "Procedural History", "Issue", "Rule", "Analysis", "Conclusion", "Decree"],
    "proa": ["Yes", "No"],
}


def legalbench_rows(subset: str, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        row = {name: f"fixture {name} {k}" for name in LEGALBENCH_SCHEMAS[subset].names}
        row["answer"] = rng.choice(LEGALBENCH_LABELS[subset])
        row["index"] = str(k)
        rows.append(row)
    return rows


def legalbench_files(subset: str, n_train: int = 6, n_test: int = 40) -> dict[str, bytes]:
    schema = LEGALBENCH_SCHEMAS[subset]
    return {f"{subset}-train.parquet": parquet_bytes(legalbench_rows(subset, n_train, 1), schema),
            f"{subset}-test.parquet": parquet_bytes(legalbench_rows(subset, n_test, 2), schema)}  # fmt: skip


def wmt_schema(source: str) -> pa.Schema:
    return pa.schema([("translation", pa.struct([(source, pa.string()), ("en", pa.string())]))])


def wmt_rows(source: str, n: int, tag: str, repeat_every: int = 0) -> list[dict]:
    """Sentence pairs; with ``repeat_every``, every that-many-th English side repeats an earlier one."""
    rows = []
    for k in range(n):
        english = f"Fixture sentence {k % 97} repeated." if repeat_every and k % repeat_every == 0 else f"Fixture {tag} sentence number {k}."
        rows.append({"translation": {source: f"[{source}] {tag} {k}", "en": english}})
    return rows


def wmt_files(pair: str = "de-en", n_train: int = 25_000, n_valid: int = 700, n_test: int = 800) -> dict[str, bytes]:
    source = pair.split("-")[0]
    schema = wmt_schema(source)
    return {
        f"{pair}-train.parquet": parquet_bytes(wmt_rows(source, n_train, "train", repeat_every=50), schema),
        f"{pair}-validation.parquet": parquet_bytes(wmt_rows(source, n_valid, "valid"), schema),
        f"{pair}-test.parquet": parquet_bytes(wmt_rows(source, n_test, "test"), schema),
    }


def hub_conversion_mirrors(tmp_path) -> dict[str, str]:
    """Small fixture folders for the HELM Lite scenarios that read the Hub's Parquet conversions from a mirror only
    (MATH, LegalBench's five subsets, WMT14's five pairs), as the ``HELMFLOW_MIRROR_<NAME>`` variables naming them."""
    from helmflow.scenarios.legalbench import SETTINGS
    from helmflow.scenarios.wmt14 import LANGUAGES

    files: dict[str, dict[str, bytes]] = {"MATH": math_files(120, 120), "LEGALBENCH": {}, "WMT_14": {}}
    for subset in SETTINGS:
        files["LEGALBENCH"] |= legalbench_files(subset, n_train=6, n_test=8)
    for source in LANGUAGES:
        files["WMT_14"] |= wmt_files(f"{source}-en", n_train=30, n_valid=4, n_test=4)
    env = {}
    for name, contents in files.items():
        folder = tmp_path / f"hub-{name.lower()}"
        folder.mkdir(exist_ok=True)
        for filename, data in contents.items():
            (folder / filename).write_bytes(data)
        env[f"HELMFLOW_MIRROR_{name}"] = str(folder)
    return env


# HELM Classic's math_regular reads HELM's eight official examples from HELM's math_scenario.py: a file of that
# shape around a list of our own (problem, answer) pairs, one problem a sum of literals as HELM writes its long ones
MATH_OFFICIAL = [("Fixture problem 0: the distance from $(0,0)$ to $(3,4)$?", "5"),
                 *((f"Fixture problem {k}: what is ${k} + {k}$?", str(2 * k)) for k in range(1, 8))]
_MATH_SOURCE = '''"""A file shaped as HELM's math_scenario.py around its list (written for the tests)."""
import os


class MATHScenario(Scenario):
    def get_instances(self, output_path: str):
        for split, split_name in zip([TRAIN_SPLIT, TEST_SPLIT], ["train", "test"]):
            if split == TRAIN_SPLIT and self.use_official_examples:
                train_instances = [
{pairs}
                ]
                dataset[TRAIN_SPLIT] = [{{"problem": p, "answer": a}} for p, a in train_instances]
'''


def math_helm_source(pairs: list[tuple[str, str]] | None = None, first: str | None = None) -> str:
    """The file; ``first`` replaces the first pair's source text (e.g. with an expression that is no literal)."""
    pairs = MATH_OFFICIAL if pairs is None else pairs
    lines = [f"                    ({p!r}, {a!r})," for p, a in pairs]
    if pairs is MATH_OFFICIAL:
        lines[0] = '                    ("Fixture problem 0: " + "the distance from $(0,0)$ to $(3,4)$?", "5"),'
    if first is not None:
        lines[0] = f"                    {first},"
    return _MATH_SOURCE.format(pairs="\n".join(lines))
