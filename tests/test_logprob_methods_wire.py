"""HELM Classic's log-probability methods against real SDKs on the dev server: calibrated multiple choice is
refused in one line by a chat endpoint and by Anthropic's Messages API (neither scores a prompt), while
ranking_binary's generations carry the output tokens' logprobs through the OpenAI chat wire."""

from __future__ import annotations

import asyncio

import pytest

from helmflow.adapters import adapt
from helmflow.clients import make_client
from helmflow.clients.base import PermanentError
from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.request_builder import build_requests
from helmflow.scenarios.msmarco import ranking_spec
from tests.support.devserver import dev_deployment

CAT = Instance(id="i1", input=Input(text="The cat sat on the"),
               references=[Reference(text="mat", correct=True), Reference(text="moon")])
CALIBRATED = AdapterSpec(method="multiple_choice_separate_calibrated", input_prefix="", input_suffix=" ",
                         max_train_instances=0)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "message"), [("openai-compatible", "needs the completions endpoint"),
                                               ("anthropic", "the Messages API returns no logprobs")])
def test_calibrated_multiple_choice_is_refused_in_one_line(dev_server, kind, message):
    client = make_client(dev_deployment(dev_server, kind))
    requests = build_requests(adapt(CALIBRATED, [CAT]), CALIBRATED, client.deployment)
    assert len(requests) == 4 and all(r.body.echo for r in requests)
    with pytest.raises(PermanentError, match=message) as refused:
        asyncio.run(client.complete(requests[0].body))
    assert "\n" not in str(refused.value)


@pytest.mark.slow
def test_ranking_binary_reads_logprobs_through_the_chat_wire(dev_server):
    client = make_client(dev_deployment(dev_server, "openai-compatible"))
    query = Instance(id="q", split="valid", input=Input(text="how much does a bear weigh"),
                     references=[Reference(text="Bears weigh 140 to 385 pounds.", correct=True),
                                 Reference(text="Wells Fargo offers online accounts.")])
    spec = ranking_spec().override(max_train_instances=0)
    requests = build_requests(adapt(spec, [query]), spec, client.deployment)
    assert [r.reference_index for r in requests] == [0, 1] and all(r.body.logprobs for r in requests)
    result = asyncio.run(client.complete(requests[0].body))
    assert result.logprobs and len(result.logprobs) == len(result.tokens) and all(v <= 0 for v in result.logprobs)
