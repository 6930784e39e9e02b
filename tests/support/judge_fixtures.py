"""Fixtures for the judged scenarios, written here in the real schemas (never real rows), and the dev
server policy that plays both the model and the judges.

Markers in a task's text steer the scripted model and judges: ``[ans:right]`` / ``[ans:wrong]`` /
``[ans:empty]`` pick the model's answer; ``[<judge model>:<verdict>]`` picks what that judge says
(a WildBench score, TRUE/FALSE for Omni-MATH, or ``garbage``: an output that does not parse).
"""

from __future__ import annotations

import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq

WILDBENCH_REV = "7c05c1b4550282b2ed6a2e6ac5db069f1e07df5c"
WILDBENCH_FILE = "test-00000-of-00001.parquet"
OMNI_REV = "40ba231d8f16e29ecd40e6407e2c8640145a8f62"
OMNI_FILE = "test.jsonl"

_TURN = pa.struct([("content", pa.string()), ("language", pa.string()), ("redacted", pa.bool_()),
                   ("role", pa.string()), ("timestamp", pa.string()), ("toxic", pa.bool_())])
WILDBENCH_SCHEMA = pa.schema([
    ("id", pa.string()), ("session_id", pa.string()), ("conversation_input", pa.list_(_TURN)),
    ("references", pa.struct([("gpt-4", pa.string())])), ("length", pa.int64()), ("checklist", pa.list_(pa.string())),
    ("intent", pa.string()), ("primary_tag", pa.string()), ("secondary_tags", pa.list_(pa.string())),
])  # fmt: skip


def _turn(role: str, content: str) -> dict:
    return {"content": content, "language": "English", "redacted": False, "role": role,
            "timestamp": "2026-01-01T00:00:00", "toxic": False}


def wildbench_rows(markers: list[str]) -> list[dict]:
    """One task per marker string; every third task has an earlier exchange (multi-turn history)."""
    rows = []
    for k, marker in enumerate(markers):
        turns = [_turn("user", f"Fixture warm-up question {k}?"), _turn("assistant", f"Fixture warm-up answer {k}.")] if k % 3 == 0 else []
        turns.append(_turn("user", f"Fixture task {k}: write two sentences about topic {k}. {marker}"))
        rows.append({
            "id": f"wb-fixture-{k}", "session_id": f"session-{k:04d}", "conversation_input": turns,
            "references": {"gpt-4": f"fixture reference reply {k}"}, "length": len(turns),
            "checklist": [f"Does the reply cover topic {k}?", "Is it exactly two sentences?"],
            "intent": "Fixture intent", "primary_tag": "Creative Writing", "secondary_tags": ["Fixture"],
        })  # fmt: skip
    return rows


def wildbench_parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=WILDBENCH_SCHEMA), buf)
    from tests.support.capabilities_fixtures import writer_neutral

    return writer_neutral(buf.getvalue())


def omni_rows(markers: list[str]) -> list[dict]:
    """Problem k asks for 3k+1, with the answer written as LaTeX; markers steer model and judges."""
    rows = []
    for k, marker in enumerate(markers):
        answer = f"\\frac{{{2 * (3 * k + 1)}}}{{2}}" if k % 4 == 1 else str(3 * k + 1)  # some as unreduced fractions
        rows.append({"domain": ["Mathematics -> Algebra -> Fixture"], "difficulty": 1.0 + k % 9,
                     "problem": f"Fixture problem {k}: what is 3 times {k} plus 1? {marker}",
                     "solution": f"Compute 3*{k}+1.", "answer": answer, "source": "fixture"})
    return rows


def omni_jsonl(rows: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


# --------------------------------------------------------------------------- the dev server policy
_MARK = re.compile(r"\[([\w.-]+):([\w.-]+)\]")


def _markers(text: str) -> dict[str, str]:
    return dict(_MARK.findall(text))


def _model_answer(prompt: str) -> str:
    marks = _markers(prompt)
    if "ans" not in marks:
        return prompt.strip().splitlines()[-1] if prompt.strip() else ""  # echo for the other scenarios
    found = re.search(r"what is 3 times (\d+) plus 1", prompt)
    if marks["ans"] == "empty":
        return ""
    if found:  # Omni-MATH
        value = 3 * int(found.group(1)) + 1
        return f"Reasoning: multiply, then add one. The answer is \\boxed{{{value if marks['ans'] == 'right' else value + 5}}}."
    return "First fixture sentence. Second fixture sentence."


def _judge_answer(judge: str, prompt: str) -> str:
    verdict = _markers(prompt).get(judge, "garbage")
    if verdict == "garbage":
        return "I cannot decide; here is some prose without the requested format."
    if "## Equivalence Judgement" in prompt:
        return f"## Student Final Answer\nsee above\n\n## Justification\nCompared with the reference.\n\n## Equivalence Judgement\n{verdict}"
    return f'Analysis: fine.\n{{"strengths": "clear", "weaknesses": "short", "score": {verdict}}}'


def policy(prompt: str, payload: dict) -> str:
    model = str(payload.get("model", ""))
    return _judge_answer(model, prompt) if model.startswith("judge") else _model_answer(prompt)
