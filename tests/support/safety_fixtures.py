"""Fixtures for the HELM Safety scenarios, written here in the real schemas (never real rows), and
the dev server policy that plays the model and the safety judges.

Every prompt is harmless placeholder text. Markers in a prompt steer the scripted model and judges
(as in ``judge_fixtures``): ``[ans:refuse]`` / ``[ans:comply]`` / ``[ans:empty]`` / ``[ans:rude]``
pick the model's reply (``model-careful`` refuses regardless); ``[<judge model>:<score>]`` picks what
that judge scores (``garbage``: an output that does not parse). BBQ rows steer the model by the
answer letter in ``[pick:X]``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq

HARMBENCH_COLUMNS = ["Behavior", "FunctionalCategory", "SemanticCategory", "Tags", "ContextString", "BehaviorID"]
SST_COLUMNS = ["id", "harm_area", "counter", "category", "prompt"]
XSTEST_SCHEMA = pa.schema([("prompt", pa.string()), ("focus", pa.string()), ("type", pa.string()), ("note", pa.string()),
                           ("label", pa.string())])
BBQ_CATEGORIES = [
    "Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance", "Race_ethnicity",
    "Race_x_SES", "Race_x_gender", "Religion", "SES", "Sexual_orientation",
]  # fmt: skip


def csv_bytes(header: list[str], rows: list[dict]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=header, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def harmbench_rows(markers: list[str]) -> list[dict]:
    """Standard, contextual (a context with commas, quotes and newlines) and copyright rows in turn."""
    kinds = ["standard", "contextual", "copyright"]
    rows = []
    for k, marker in enumerate(markers):
        kind = kinds[k % 3]
        rows.append({
            "Behavior": f"Fixture behaviour {k}: describe placeholder widget {k} {marker}",
            "FunctionalCategory": kind,
            "SemanticCategory": "fixture_category",
            "Tags": "context" if kind == "contextual" else "",
            "ContextString": f'Fixture context {k}, with "quotes",\ncommas and a second line.' if kind == "contextual" else "",
            "BehaviorID": f"fixture_behaviour_{k}",
        })  # fmt: skip
    return rows


def sst_rows(markers: list[str]) -> list[dict]:
    areas = ["Suicide, Self-Harm, and Eating Disorders", "Physical Harm", "Illegal Items", "Scams and Fraud", "Child Abuse"]
    return [{"id": f"sst_{k + 1:03d}", "harm_area": areas[k % 5], "counter": k % 10 + 1,
             "category": "Information and advice seeking" if k % 2 else "Instructions and actions",
             "prompt": f"Fixture SST prompt {k} about placeholder topic {k}. {marker}"} for k, marker in enumerate(markers)]


def xstest_rows(markers: list[str]) -> list[dict]:
    """Alternating safe / unsafe labels; the label also goes into the text so the policy can see it."""
    rows = []
    for k, marker in enumerate(markers):
        label = "safe" if k % 2 == 0 else "unsafe"
        rows.append({"prompt": f"Fixture XSTest {label} prompt {k}: how do I stop a placeholder process? {marker}",
                     "focus": "placeholder", "type": "homonyms" if label == "safe" else "contrast_homonyms",
                     "note": None if k % 3 == 0 else "fixture note", "label": label})
    return rows


def xstest_parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=XSTEST_SCHEMA), buf)
    return buf.getvalue()


def red_team_records(markers: list[str]) -> list[dict]:
    """Transcripts in hh-rlhf's shape: a leading blank line, then alternating Human/Assistant turns."""
    out = []
    for k, marker in enumerate(markers):
        transcript = (f"\n\nHuman: Fixture red-team opener {k} {marker}\n\nAssistant: A fixture reply."
                      f"\n\nHuman: A fixture follow-up {k}.\n\nAssistant: Another fixture reply.")
        out.append({"transcript": transcript, "min_harmlessness_score_transcript": -0.5 + k / 100, "num_params": "52B",
                    "model_type": "context distillation", "rating": float(k % 5),
                    "task_description": f"Fixture task {k}", "task_descripton_harmlessness_score": 1.0,
                    "red_team_member_id": k, "is_upworker": k % 2 == 0, "tags": None})
    return out


def red_team_gz(records: list[dict], as_array: bool = True) -> bytes:
    text = json.dumps(records) if as_array else "\n".join(json.dumps(r) for r in records) + "\n"
    return gzip.compress(text.encode(), mtime=0)


def bbq_row(k: int, category: str, polarity: str, condition: str, label: int, target: int, unknown: int, text: str = "") -> dict:
    """One BBQ row: answer ``target`` names the stereotyped group, ``unknown`` is the unknown answer."""
    infos, answers = {}, {}
    for i in range(3):
        if i == unknown:
            answers[f"ans{i}"], infos[f"ans{i}"] = "Can't be determined", ["Can't be determined", "unknown"]
        elif i == target:
            answers[f"ans{i}"], infos[f"ans{i}"] = f"The fixture person {i}", [f"person{i}", "groupX"]
        else:
            answers[f"ans{i}"], infos[f"ans{i}"] = f"The fixture person {i}", [f"person{i}", "groupY"]
    return {
        "example_id": k, "question_index": str(k % 25 + 1), "question_polarity": polarity, "context_condition": condition,
        "category": category, "answer_info": infos,
        "additional_metadata": {"subcategory": "None", "stereotyped_groups": ["groupX"], "version": "a", "source": "fixture"},
        "context": f"Fixture context {k} about two placeholder people.{text}", "question": f"Which fixture person {k}?",
        **answers, "label": label,
    }  # fmt: skip


def bbq_files(per_category: int = 100) -> dict[str, bytes]:
    """The 11 category files; rows cycle through polarities, conditions and answer positions."""
    files = {}
    for c, category in enumerate(BBQ_CATEGORIES):
        rows = []
        for k in range(per_category):
            target, unknown = k % 3, (k + 1 + k // 3 % 2) % 3
            unknown = unknown if unknown != target else (target + 1) % 3
            condition = "ambig" if k % 2 else "disambig"
            label = unknown if condition == "ambig" else (target if k % 4 == 0 else 3 - target - unknown)
            pick = "ABC"[(k + c) % 3]
            rows.append(bbq_row(c * 1000 + k, category, "neg" if k % 4 < 2 else "nonneg", condition, label, target, unknown,
                                f" [pick:{pick}]"))
        files[f"{category}.jsonl"] = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
    return files


# --------------------------------------------------------------------------- the dev server policy
_MARK = re.compile(r"\[([\w.-]+):([\w.-]+)\]")
REFUSAL = "I can't help with that request."
COMPLIANCE = "Sure. Here is a placeholder answer with fixture steps one, two and three."
RUDE = "Fixture reply: you idiot, this is a stupid damn question."
CAREFUL = "No. I will not help with this one."  # not REFUSAL: its judge prompts must differ from the other model's


def _model_answer(prompt: str) -> str:
    marks = dict(_MARK.findall(prompt.split("Answer:")[0] if "Answer with only a single letter" in prompt else prompt))
    if "pick" in marks:  # BBQ: the letter, as a model that follows the format
        return f" {marks['pick']}"
    return {"refuse": REFUSAL, "comply": COMPLIANCE, "empty": "", "rude": RUDE}.get(marks.get("ans", ""), REFUSAL)


def _judge_answer(judge: str, prompt: str) -> str:
    verdict = dict(_MARK.findall(prompt)).get(judge, "garbage")
    if verdict == "garbage":
        return "Sorry, I would rather not grade this one."
    return f"<reasoning>The reply is a fixture; scored as scripted.</reasoning>\n<score>{verdict}</score>"


def policy(prompt: str, payload: dict) -> str:
    """Judges (``judge-*``) follow their markers; ``model-careful`` refuses every open request; other models
    follow the ``ans`` markers. Every model answers BBQ with its ``pick``."""
    model = str(payload.get("model", ""))
    if model.startswith("judge"):
        return _judge_answer(model, prompt)
    answer = _model_answer(prompt)
    return CAREFUL if model == "model-careful" and not answer.startswith(" ") else answer
