"""MedHELM's LLM jury (HELM's ``LLMAsJuryAnnotator`` + ``LLMJuryMetric``): each judge rates the reply on
three criteria, 1 to 5, each with a short justification, written as one JSON object
``{criterion: {"score": n, "explanation": "..."}}``.

The parser is HELM's, quirks included:

- the JSON is the text from the first ``{`` to the last ``}`` (the whole reply when there is none);
- when ``json.loads`` fails with "Expecting ',' delimiter", one ``}`` is appended and it is tried once more
  (HELM's only repair: a judge that stopped before closing the object);
- every criterion must be present with both ``score`` and ``explanation``, else the judge is dropped
  (an annotation error, counted);
- HELM's metric takes ``int(score)`` of every entry of the object that has a score (a criterion it did not
  ask for counts too), so a score of 4.7 counts 4. A score that ``int()`` refuses is unparsable here (HELM
  would crash the run).

Score per instance (``<scenario>_accuracy``): the mean of every criterion score of every judge whose reply
parsed, pooled (not averaged per judge first). With annotations but no parsed judge (every reply
unparsable, or an empty model output, which is not sent) it is the task's default, as in HELM: 1.0 (every
MedHELM spec function passes ``default_score=1.0``; the metric class's own default, 0.0, is never used).
Without annotations (``--no-judge``) it is missing.

Each judged scenario has its own template (ours, versioned: ``judge.<scenario>`` in a board's
``prompts:`` replaces its wording); the judge deployments and the template VERSIONs are in metric_version.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from helmflow.judges import TEMPLATES, JudgeParseError, JudgeTemplate, Verdict, judge_counts
from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput
from helmflow.records import Instance

JURY_VERSION = "2"  # 2: the default when no judge parsed is 1.0, as every MedHELM spec sets it
JUDGE_MAX_TOKENS = 4096  # HELM: temperature 0, 4096 tokens per judge request
DEFAULT_CRITERIA = ("accuracy", "completeness", "clarity")
EMPTY_OUTPUT = "The model output is empty; it was not sent to the judges."

_CRITERION_TEXT = {
    "accuracy": "Is the response medically correct and consistent with the reference answer?",
    "completeness": "Does the response cover everything the question needs, as the reference answer does?",
    "clarity": "Is the response clear and easy for the intended reader to follow?",
    "structure": "Is the response organised the way the task asks?",
}


def jury_text(role: str, question_label: str, criteria: tuple[str, ...] = DEFAULT_CRITERIA) -> str:
    """Our judge wording for one scenario: the expert's role, the question, the reply, the reference, the
    criteria on a 1-5 scale and the JSON reply shape HELM's parser reads."""
    rubric = "\n".join(f"- {c}: {_CRITERION_TEXT[c]}" for c in criteria)
    shape = ", ".join(f'"{c}": {{"score": <1-5>, "explanation": "<one sentence>"}}' for c in criteria)
    return (
        f"You are {role}. Rate the response below against the reference answer.\n\n"
        f"<{question_label}>\n{{$question}}\n</{question_label}>\n\n"
        "<response>\n{$response}\n</response>\n\n"
        "<reference>\n{$gold_response}\n</reference>\n\n"
        f"Rate each criterion with a whole number from 1 (very poor) to 5 (excellent) and justify it in one short "
        f"sentence:\n{rubric}\n\n"
        "Reply with one JSON object and nothing else, escaping any double quotes inside the explanations:\n"
        f"{{{shape}}}\n"
    )


def jury_fields(instance: Instance, output: str) -> dict[str, str]:
    """HELM's substitution: the input text, the first completion, the first reference (empty when none)."""
    return {
        "question": instance.input.text or "",
        "response": output,
        "gold_response": instance.references[0].text if instance.references else "",
    }


def helm_json(text: str) -> Any:
    """HELM's extraction and its one repair (see the module docstring)."""
    found = re.search(r"\{.*\}", text, re.DOTALL)
    candidate = found.group(0) if found else text
    try:
        return json.loads(candidate)
    except json.JSONDecodeError as exc:
        if exc.msg != "Expecting ',' delimiter":
            raise JudgeParseError(f"not JSON: {exc.msg}") from None
    try:
        return json.loads(candidate + "}")
    except json.JSONDecodeError as exc:
        raise JudgeParseError(f"not JSON after adding a closing brace: {exc.msg}") from None


def parse_jury(text: str, criteria: tuple[str, ...] = DEFAULT_CRITERIA) -> Verdict:
    """One judge's verdict: details ``<key>_score`` (int, as HELM counts it) and ``<key>_explanation`` for
    every entry that has a score; ``score`` is their mean (what the run page shows per judge)."""
    obj = helm_json(text)
    if not isinstance(obj, dict):
        raise JudgeParseError("the JSON is not an object")
    for c in criteria:
        entry = obj.get(c)
        if not isinstance(entry, dict) or "score" not in entry or "explanation" not in entry:
            raise JudgeParseError(f"criterion {c!r} has no score and explanation")
    details: dict[str, str | float] = {}
    for key, entry in obj.items():
        if isinstance(entry, dict) and "score" in entry:
            try:
                details[f"{key}_score"] = float(int(entry["score"]))
            except (TypeError, ValueError):
                raise JudgeParseError(f"{key} score {entry['score']!r} is not an integer") from None
            details[f"{key}_explanation"] = str(entry.get("explanation", ""))
    scores = [v for k, v in details.items() if k.endswith("_score") and isinstance(v, float)]
    return Verdict(sum(scores) / len(scores), details)


def pooled_scores(x: MetricInput, template: str) -> dict[int, list[float]]:
    """Sample index -> every criterion score of every judge that parsed."""
    out: dict[int, list[float]] = {}
    for a in x.annotations:
        if a.template != template or a.score is None:
            continue
        details = json.loads(a.details_json)
        out.setdefault(a.sample_index, []).extend(
            float(v) for k, v in details.items() if k.endswith("_score") and isinstance(v, int | float)
        )
    return out


@dataclass(frozen=True)
class JuryTask:
    scenario: str
    role: str
    question_label: str
    default_score: float = 1.0  # what every MedHELM jury spec function of HELM 0.5.16 sets
    criteria: tuple[str, ...] = DEFAULT_CRITERIA

    @property
    def stat(self) -> str:
        return f"{self.scenario}_accuracy"


def jury_stats(x: MetricInput, task: JuryTask) -> dict[str, float]:
    if not x.annotations:
        return {}
    out = judge_counts(x.annotations, task.scenario)
    pooled = pooled_scores(x, task.scenario)
    samples = [sum(v) / len(v) if v else task.default_score for v in pooled.values()]
    out[task.stat] = sum(samples) / len(samples) if samples else task.default_score
    return out


def register(task: JuryTask) -> None:
    """The scenario's judge template and its ``<scenario>_accuracy`` metric (same name as the template)."""
    criteria = task.criteria
    TEMPLATES.add(task.scenario, JudgeTemplate(
        name=task.scenario, version=JURY_VERSION, text=jury_text(task.role, task.question_label, criteria),
        fields=jury_fields,
        parse=lambda text: parse_jury(text, criteria), on_empty=Verdict(task.default_score, {"note": EMPTY_OUTPUT}),
        max_tokens=JUDGE_MAX_TOKENS,
    ))
    metric(task.stat, version=JURY_VERSION, judge=task.scenario)(lambda x: jury_stats(x, task))


JURY_TASKS = [
    JuryTask("medication_qa", "a pharmacist answering consumers' questions about their medicines", "question"),
    JuryTask("med_dialog", "a physician reviewing summaries of patient-doctor conversations", "conversation"),
    JuryTask("medi_qa", "a physician answering consumers' health questions", "question"),
    JuryTask("mtsamples_replicate", "a physician reviewing treatment plans written from medical reports",
             "patient_information"),
    JuryTask("mtsamples_procedures", "a physician reviewing treatment plans written from procedure notes",
             "patient_notes"),
    JuryTask("mimic_bhc", "a physician reviewing brief hospital courses written from discharge notes", "clinical_note"),
    JuryTask("dischargeme", "a physician reviewing hospital courses and discharge instructions written from notes",
             "discharge_text"),
    JuryTask("chw_care_plan", "a physician reviewing care plan fields taken from clinical notes", "clinical_note"),
    JuryTask("starr_patient_instructions", "a surgeon reviewing post-procedure instructions written for patients",
             "case_details"),
    JuryTask("mental_health", "a clinical psychologist reviewing counsellors' replies in conversations",
             "conversation"),
    JuryTask("mimic_rrs", "a radiologist reviewing impressions written from radiology reports' findings", "findings"),
    JuryTask("aci_bench", "a physician reviewing clinical notes written from patient-doctor conversations",
             "conversation"),
    JuryTask("medalign", "a physician reviewing answers to clinicians' instructions about a patient's electronic "
             "health record", "instruction_and_record"),
]
for _task in JURY_TASKS:
    register(_task)


# --------------------------------------------------------------------------- a configured benchmark's jury
CONFIGURED_STAT = "jury_score"  # HELM's LLMJuryMetric(metric_name="jury_score") for the configurable benchmark
_HELM_FIELDS = {"question": "question", "response": "response", "gold_response": "gold_response"}


def configured_text(text: str) -> str:
    """A user's judge prompt in our ``{$field}`` form: HELM's ``{{QUESTION}}``, ``{{RESPONSE}}`` and
    ``{{GOLD_RESPONSE}}`` (also written with single braces, in either case) become the three fields; every
    other brace (a JSON example) is left as written."""
    def field(m: re.Match[str]) -> str:
        return "{$" + _HELM_FIELDS[m.group(2).lower()] + "}"

    return re.sub(r"(\{\{|\{)(question|response|gold_response)(\}\}|\})", field, text, flags=re.IGNORECASE)


def rubric_criteria(text: str) -> tuple[str, ...] | None:
    """HELM's criteria block, ``<rubric_criteria>{"accuracy": ["score", "explanation"], ...}</rubric_criteria>``:
    its keys; None without one. A block that is not a JSON object raises ValueError."""
    found = re.search(r"<rubric_criteria>\s*(\{.*?\})\s*</rubric_criteria>", text, re.DOTALL)
    if not found:
        return None
    try:
        obj = json.loads(found.group(1))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the <rubric_criteria> block is not JSON: {exc.msg}") from None
    if not isinstance(obj, dict) or not obj:
        raise ValueError("the <rubric_criteria> block is not a JSON object naming the criteria")
    return tuple(str(k) for k in obj)


def register_configured(benchmark: str, text: str, criteria: tuple[str, ...], default_score: float) -> str:
    """The judge template (``<benchmark>_jury``, the user's wording) and its metric (same name, stat
    ``jury_score``) of one configured benchmark; returns the metric's name. The wording, the criteria and
    the default are hashed into the VERSIONs (so metric_version), and a changed file replaces them."""
    from helmflow.metrics import METRICS, Metric
    from helmflow.versions import stable_hash

    name = f"{benchmark}_jury"
    task = JuryTask(benchmark, "", "", default_score=default_score, criteria=criteria)
    digest = stable_hash({"text": text, "criteria": list(criteria), "default": default_score}, 12)
    TEMPLATES.put(name, JudgeTemplate(
        name=name, version=f"{JURY_VERSION}-{digest}", text=configured_text(text), fields=jury_fields,
        parse=lambda reply: parse_jury(reply, criteria), on_empty=Verdict(default_score, {"note": EMPTY_OUTPUT}),
        max_tokens=JUDGE_MAX_TOKENS,
    ))

    def stats(x: MetricInput) -> dict[str, float]:
        if not x.annotations:
            return {}
        out = judge_counts(x.annotations, name)
        pooled = pooled_scores(x, name)
        samples = [sum(v) / len(v) if v else task.default_score for v in pooled.values()]
        out[CONFIGURED_STAT] = sum(samples) / len(samples) if samples else task.default_score
        return out

    METRICS.put(name, Metric(name=name, fn=stats, version=f"{JURY_VERSION}-{digest}", judge=name))
    return name
