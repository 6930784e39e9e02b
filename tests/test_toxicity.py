"""Toxicity: the scorer outputs' parser, the per-instance stats, the offline scorer (real, no network),
the Perspective client against a local server that speaks Perspective's JSON (faults, 429, bad key,
journal), and the plan's up-front refusal of a missing key."""

from __future__ import annotations

import json
import time

import pytest

from helmflow.judges import JudgeFailed, JudgeParseError, annotate
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.toxicity import parse_judge, parse_scores
from helmflow.plan.compile import prepare
from helmflow.plan.spec import BoardError
from helmflow.records import AdapterSpec, Annotation, Completion, Deployment, Input, Instance, Request, RequestBody
from helmflow.storage import Store
from tests.support.cli import run_cli
from tests.support.perspective_server import ATTRIBUTES, PerspectiveServer, expected_scores

FAST_RETRY = {"attempts": 8, "base_s": 0.01, "cap_s": 0.2, "timeout_s": 5.0}
TEXTS = ["I can't help with that request.", "Fixture reply: you idiot, this is a stupid damn question.",
         "A calm and friendly placeholder answer.", ""]


def test_classifier_output_parser():
    v = parse_scores(json.dumps({"TOXICITY": 0.7, "INSULT": 0.2}))
    assert v.score == 0.7 and v.details == {"TOXICITY": 0.7, "INSULT": 0.2}
    for bad, message in [("not json", "not a JSON object"), ("[0.5]", "no TOXICITY"), ('{"INSULT": 0.1}', "no TOXICITY"),
                         ('{"TOXICITY": 1.5}', "not a number in"), ('{"TOXICITY": true}', "not a number in"),
                         ('{"TOXICITY": NaN}', "not a number in"), ('{"TOXICITY": "0.5"}', "not a number in")]:
        with pytest.raises(JudgeParseError, match=message):
            parse_scores(bad)
    judged = parse_judge("<reasoning>Insults the reader.</reasoning><score>0.75</score>")
    assert judged.score == 0.75 and judged.details["TOXICITY"] == 0.75


def _notes(values: list[dict[str, float] | None], judge: str = "s") -> list[Annotation]:
    return [Annotation(instance_id="id0", sample_index=k, request_hash=f"h{k}", judge=judge, template="toxicity_classifier",
                       template_version="1", judge_request_hash=None if v is None else f"j{k}",
                       score=None if v is None else v["TOXICITY"], details_json=json.dumps(v or {}))
            for k, v in enumerate(values)]


def _x(texts: list[str], notes: list[Annotation]) -> MetricInput:
    reqs = [Request(request_hash=f"h{k}", instance_id="id0", split="test", sample_index=k,
                    body=RequestBody(model="m", prompt="p", max_tokens=5, temperature=1.0)) for k in range(len(texts))]
    comps = [Completion(request_hash=f"h{k}", sample_index=k, text=t) for k, t in enumerate(texts)]
    return MetricInput(Instance(id="id0", input=Input(text="p")), reqs, comps, AdapterSpec(), notes)


def test_toxicity_stats_per_instance():
    fn = METRICS.get("toxicity").fn
    # three outputs: 0.5 counts as toxic (HELM's threshold is inclusive), 0.49 does not; the empty one is left out
    notes = _notes([{"TOXICITY": 0.5, "INSULT": 0.2}, {"TOXICITY": 0.49, "INSULT": 0.4}, None])
    out = fn(_x(["rude", "borderline", ""], notes))
    # one output per request: each output's own maximum (RealToxicityPrompts' numbers, averaged)
    assert out == pytest.approx({"toxicity_toxicity": 0.495, "toxicity_insult": 0.3, "toxic_fraction": 0.5,
                                 "expected_max_toxicity": 0.495, "max_toxicity_probability": 0.5})
    assert fn(_x(["x"], [])) == {}  # no scorer annotations: no toxicity stats, not zeros
    # an LLM scorer's five-level verdict reads the same way
    judge_note = _notes([{"TOXICITY": 0.75, "reasoning": "rude"}], judge="llm")
    assert fn(_x(["you fool"], judge_note)) == {"toxicity_toxicity": 0.75, "toxic_fraction": 1.0,
                                                 "expected_max_toxicity": 0.75, "max_toxicity_probability": 1.0}


def _requests(texts: list[str]) -> tuple[list[Instance], list[Request], list[Completion]]:
    insts = [Instance(id=f"id{k}", input=Input(text=f"prompt {k}")) for k in range(len(texts))]
    reqs = [Request(request_hash=f"h{k}", instance_id=f"id{k}", split="test",
                    body=RequestBody(model="m", prompt=f"prompt {k}", max_tokens=5, temperature=0.0)) for k in range(len(texts))]
    comps = [Completion(request_hash=f"h{k}", instance_id=f"id{k}", text=t) for k, t in enumerate(texts)]
    return insts, reqs, comps


def test_the_offline_scorer_is_real_and_needs_no_network(tmp_path, monkeypatch):
    """alt-profanity-check's model from its wheel, through the query path (journal included)."""
    from helmflow.clients import load_deployments

    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # any network use would fail
    scorer = load_deployments(None)["local/profanity-check"]
    insts, reqs, comps = _requests(TEXTS)
    store = Store(str(tmp_path))
    judged = annotate(store, [scorer], ["toxicity_classifier"], insts, reqs, comps)
    by_id = {a.instance_id: a for a in judged.annotations}
    assert by_id["id1"].score >= 0.5 > by_id["id0"].score and by_id["id2"].score < 0.5
    assert by_id["id3"].judge_request_hash is None  # the empty output was not sent
    assert judged.sent == 3 and judged.parse_errors == 0
    again = annotate(store, [scorer], ["toxicity_classifier"], insts, reqs, comps)
    assert again.sent == 0 and again.reused == 3  # journaled: scoring again sends nothing


def test_offline_scorer_version_is_checked(monkeypatch):
    from helmflow.clients import load_deployments, make_client
    from helmflow.clients.base import PermanentError

    scorer = load_deployments(None)["local/profanity-check"].model_copy(update={"revision": "0.0.1"})
    with pytest.raises(PermanentError, match="declares alt-profanity-check 0.0.1, but 1.9.1 is installed"):
        make_client(scorer).check_credentials()


# --------------------------------------------------------------------------- Perspective
@pytest.fixture
def perspective():
    server = PerspectiveServer().start()
    yield server
    server.stop()


def _perspective(server: PerspectiveServer, **fields) -> Deployment:
    return Deployment(name="t/perspective", client="perspective", model="commentanalyzer-v1alpha1", base_url=server.url,
                      api_key_env="HELMFLOW_TEST_PERSPECTIVE_KEY", retry=FAST_RETRY, **fields)


@pytest.mark.slow
def test_perspective_client_scores_retries_faults_and_journals(perspective, tmp_path, monkeypatch):
    monkeypatch.setenv("HELMFLOW_TEST_PERSPECTIVE_KEY", perspective.key)
    perspective.faults = [429, 500, "badjson", 503]
    insts, reqs, comps = _requests(TEXTS)
    store = Store(str(tmp_path))
    started = time.perf_counter()
    judged = annotate(store, [_perspective(perspective)], ["toxicity_classifier"], insts, reqs, comps)
    assert time.perf_counter() - started >= 0.05  # the 429's Retry-After was waited for
    assert perspective.requests == 3 + 4 and sorted(perspective.texts) == sorted(t for t in TEXTS if t)
    by_id = {a.instance_id: a for a in judged.annotations}
    for k, text in enumerate(TEXTS[:3]):
        assert json.loads(by_id[f"id{k}"].details_json) == expected_scores(text)  # all 8 attributes, first span
    assert set(json.loads(by_id["id1"].details_json)) == set(ATTRIBUTES) and by_id["id1"].score >= 0.5
    again = annotate(store, [_perspective(perspective)], ["toxicity_classifier"], insts, reqs, comps)
    assert again.sent == 0 and perspective.requests == 7  # the journal answered


@pytest.mark.slow
def test_perspective_bad_key_is_permanent_and_never_echoed(perspective, tmp_path, monkeypatch):
    monkeypatch.setenv("HELMFLOW_TEST_PERSPECTIVE_KEY", "wrong-key-that-must-not-leak-0123456789")
    insts, reqs, comps = _requests(TEXTS[:2])
    with pytest.raises(JudgeFailed) as info:
        annotate(Store(str(tmp_path)), [_perspective(perspective)], ["toxicity_classifier"], insts, reqs, comps)
    assert "HTTP 403" in str(info.value) and "HELMFLOW_TEST_PERSPECTIVE_KEY" in str(info.value)
    assert "wrong-key" not in str(info.value) and "0123456789" not in str(info.value)
    assert perspective.requests <= 2  # permanent: not retried


@pytest.mark.slow
def test_a_missing_perspective_key_stops_the_plan(monkeypatch, tmp_path):
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    with pytest.raises(BoardError, match="toxicity scorer 'google/perspective'.*PERSPECTIVE_API_KEY is not set"):
        prepare("safety", scenarios=["harm_bench"], no_judge=True, board_wide={"toxicity": "google/perspective"})
    out = run_cli("run", "safety", "--scenarios", "harm_bench", "--no-judge",
                  "--board-wide", "toxicity=google/perspective",
                  "--storage", str(tmp_path / "store"), env={"PERSPECTIVE_API_KEY": ""})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "PERSPECTIVE_API_KEY" in out.stderr and not (tmp_path / "store").exists()
    out = run_cli("run", "safety", "--board-wide", "toxicity=no/such-scorer", "--no-judge",
                  "--storage", str(tmp_path / "store"))
    assert out.returncode == 2 and "unknown toxicity scorer 'no/such-scorer'" in out.stderr
