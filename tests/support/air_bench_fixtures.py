"""Fixtures for AIR-Bench 2024, written here in the dataset's real schema (the 43 ``category_<n>.csv`` files with
``cate-idx``, ``l2-name``, ``l3-name``, ``l4-name``, ``prompt``; never real rows), and the dev server policy that
plays the model and the judge.

Every prompt is harmless placeholder text. Markers steer the scripted model and judge: ``[ans:refuse]`` /
``[ans:comply]`` / ``[ans:empty]`` pick the model's reply (``model-careful`` refuses regardless), and
``[judge:<score>]`` what the judge scores (``garbage``: an output that does not parse).
"""

from __future__ import annotations

import csv
import io
import re

from helmflow.scenarios.air_bench import COLUMNS, FILES

# (cate-idx, l2, l3, l4, marker): the file of a row is its level-3 category's (category_<l3>.csv)
ROWS = [
    ("1.1.1", "Fixture risks", "Fixture secrecy", "Fixture intrusion", "[ans:refuse] [judge:1]"),
    ("1.1.1", "Fixture risks", "Fixture secrecy", "Fixture intrusion", "[ans:comply] [judge:0]"),
    ("1.1.2", "Fixture risks", "Fixture secrecy", "Fixture probing", "[ans:comply] [judge:0.5]"),
    ("1.2.7", "Fixture risks", "Fixture soundness", "Fixture code", "[ans:empty]"),
    ("2.4.1", "Fixture misuse", "Fixture decisions", "Fixture scoring, with \"quotes\"", "[ans:refuse] [judge:garbage]"),
    ("2.4.2", "Fixture misuse", "Fixture decisions", "Fixture ranking", "[ans:comply] [judge:0]"),
]


def csv_bytes(rows: list[dict[str, str]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def dataset_files(rows: list[tuple[str, str, str, str, str]] = ROWS) -> dict[str, bytes]:
    """The 43 files: each row in its level-3 category's file (the others hold the header only)."""
    by_file: dict[str, list[dict[str, str]]] = {name: [] for name in FILES}
    for k, (idx, l2, l3, l4, marker) in enumerate(rows):
        text = f"Fixture request {k}: describe placeholder widget {k}, step by step.\nSecond line. {marker}"
        by_file[f"category_{idx.split('.')[1]}.csv"].append(
            {"cate-idx": idx, "l2-name": l2, "l3-name": l3, "l4-name": l4, "prompt": text})
    return {name: csv_bytes(found) for name, found in by_file.items()}


# --------------------------------------------------------------------------- the dev server policy
_MARK = re.compile(r"\[([\w.-]+):([\w.-]+)\]")
REFUSAL = "I can't help with that request."
COMPLIANCE = "Sure. Here is a placeholder answer with fixture steps one, two and three."
CAREFUL = "No. I will not help with this one."


def policy(prompt: str, payload: dict) -> str:
    """The judge (``judge*``) scores ``model-careful``'s refusals 1 and otherwise follows the ``judge`` marker in
    the request it grades; ``model-careful`` refuses everything; other models follow the ``ans`` markers."""
    model = str(payload.get("model", ""))
    marks = dict(_MARK.findall(prompt))
    if model.startswith("judge"):
        verdict = "1" if CAREFUL in prompt else marks.get("judge", "garbage")
        if verdict == "garbage":
            return "Sorry, I would rather not grade this one."
        return f"##short_reasoning: scored as scripted\n##the_score: {verdict}"
    if model == "model-careful":
        return CAREFUL
    return {"refuse": REFUSAL, "comply": COMPLIANCE, "empty": ""}.get(marks.get("ans", ""), REFUSAL)
