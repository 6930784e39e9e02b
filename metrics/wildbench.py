"""WildBench's judge-backed score (HELM's ``WildBenchScoreMetric``): the judge template and its parser
(ours, in score mode), and the metric that reads the jury's verdicts.

Per instance: ``wildbench_score`` is the mean 1-10 score over the judges whose output parsed (an
empty model output was not sent and counts 1), and ``wildbench_score_rescaled`` = (score - 1) / 9,
the main metric in [0, 1]. Without a parsed verdict (no judge, ``--no-judge``, or only annotation
errors) both are missing, never 0. ``wildbench_judges_parsed`` / ``wildbench_judge_errors`` count
the verdicts, so unparsable outputs show in the run summary.
"""

from __future__ import annotations

import json
import re
from typing import Any

from helmflow.errors import MetricError
from helmflow.judges import TEMPLATES, JudgeParseError, JudgeTemplate, Verdict, jury_metric
from helmflow.metrics import metric
from helmflow.records import Instance

WILDBENCH_TEXT = """\
You are an expert evaluator of AI assistants. Rate how well the response below answers the user's \
latest message in a real conversation.

# Conversation before the latest message
<history>
{$history}
</history>

# The user's latest message
<query>
{$user_query}
</query>

# The response to rate
<response>
{$model_output}
</response>

# Checklist
Questions that a good response to this query should satisfy. Use them as a guide to what matters, \
not as a scoring formula:
{$checklist}

# How to rate
First write a short analysis: check the response against the query and the checklist, and note \
what it does well and where it falls short (errors, omissions, irrelevant or unsafe content, poor \
structure). Then give one overall score from 1 to 10:
- 1-2: very poor: irrelevant, wrong or harmful, or ignores the query
- 3-4: poor: misses important parts of the query or has serious errors
- 5-6: fair: addresses the query, with notable gaps or mistakes
- 7-8: good: correct and helpful, with minor room for improvement
- 9-10: excellent: fully answers the query, accurate and well presented

End your reply with a JSON object in exactly this form:
{"strengths": "<what the response does well>", "weaknesses": "<what it does poorly>", "score": <1 to 10>}
"""

_WB_FIELDS = re.compile(
    r'"strengths"\s*:\s*"(.*?)"\s*,\s*"weaknesses"\s*:\s*"(.*?)"\s*,'
    r'\s*"score"\s*:\s*("[^"]*"|-?\d+(?:\.\d+)?)', re.DOTALL
)


def wildbench_fields(instance: Instance, output: str) -> dict[str, str]:
    messages = instance.input.messages or []
    checklist = instance.extra.get("checklist")
    if not messages or messages[-1].role != "user" or not isinstance(checklist, list):
        raise MetricError(
            f"judge template 'wildbench' needs a chat instance ending in a user turn with extra['checklist'] "
            f"(the wildbench scenario); instance {instance.id!r} is not one"
        )
    history = "\n\n".join(("USER: " if m.role == "user" else "ASSISTANT: ") + m.content for m in messages[:-1])
    return {
        "history": history,
        "user_query": messages[-1].content,
        "model_output": output,
        "checklist": "\n".join(f"- {item}" for item in checklist),
    }


def _json_objects(text: str) -> list[dict[str, Any]]:
    """The flat JSON objects in a text that have all three WildBench keys, in order of appearance."""
    out = []
    for match in re.finditer(r"\{[^{}]*\}", text):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(obj, dict) and {"strengths", "weaknesses", "score"} <= set(obj):
            out.append(obj)
    return out


def parse_wildbench(text: str) -> Verdict:
    """The last ``{"strengths", "weaknesses", "score"}`` the judge wrote; the score must be 1-10.

    HELM's pattern first (keys in the asked order; tolerates unescaped quotes in the prose), then any
    JSON object with the three keys (another key order)."""
    found = list(_WB_FIELDS.finditer(text))
    if found:
        strengths, weaknesses, raw = found[-1].groups()
    elif objects := _json_objects(text):
        strengths, weaknesses, raw = (str(objects[-1][k]) for k in ("strengths", "weaknesses", "score"))
    else:
        raise JudgeParseError('no {"strengths": ..., "weaknesses": ..., "score": ...} object in the judge output')
    try:
        score = float(raw.strip().strip('"'))
    except ValueError:
        raise JudgeParseError(f"score {raw!r} is not a number") from None
    if not 1 <= score <= 10:
        raise JudgeParseError(f"score {score:g} is outside 1-10")
    return Verdict(score, {"strengths": strengths.strip(), "weaknesses": weaknesses.strip()})


TEMPLATES.add(
    "wildbench",
    JudgeTemplate(
        name="wildbench",
        version="1",
        text=WILDBENCH_TEXT,
        fields=wildbench_fields,
        parse=parse_wildbench,
        on_empty=Verdict(1.0, {"strengths": "N/A", "weaknesses": "The model output is empty."}),
        max_tokens=2000,
    ),
)


wildbench = metric("wildbench", version="1", judge="wildbench")(
    jury_metric("wildbench", lambda score: {"wildbench_score": score, "wildbench_score_rescaled": (score - 1) / 9})
)
