"""MedHELM's jury: HELM's JSON parser with its one repair, and the pooled criterion mean hand-computed on
three judges, one of which does not parse."""

from __future__ import annotations

import json

import pytest

from helmflow.judges import TEMPLATES, JudgeParseError, _annotation
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.medhelm_jury import parse_jury
from helmflow.records import AdapterSpec, Completion, Deployment, Input, Instance, Reference, Request, RequestBody


def _reply(a, c, k, extra: str = "") -> str:
    return (f'Here is my rating.\n{{"accuracy": {{"score": {a}, "explanation": "ok"}}, '
            f'"completeness": {{"score": {c}, "explanation": "misses the dose"}}, '
            f'"clarity": {{"score": {k}, "explanation": "plain"}}{extra}}}\nThanks.')


def test_parser_reads_the_object_and_applies_helms_one_repair():
    v = parse_jury(_reply(5, 3, 4))
    assert v.score == 4.0 and v.details["completeness_score"] == 3.0 and v.details["clarity_explanation"] == "plain"
    # a judge that stopped before closing the object: one "}" added, then it parses
    cut = '{"accuracy": {"score": 2, "explanation": "a"}, "completeness": {"score": 2, "explanation": "b"}, ' \
          '"clarity": {"score": 5, "explanation": "c"}'
    assert parse_jury(cut).score == 3.0
    assert parse_jury(_reply("4.9", 3, 2).replace('"4.9"', "4.9")).details["accuracy_score"] == 4.0  # int(), as HELM
    # an entry HELM did not ask for but that has a score is pooled too (HELM's metric reads every entry)
    assert parse_jury(_reply(5, 5, 5, ', "safety": {"score": 1, "explanation": "x"}')).score == 4.0


@pytest.mark.parametrize("reply, message", [
    ("no json here", "not JSON"),
    ('{"accuracy": {"score": 5, "explanation": "a"}, "clarity": {"score": 4, "explanation": "c"}}', "completeness"),
    ('{"accuracy": {"score": 5}, "completeness": {"score": 5, "explanation": "b"}, "clarity": {"score": 5, "explanation": "c"}}',
     "accuracy"),
    ('{"accuracy": {"score": 5 "explanation": "a"}}', "after adding a closing brace"),  # the repair cannot help
    ('{"accuracy": {"score": "high", "explanation": "a"}, "completeness": {"score": 5, "explanation": "b"}, '
     '"clarity": {"score": 5, "explanation": "c"}}', "not an integer"),
])
def test_parser_refuses_what_helm_drops(reply, message):
    with pytest.raises(JudgeParseError, match=message):
        parse_jury(reply)


def _inst() -> Instance:
    return Instance(id="id0", input=Input(text="Can I take ibuprofen with {$response}?"),
                    references=[Reference(text="Yes, with food.", correct=True)])


def _judged(replies: dict[str, str], output: str = "Take it with food.") -> MetricInput:
    t = TEMPLATES.get("medication_qa")
    judged = Request(request_hash="h0", instance_id="id0", split="test",
                     body=RequestBody(model="m", prompt="p", max_tokens=5, temperature=0.0))
    notes = []
    for name, text in replies.items():
        call = Request(request_hash=f"c-{name}", instance_id="id0", split="test",
                       body=RequestBody(model=name, prompt="judge", max_tokens=5, temperature=0.0))
        notes.append(_annotation(Deployment(name=name, client="offline", model=name), t, judged, call,
                                 Completion(request_hash=call.request_hash, text=text)))
    return MetricInput(_inst(), [judged], [Completion(request_hash="h0", text=output)], AdapterSpec(), notes)


def test_pooled_score_over_judges_that_parsed():
    fn = METRICS.get("medication_qa_accuracy").fn
    cut = '{"accuracy": {"score": 2, "explanation": "a"}, "completeness": {"score": 1, "explanation": "b"}, ' \
          '"clarity": {"score": 3, "explanation": "c"}'
    out = fn(_judged({"gpt": _reply(5, 4, 4), "llama": "I would rate it highly.", "claude": cut}))
    # pooled by hand: (5 + 4 + 4 + 2 + 1 + 3) / 6 = 19 / 6; llama's reply is dropped and counted
    assert out == {"medication_qa_accuracy": 19 / 6, "medication_qa_judges_parsed": 2.0, "medication_qa_judge_errors": 1.0}
    # pooled, not averaged per judge: a judge with a fourth scored entry weighs 4/7
    out = fn(_judged({"a": _reply(5, 5, 5, ', "extra": {"score": 5, "explanation": "x"}'), "b": _reply(1, 1, 1)}))
    assert out["medication_qa_accuracy"] == (5 * 4 + 1 * 3) / 7
    # no judge parsed: the task's default, 1.0 as HELM's get_medication_qa_spec sets it; --no-judge: missing
    assert fn(_judged({"a": "nope", "b": "{}"}))["medication_qa_accuracy"] == 1.0
    assert fn(MetricInput(_inst(), [], [], AdapterSpec(), [])) == {}


def test_template_renders_question_reply_and_reference_once_and_is_replaceable():
    t = TEMPLATES.get("medication_qa")
    text = t.render(_inst(), "Reply naming {$gold_response}")
    assert "Can I take ibuprofen with {$response}?" in text and "Reply naming {$gold_response}" in text
    assert "Yes, with food." in text and '"completeness": {"score": <1-5>' in text
    assert (t.max_tokens, t.temperature, t.version) == (4096, 0.0, "2")
    assert METRICS.get("medication_qa_accuracy").judge == "medication_qa"
    assert json.loads(_annotation(Deployment(name="j", client="offline", model="j"), t, Request(
        request_hash="h", instance_id="id0", split="test", body=RequestBody(model="m", prompt="p", max_tokens=1,
                                                                            temperature=0.0)), None, None).details_json)
