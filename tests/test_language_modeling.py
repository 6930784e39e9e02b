"""HELM's language_modeling adapter and bits_per_byte: the windows a document is echoed in and the numbers read
from them, compared with crfm-helm 0.5.16's own adapter and metric functions (tests/data/helm_language_modeling.json),
and one document scored by the offline model through its client."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from helmflow.adapters import AdapterError, adapt, check_adaptable
from helmflow.clients import make_client
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.records import AdapterSpec, Completion, Deployment, Input, Instance
from helmflow.request_builder import build_requests
from helmflow.tokenizers import WhitespaceTokenizer

CASES = json.loads((Path(__file__).parent / "data" / "helm_language_modeling.json").read_text())["cases"]


def _deployment(window: int) -> Deployment:
    return Deployment(name="offline/echo", client="offline", model="echo", options={"behavior": "echo"},
                      context_window=window)


@pytest.mark.parametrize("case", CASES, ids=["one-window", "three-windows", "prefix", "prefix-fills-window"])
def test_windows_and_bits_per_byte_are_helms(case):
    spec = AdapterSpec(method="language_modeling", global_prefix=case["prefix"])
    inst = Instance(id="d", split="test", input=Input(text=case["text"]))
    requests = build_requests(adapt(spec, [inst]), spec, _deployment(case["window"]))
    assert [[r.body.prompt, r.num_conditioning_tokens] for r in requests] == case["helm"]["windows"]
    assert all(r.body.echo and r.body.max_tokens == 0 and r.body.logprobs for r in requests)
    pieces = WhitespaceTokenizer().pieces
    completions = [Completion(request_hash=r.request_hash, tokens=pieces(r.body.prompt),
                              logprobs=[-(i + 1 + w) / 10 for i in range(len(pieces(r.body.prompt)))])
                   for w, r in enumerate(requests)]
    stats = METRICS.get("bits_per_byte").fn(MetricInput(inst, requests, completions, spec))
    assert set(stats) == set(case["helm"]["stats"])
    for name, value in case["helm"]["stats"].items():
        assert math.isclose(stats[name], value, abs_tol=1e-12), name


def test_one_window_by_hand():
    """Nine words, one window, no prefix: logprobs -0.1 ... -0.9 sum to -4.5 over 44 bytes."""
    case = CASES[0]
    assert len(case["text"].encode()) == 44 and case["helm"]["windows"] == [[case["text"], 0]]
    assert case["helm"]["stats"]["bits_per_byte"] == pytest.approx(4.5 / 44 / math.log(2))
    assert case["helm"]["stats"]["perplexity"] == pytest.approx(math.e ** 0.5)


def test_the_offline_model_scores_a_document_through_its_client():
    spec = AdapterSpec(method="language_modeling")
    inst = Instance(id="d", split="test", input=Input(text=" ".join(f"w{i}" for i in range(40))))
    client = make_client(_deployment(16))
    requests = build_requests(adapt(spec, [inst]), spec, client.deployment)
    # 16 words scored; then 15 after the 1 before them; then the last 9 after the 7 before them (16 in all)
    assert [r.num_conditioning_tokens for r in requests] == [0, 1, 7]
    completions = []
    for r in requests:
        result = asyncio.run(client.complete(r.body))
        assert "".join(result.tokens) == r.body.prompt
        completions.append(Completion(request_hash=r.request_hash, tokens=result.tokens, logprobs=result.logprobs))
    scored = [lp for r, c in zip(requests, completions, strict=True) for lp in c.logprobs[r.num_conditioning_tokens:]]
    assert len(scored) == 40
    size = sum(len(t.encode()) for r, c in zip(requests, completions, strict=True) for t in c.tokens[r.num_conditioning_tokens:])
    assert size == len(inst.input.text.encode())  # every byte of the document scored once
    stats = METRICS.get("bits_per_byte").fn(MetricInput(inst, requests, completions, spec))
    assert stats["bits_per_byte"] == pytest.approx(-sum(scored) / size / math.log(2))


def test_a_document_it_cannot_score_is_refused_before_any_request():
    spec = AdapterSpec(method="language_modeling")
    with pytest.raises(AdapterError, match="empty text"):
        check_adaptable(spec, [Instance(id="e", input=Input(text=""))])
    with pytest.raises(AdapterError, match="scores a text input"):
        check_adaptable(spec, [Instance(id="m", input=Input(messages=[{"role": "user", "content": "hi"}]))])
