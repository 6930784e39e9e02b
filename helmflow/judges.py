"""LLM judges: a judge is a deployment, a template (ours, with a declared VERSION) and its parser.

Judges are configuration, chosen per run (``--judge a,b,c`` or the board's ``judges:``), never
hard-coded: HELM's were, and retiring one silently changed its published scores. The judge
deployment names, their model versions and the template VERSIONs are part of metric_version, so a
new jury re-scores (and gets a new run id) without ever re-querying the model.

Judge requests are ordinary requests: :func:`annotate` sends them with
:func:`helmflow.query.run_queries`, so they share the deployment's limiter, retries, the journal
(re-scoring after a crash re-sends nothing already judged) and the run's ``--budget-usd``.

A judge output that does not parse is an annotation with ``error`` set and no score: counted and
shown, never a crash and never a zero. A jury's score is the mean over the judges whose output
parsed (:func:`jury_scores`); an empty model output is not sent and gets the template's fixed verdict.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from helmflow import versions
from helmflow.records import Annotation, Completion, Deployment, Instance, Request, RequestBody
from helmflow.registry import Registry


class JudgeParseError(ValueError):
    """A judge's output that does not have the shape its template asks for."""


class JudgeFailed(RuntimeError):
    """Judging a run could not go on: a permanent judge error, or more failed requests than allowed."""


@dataclass(frozen=True)
class Verdict:
    score: float
    details: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeTemplate:
    """How one benchmark is judged: the prompt (written by us), its VERSION, and the parser."""

    name: str
    version: str
    text: str  # with {$field} placeholders, filled in one pass
    fields: Callable[[Instance, str], dict[str, str]]  # (instance, model output) -> placeholder values
    parse: Callable[[str], Verdict]  # raises JudgeParseError
    on_empty: Verdict  # the verdict for an empty model output, which is not sent
    max_tokens: int
    temperature: float = 0.0

    def render(self, instance: Instance, output: str) -> str:
        values = self.fields(instance, output)
        return re.sub(r"\{\$(\w+)\}", lambda m: values[m.group(1)], self.text)


TEMPLATES: Registry[JudgeTemplate] = Registry("judge template")


def template_versions(names: list[str]) -> dict[str, str]:
    return {n: TEMPLATES.get(n).version for n in sorted(set(names))}


def judges_version(judges: list[Deployment], templates: dict[str, str]) -> dict[str, str]:
    """What metric_version records per judge: its model version and the templates it applies."""
    return {
        j.name: versions.canonical_json({"model_version": versions.model_version(j), "templates": templates})
        for j in judges
    }


# --------------------------------------------------------------------------- WildBench (score mode)
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
    r'"strengths"\s*:\s*"(.*?)"\s*,\s*"weaknesses"\s*:\s*"(.*?)"\s*,\s*"score"\s*:\s*("[^"]*"|-?\d+(?:\.\d+)?)', re.DOTALL
)


def wildbench_fields(instance: Instance, output: str) -> dict[str, str]:
    messages = instance.input.messages or []
    checklist = instance.extra.get("checklist")
    if not messages or messages[-1].role != "user" or not isinstance(checklist, list):
        raise ValueError(
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


# --------------------------------------------------------------------------- Omni-MATH (equivalence)
OMNI_MATH_TEXT = """\
You are a mathematics teacher grading a student's answer to a competition problem. You are given \
the problem, the reference answer (which is correct) and the student's solution. Decide only \
whether the student's final answer is mathematically equivalent to the reference answer.

- The student's final answer is the content of the last \\boxed{} in the solution; if there is \
none, it is the answer the solution clearly commits to at the end.
- Equivalent forms are equal: equal algebraic expressions, an exact decimal for a fraction, other \
LaTeX notation for the same object, the elements of an unordered set in another order.
- Judge the final answer, not the reasoning. An approximation of an exact answer, an incomplete \
answer (for example, some solutions missing) or an answer with any mistake is not equivalent. No \
final answer is not equivalent.

# Problem
{$problem}

# Reference answer
{$reference_answer}

# Student's solution
{$solution}

Reply in Markdown with exactly these three sections, in this order:

## Student Final Answer
<the student's final answer, copied on one line>

## Justification
<a short comparison with the reference answer>

## Equivalence Judgement
<TRUE or FALSE>
"""


def omni_math_fields(instance: Instance, output: str) -> dict[str, str]:
    refs = instance.correct_references
    if instance.input.text is None or not refs:
        raise ValueError(
            f"judge template 'omni_math' needs a text problem with a correct reference answer (the omni_math "
            f"scenario); instance {instance.id!r} is not one"
        )
    return {"problem": instance.input.text, "reference_answer": refs[0].text, "solution": output}


def _sections(text: str) -> dict[str, str]:
    """Markdown ``## Title`` sections: title -> the line after it (Justification: its whole body)."""
    out: dict[str, str] = {}
    for part in text.split("## ")[1:]:
        lines = part.strip().split("\n")
        title = lines[0].strip()
        out[title] = "\n".join(lines[1:]).strip() if title == "Justification" else (lines[1].strip() if len(lines) > 1 else "")
    return out


def parse_omni_math(text: str) -> Verdict:
    """``## Equivalence Judgement`` must be TRUE or FALSE (any case); the score is 1.0 or 0.0."""
    sections = _sections(text)
    if "Equivalence Judgement" not in sections:
        raise JudgeParseError("no '## Equivalence Judgement' section in the judge output")
    judgement = sections["Equivalence Judgement"].strip().upper()
    if judgement not in ("TRUE", "FALSE"):
        raise JudgeParseError(f"Equivalence Judgement is {sections['Equivalence Judgement'][:40]!r}, not TRUE or FALSE")
    details = {
        "student_final_answer": sections.get("Student Final Answer", ""),
        "justification": sections.get("Justification", ""),
        "equivalence_judgement": judgement,
    }
    return Verdict(1.0 if judgement == "TRUE" else 0.0, details)


TEMPLATES.add(
    "omni_math",
    JudgeTemplate(
        name="omni_math",
        version="1",
        text=OMNI_MATH_TEXT,
        fields=omni_math_fields,
        parse=parse_omni_math,
        on_empty=Verdict(0.0, {"equivalence_judgement": "FALSE", "justification": "The model output is empty."}),
        max_tokens=4096,
    ),
)


# --------------------------------------------------------------------------- judging a run
REQUEST_FAILED = "judge request failed"  # transport/provider error after retries: re-sent on the next run
UNPARSABLE = "unparsable judge output"  # the judge answered, but not in the template's shape
@dataclass
class Judged:
    annotations: list[Annotation]
    sent: int = 0
    reused: int = 0
    request_errors: int = 0
    parse_errors: int = 0
    cost_usd: float = 0.0  # of what was judged now and before (the annotations' costs)


def judge_request(judge: Deployment, template: JudgeTemplate, prompt: str) -> RequestBody:
    max_tokens = min(template.max_tokens, judge.max_output_tokens or template.max_tokens)
    return RequestBody(model=judge.model, prompt=prompt, max_tokens=max_tokens, temperature=template.temperature)


def annotate(
    store: Any,
    judges: list[Deployment],
    template_names: list[str],
    instances: list[Instance],
    requests: list[Request],
    completions: list[Completion],
    budget: Any = None,
) -> Judged:
    """Every judge's verdict on every successful completion, for each template (in a stable order).

    The judges of a jury are asked at the same time (each through its own limiter and journal)."""
    from helmflow.journal import request_hash
    from helmflow.query import run_queries

    by_id = {i.id: i for i in instances}
    judged = [(r, c) for r, c in zip(requests, completions, strict=True) if c.ok]
    out = Judged(annotations=[])
    for name in sorted(set(template_names)):
        template = TEMPLATES.get(name)
        prompts = {r.request_hash: template.render(by_id[r.instance_id], c.text) for r, c in judged if c.text.strip()}

        def ask(judge: Deployment, template: JudgeTemplate = template, prompts: dict[str, str] = prompts):
            calls: dict[str, Request] = {}
            for r, _ in judged:
                if r.request_hash in prompts and r.request_hash not in calls:
                    body = judge_request(judge, template, prompts[r.request_hash])
                    calls[r.request_hash] = Request(request_hash=request_hash(body, 0), instance_id=r.instance_id,
                                                    split=r.split, body=body)
            return calls, run_queries(store, judge, list(calls.values()), None, budget)

        with ThreadPoolExecutor(max_workers=max(len(judges), 1), thread_name_prefix="judge") as pool:
            results = list(pool.map(ask, judges))
        for judge, (calls, result) in zip(judges, results, strict=True):
            if result.permanent_error:
                raise JudgeFailed(f"judge {judge.name!r}: {result.permanent_error}")
            if calls and result.errors / len(calls) > judge.max_error_rate:
                raise JudgeFailed(
                    f"judge {judge.name!r}: {result.errors} of {len(calls)} judge requests failed (max_error_rate "
                    f"{judge.max_error_rate:g}); first errors: {'; '.join(result.error_messages[:3])}"
                )
            answers = dict(zip(calls, result.completions, strict=True))
            out.sent += result.sent
            out.reused += result.reused
            for r, _ in judged:
                out.annotations.append(_annotation(judge, template, r, calls.get(r.request_hash), answers.get(r.request_hash)))
    out.request_errors = sum(1 for a in out.annotations if a.error and a.error.startswith(REQUEST_FAILED))
    out.parse_errors = sum(1 for a in out.annotations if a.error and a.error.startswith(UNPARSABLE))
    out.cost_usd = sum(a.cost_usd for a in out.annotations)
    return out


def worst_case(judge: Deployment, template_name: str, instances: dict[str, Instance],
               requests: list[Request]) -> tuple[int, int, int]:
    """(requests, prompt tokens, output tokens) at most, judging every request's output: the prompt with
    an empty output plus the model's whole ``max_tokens``, and the template's output budget."""
    from helmflow.tokenizers import get_tokenizer

    template = TEMPLATES.get(template_name)
    tok = get_tokenizer(judge.tokenizer)
    prompt_tokens = sum(tok.count(template.render(instances[r.instance_id], "")) + r.body.max_tokens for r in requests)
    return len(requests), prompt_tokens, len(requests) * judge_request(judge, template, "").max_tokens


def _annotation(judge: Deployment, template: JudgeTemplate, judged: Request, call: Request | None,
                answer: Completion | None) -> Annotation:
    base: dict[str, Any] = {
        "instance_id": judged.instance_id, "sample_index": judged.sample_index, "request_hash": judged.request_hash,
        "judge": judge.name, "template": template.name, "template_version": template.version,
    }
    if call is None or answer is None:  # an empty model output: the template's verdict, nothing sent
        v = template.on_empty
        return Annotation(**base, score=v.score, details_json=json.dumps(v.details, ensure_ascii=False))
    base.update(judge_request_hash=call.request_hash, prompt=call.body.prompt or "", prompt_tokens=answer.prompt_tokens,
                output_tokens=answer.output_tokens, cost_usd=answer.cost_usd, latency_s=answer.latency_s,
                raw_output=answer.text)
    if not answer.ok:
        return Annotation(**base, error=f"{REQUEST_FAILED}: {answer.error}")
    try:
        v = template.parse(answer.text)
    except JudgeParseError as exc:
        return Annotation(**base, error=f"{UNPARSABLE}: {exc}")
    return Annotation(**base, score=v.score, details_json=json.dumps(v.details, ensure_ascii=False))


def jury_scores(annotations: list[Annotation], template: str) -> dict[int, float]:
    """Sample index -> the mean score over the judges whose output parsed (samples with none are absent)."""
    scores: dict[int, list[float]] = defaultdict(list)
    for a in annotations:
        if a.template == template and a.score is not None:
            scores[a.sample_index].append(a.score)
    return {k: sum(v) / len(v) for k, v in sorted(scores.items())}


def judge_counts(annotations: list[Annotation], template: str) -> dict[str, float]:
    """Per-instance counts the run summary shows: verdicts that parsed, and annotation errors."""
    mine = [a for a in annotations if a.template == template]
    return {
        f"{template}_judges_parsed": float(sum(a.score is not None for a in mine)),
        f"{template}_judge_errors": float(sum(a.error is not None for a in mine)),
    }
