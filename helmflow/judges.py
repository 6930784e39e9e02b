"""LLM judges, the engine: a judge is a deployment, a template (ours, with a declared VERSION) and its parser.

A judged benchmark owns its template: the metric module that reads the verdicts (e.g.
``metrics/wildbench.py``) defines the :class:`JudgeTemplate`, registers it in :data:`TEMPLATES` and
builds its metric with :func:`jury_metric`. This module names no benchmark.

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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from helmflow import versions
from helmflow.errors import MetricError
from helmflow.records import Annotation, Completion, Deployment, Instance, Request, RequestBody
from helmflow.registry import Registry

if TYPE_CHECKING:  # the metrics package imports this module: no runtime import back
    from helmflow.metrics.base import MetricInput


class JudgeParseError(ValueError):
    """A judge's output that does not have the shape its template asks for."""


class JudgeFailed(RuntimeError):
    """Judging a run could not go on: a permanent judge error, or more failed requests than allowed."""


@dataclass(frozen=True)
class Verdict:
    score: float
    details: Mapping[str, str | float] = field(default_factory=dict)


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
    # True: an empty model output is sent like any other (HELM's critique asks its critic about every
    # response); ``on_empty`` is then never used
    send_empty: bool = False
    # Wording that depends on the instance (e.g. one rubric per category of a taxonomy), declared data like
    # ``text``: key -> text. ``key`` gives an instance's keys, most specific first; the first one declared fills
    # ``{$<keyed_field>}``. Each keyed text is a prompt key of its own (``judge.<name>.<key>``).
    keyed: Mapping[str, str] = field(default_factory=dict)
    keyed_field: str = ""
    key: Callable[[Instance], Sequence[str]] | None = None

    def render(self, instance: Instance, output: str) -> str:
        values = self.fields(instance, output)
        if self.keyed_field:
            values = {**values, self.keyed_field: self.keyed_text(instance)}
        return re.sub(r"\{\$(\w+)\}", lambda m: values[m.group(1)], self.text)

    def keyed_text(self, instance: Instance) -> str:
        """The keyed text for the instance: the first of its keys the template declares."""
        keys = list(self.key(instance)) if self.key else []
        for k in keys:
            if k in self.keyed:
                return self.keyed[k]
        raise MetricError(f"judge template {self.name!r} has no text for instance {instance.id!r} (its keys: "
                          f"{', '.join(keys) or 'none'}; declared: {', '.join(sorted(self.keyed)) or 'none'})")


TEMPLATES: Registry[JudgeTemplate] = Registry("judge template")


def template_versions(names: list[str]) -> dict[str, str]:
    return {n: TEMPLATES.get(n).version for n in sorted(set(names))}


def effective_template(name: str, texts: dict[str, str] | None = None) -> JudgeTemplate:
    """The registered template, or, when a board rewords it (``judge.<name>`` in its ``prompts:``, or a keyed
    text, ``judge.<name>.<key>``), the same template with those texts and their hash in its VERSION (what
    annotations record)."""
    from helmflow.prompts import judge_replacement, judge_version

    template = TEMPLATES.get(name)
    replaced = judge_replacement(name, texts or {})
    if replaced is None:
        return template
    own = {k: v for k, v in (texts or {}).items() if k.startswith(f"{name}.")}
    return replace(template, text=(texts or {}).get(name, template.text),
                   keyed={**template.keyed, **{k[len(name) + 1:]: v for k, v in own.items()}},
                   version=judge_version(template.version, replaced))


def judges_version(judges: list[Deployment], templates: dict[str, str]) -> dict[str, str]:
    """What metric_version records per judge: its model version and the templates it applies."""
    return {
        j.name: versions.canonical_json({"model_version": versions.model_version(j), "templates": templates})
        for j in judges
    }


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

    def merged(self, other: Judged) -> Judged:
        """Both sets of verdicts and their counts (the jury's and a board-wide metric scorer's)."""
        return Judged(self.annotations + other.annotations, self.sent + other.sent, self.reused + other.reused,
                      self.request_errors + other.request_errors, self.parse_errors + other.parse_errors,
                      self.cost_usd + other.cost_usd)


def judge_request(judge: Deployment, template: JudgeTemplate, prompt: str) -> RequestBody:
    """A judge that reasons gets its reasoning options and the raised budget (``increase_max_tokens``);
    any other judge's requests (and their hashes) are as they were."""
    return RequestBody(model=judge.model, prompt=prompt, max_tokens=judge.output_budget(template.max_tokens),
                       temperature=template.temperature, reasoning=judge.reasoning)


def annotate(
    store: Any,
    judges: list[Deployment],
    template_names: list[str],
    instances: list[Instance],
    requests: list[Request],
    completions: list[Completion],
    shared: Any = None,
    texts: dict[str, str] | None = None,
) -> Judged:
    """Every judge's verdict on every successful completion, for each template (in a stable order).

    ``texts``: a board's replacement wording per template name (its hash is in the template VERSION
    the run recorded). The judges of a jury are asked at the same time (each through its own limiter
    and journal)."""
    from helmflow.query import run_queries

    by_id = {i.id: i for i in instances}
    judged = [(r, c) for r, c in zip(requests, completions, strict=True) if c.ok]
    out = Judged(annotations=[])
    for name in sorted(set(template_names)):
        template = effective_template(name, texts)
        prompts = {r.request_hash: template.render(by_id[r.instance_id], c.text) for r, c in judged
                   if c.text.strip() or template.send_empty}

        def ask(judge: Deployment, template: JudgeTemplate = template, prompts: dict[str, str] = prompts):
            calls: dict[str, Request] = {}
            for r, _ in judged:
                if r.request_hash in prompts and r.request_hash not in calls:
                    body = judge_request(judge, template, prompts[r.request_hash])
                    calls[r.request_hash] = Request(request_hash=versions.request_hash(body, 0),
                                                    instance_id=r.instance_id, split=r.split, body=body)
            return calls, run_queries(store, judge, list(calls.values()), None, shared)

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
                out.annotations.append(_annotation(judge, template, r, calls.get(r.request_hash),
                                                   answers.get(r.request_hash)))
    out.request_errors = sum(1 for a in out.annotations if a.error and a.error.startswith(REQUEST_FAILED))
    out.parse_errors = sum(1 for a in out.annotations if a.error and a.error.startswith(UNPARSABLE))
    out.cost_usd = sum(a.cost_usd for a in out.annotations)
    return out


def worst_case(judge: Deployment, template_name: str, instances: dict[str, Instance],
               requests: list[Request], texts: dict[str, str] | None = None) -> tuple[int, int, int]:
    """(requests, prompt tokens, output tokens) at most, judging every request's output: the prompt with
    an empty output plus the model's whole ``max_tokens``, and the template's output budget."""
    from helmflow.tokenizers import get_tokenizer

    template = effective_template(template_name, texts)
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
                raw_output=answer.text, reasoning=answer.reasoning, reasoning_tokens=answer.reasoning_tokens)
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


def jury_metric(template: str, stats: Callable[[float], dict[str, float]]) -> Callable[[MetricInput], dict[str, float]]:
    """The body of a judge-backed metric: the verdict counts, plus ``stats(mean)`` of the jury's mean
    score over the instance's samples. Without a parsed verdict (no judge, ``--no-judge``, only
    annotation errors) the score stats are missing, never 0."""

    def fn(x: MetricInput) -> dict[str, float]:
        if not x.annotations:
            return {}
        out = judge_counts(x.annotations, template)
        samples = list(jury_scores(x.annotations, template).values())
        if samples:
            out.update(stats(sum(samples) / len(samples)))
        return out

    return fn
