"""Provider batches through the real query path and the real SDKs (Files + Batches, Message Batches) against the
dev server, counted at the server: expired batches keep their finished lines and resubmit only the rest, once;
errored lines follow the retry policy; batched answers are the real-time answers at the batch price."""

from __future__ import annotations

import json
import math

import openai
import pytest

from helmflow.journal import Journal
from helmflow.query import run_queries
from tests.support.devserver import dev_deployment, make_requests

pytestmark = pytest.mark.slow

KINDS = ["openai", "anthropic"]
PRICES = {"price_input_per_mtok": 2.0, "price_output_per_mtok": 10.0}


def batch_deployment(server, kind: str, **fields):
    return dev_deployment(server, kind, batch=True, batch_poll_s=0.05, **PRICES, **fields)


@pytest.mark.parametrize("kind", KINDS)
def test_batched_answers_are_the_real_time_answers_at_half_the_price(dev_server, store, kind):
    reqs = make_requests(20, max_tokens=2)
    result = run_queries(store, batch_deployment(dev_server, kind), reqs)
    assert result.errors == 0 and result.sent == 20
    c = result.completions[3]
    assert c.text == "answer 3" and c.finish_reason == "length"
    assert c.prompt_tokens == 6 and c.output_tokens == 2
    assert math.isclose(c.cost_usd, 0.5 * (6 * 2.0 + 2 * 10.0) / 1e6)
    stats = dev_server.stats()
    assert stats["requests"] == 0 and stats["batches"] == 1 and stats["batch_answered"] == 20
    again = run_queries(store, batch_deployment(dev_server, kind), reqs)  # journaled: nothing submitted
    assert again.reused == 20 and dev_server.stats()["batches"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_an_expired_batch_keeps_its_finished_lines_and_resubmits_the_rest_once(dev_server, store, kind):
    dev_server.configure(batch_expire=True, batch_done_fraction=0.5)
    reqs = make_requests(20, max_tokens=2)
    dep = batch_deployment(dev_server, kind)
    result = run_queries(store, dep, reqs)
    stats = dev_server.stats()
    # 20 lines, 10 finished; the other 10 resubmitted once, 5 finished; 5 left as errors
    assert stats["batches"] == 2 and stats["batch_lines"] == 30 and stats["batch_answered"] == 15
    assert stats["batch_answered_repeats"] == 0 and stats["requests"] == 0
    assert result.errors == 5 and all("NotRun" in (c.error or "") for c in result.completions if not c.ok)
    assert len(Journal(store, dep.name).lookup({r.request_hash for r in reqs})) == 15
    dev_server.configure(batch_expire=False)
    rerun = run_queries(store, dep, reqs)  # the five left go out in one more batch; the 15 kept are reused
    stats = dev_server.stats()
    assert rerun.errors == 0 and rerun.reused == 15 and rerun.sent == 5
    assert stats["batches"] == 3 and stats["batch_lines"] == 35 and stats["batch_answered"] == 20
    assert stats["batch_answered_repeats"] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_errored_lines_are_resubmitted_under_the_retry_policy(dev_server, store, kind):
    dev_server.configure(batch_error_rate=0.3, seed=7)
    reqs = make_requests(30, max_tokens=2)
    result = run_queries(store, batch_deployment(dev_server, kind), reqs)
    stats = dev_server.stats()
    assert result.errors == 0 and [c.text for c in result.completions] == [f"answer {i}" for i in range(30)]
    assert stats["batches"] >= 2 and stats["batch_answered"] == 30 and stats["batch_answered_repeats"] == 0
    assert stats["batch_lines"] > 30  # the errored ones went again


def test_a_permanent_line_error_is_the_request_error_and_is_not_resubmitted(dev_server, store):
    reqs = make_requests(4, model="forbidden-model", max_tokens=2)
    result = run_queries(store, batch_deployment(dev_server, "openai"), reqs)
    assert result.errors == 4 and "HTTP 403" in (result.completions[0].error or "")
    assert dev_server.stats()["batches"] == 1 and dev_server.stats()["batch_lines"] == 4


def test_the_dev_server_validates_batches_as_the_providers_do(dev_server):
    o = openai.OpenAI(api_key="k", base_url=dev_server.openai_url, max_retries=0)
    line = {"custom_id": "same", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 2}}
    data = (json.dumps(line) + "\n" + json.dumps(line) + "\n").encode()
    f = o.files.create(file=("b.jsonl", data), purpose="batch")
    assert f.purpose == "batch" and f.bytes == len(data)
    b = o.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert b.status == "failed" and b.errors.data[0].line == 2 and "twice" in b.errors.data[0].message
    import anthropic

    a = anthropic.Anthropic(api_key="k", base_url=dev_server.url, max_retries=0)
    params = {"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(anthropic.BadRequestError, match="custom_id"):
        a.messages.batches.create(requests=[{"custom_id": "has space", "params": params}])
    dev_server.configure(batch_delay_s=3600)
    mb = a.messages.batches.create(requests=[{"custom_id": f"r{i}", "params": params} for i in range(4)])
    assert mb.processing_status == "in_progress" and mb.request_counts.processing == 4 and mb.results_url is None
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        a.messages.batches.results(mb.id)
    cancelled = a.messages.batches.cancel(mb.id)
    assert cancelled.processing_status == "ended"  # the dev server ends a cancelled batch at once
    counts = a.messages.batches.retrieve(mb.id).request_counts
    assert (counts.succeeded, counts.canceled) == (2, 2)  # batch_done_fraction 0.5 had finished
    kinds = sorted(r.result.type for r in a.messages.batches.results(mb.id))
    assert kinds == ["canceled", "canceled", "succeeded", "succeeded"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_created_by_a_run_killed_before_its_record_is_found_not_resubmitted(dev_server, store, kind):
    """The run wrote its intent (hashes and tag) and created the batch, then died before writing the id."""
    import asyncio
    from datetime import UTC, datetime

    from helmflow.batches import BatchRecord, Ledger
    from helmflow.clients import make_client

    dep = batch_deployment(dev_server, kind)
    reqs = make_requests(10, max_tokens=2)
    hashes = [r.request_hash for r in reqs]
    ledger = Ledger(store, dep.name)
    stamp = datetime.now(UTC).isoformat()
    ledger.write(BatchRecord(batch_id="submitting-t1", deployment=dep.name, hashes=hashes, submitted_at=stamp,
                             state="submitting", tag="t1"))

    async def create() -> str:
        client = make_client(dep)
        try:
            return await client.batch_submit([await client.batch_line(r.request_hash, r.body) for r in reqs], "t1")
        finally:
            await client.aclose()

    batch_id = asyncio.run(create())
    result = run_queries(store, dep, reqs)
    stats = dev_server.stats()
    assert result.errors == 0 and stats["batches"] == 1 and stats["batch_lines"] == 10  # found, not resubmitted
    assert ledger.records() == [] and [(r.batch_id, r.state) for r in ledger.ended()] == [(batch_id, "ended")]
    # an intent whose create call never happened: nothing at the provider, so the requests go out once
    more = make_requests(5, max_tokens=2, tag="x")
    ledger.write(BatchRecord(batch_id="submitting-t2", deployment=dep.name, hashes=[r.request_hash for r in more],
                             submitted_at=datetime.now(UTC).isoformat(), state="submitting", tag="t2"))
    assert run_queries(store, dep, more).errors == 0
    stats = dev_server.stats()
    assert stats["batches"] == 2 and stats["batch_lines"] == 15 and stats["batch_line_repeats"] == 0
    assert ledger.records() == [] and len(ledger.ended()) == 2


def few_shot_requests(n: int):
    """``n`` prompts sharing five 10-word lines of instructions and examples, then their own question."""
    from helmflow.records import Request, RequestBody
    from helmflow.versions import request_hash

    head = "".join(" ".join(f"shot{k}w{j}" for j in range(10)) + "\n" for k in range(5))
    out = []
    for i in range(n):
        body = RequestBody(model="claude-dev", prompt=f"{head}Question {i}?\nanswer {i} is here", max_tokens=2,
                           temperature=0.0, stop=["\n"])
        out.append(Request(request_hash=request_hash(body, 0), instance_id=f"i{i}", split="test", body=body))
    return out


CACHE_PRICES = {"price_input_per_mtok": 3.0, "price_output_per_mtok": 15.0, "price_cached_input_per_mtok": 0.3,
                "price_cache_write_per_mtok": 3.75}


@pytest.mark.parametrize("batch", [False, True], ids=["real-time", "batch"])
def test_prompt_cache_marks_the_shared_prefix_and_the_cache_reads_lower_the_cost(dev_server, store, tmp_path, batch):
    from helmflow.storage import Store

    dev_server.configure(anthropic_cache="explicit")  # as Anthropic: only a prefix marked cache_control is cached
    plain_server = dev_server.scoped("plain-" + dev_server.scope)
    plain_server.configure(anthropic_cache="explicit")
    reqs = few_shot_requests(10)
    common = {"batch": batch, "batch_poll_s": 0.05, "max_concurrency": 4, "model": "claude-dev", **CACHE_PRICES}
    cached = run_queries(store, dev_deployment(dev_server, "anthropic", prompt_cache=True, **common), reqs)
    plain = run_queries(Store(str(tmp_path / "plain")), dev_deployment(plain_server, "anthropic", **common), reqs)
    assert cached.errors == plain.errors == 0
    assert [c.text for c in cached.completions] == [c.text for c in plain.completions]  # the same answers
    usage = dev_server.stats()["usage"]
    # the first prompt goes unmarked (nothing shared yet), one marked prompt writes the 50-word head, 8 read it
    assert usage["cache_write_tokens"] == 50 and usage["cached_tokens"] == 8 * 50
    assert sum(c.cached_tokens for c in cached.completions) == 8 * 50
    assert sum(c.prompt_tokens for c in cached.completions) == sum(c.prompt_tokens for c in plain.completions)
    assert plain_server.stats()["usage"].get("cached_tokens", 0) == 0  # nothing marked, nothing cached
    prompt = sum(c.prompt_tokens for c in plain.completions)
    output = sum(c.output_tokens for c in plain.completions)
    share = 0.5 if batch else 1.0
    expected = share * ((prompt - 400 - 50) * 3.0 + 400 * 0.3 + 50 * 3.75 + output * 15.0) / 1e6
    assert math.isclose(sum(c.cost_usd for c in cached.completions), expected)
    assert math.isclose(sum(c.cost_usd for c in plain.completions), share * (prompt * 3.0 + output * 15.0) / 1e6)
    print(f"{'batch' if batch else 'real-time'}: ${sum(c.cost_usd for c in plain.completions):.6f} without the "
          f"cache, ${sum(c.cost_usd for c in cached.completions):.6f} with it")


@pytest.mark.parametrize("kind", KINDS)
def test_past_max_wait_the_batch_is_cancelled_and_what_it_did_not_finish_goes_real_time_once(dev_server, store, kind):
    dev_server.configure(batch_delay_s=3600, batch_done_fraction=0.5)
    reqs = make_requests(20, max_tokens=2)
    result = run_queries(store, batch_deployment(dev_server, kind, batch_max_wait_s=1.0), reqs)
    stats = dev_server.stats()
    assert result.errors == 0 and [c.text for c in result.completions] == [f"answer {i}" for i in range(20)]
    assert stats["batches"] == 1 and stats["batch_answered"] == 10  # kept from the cancelled batch
    assert stats["requests"] == 10 and stats["repeats"] == 0  # the rest, real-time, once
    real = (6 * 2.0 + 2 * 10.0) / 1e6
    assert math.isclose(sum(c.cost_usd for c in result.completions), 10 * 0.5 * real + 10 * real)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch", [False, True], ids=["real-time", "batch"])
def test_prompts_sharing_a_prefix_go_out_together(dev_server, store, kind, batch):
    """Two few-shot heads interleaved in the run's order go out as two runs of requests, real-time and batched."""
    from helmflow.records import Request, RequestBody
    from helmflow.versions import request_hash

    reqs = []
    for i in range(12):
        head = "AB"[i % 2]
        body = RequestBody(model="dev-model", prompt=f"Instructions {head}\nexample {head}\nQuestion {i}?\n"
                                                     f"answer {i} is here", max_tokens=2, temperature=0.0, stop=["\n"])
        reqs.append(Request(request_hash=request_hash(body, 0), instance_id=f"i{i}", split="test", body=body))
    dep = dev_deployment(dev_server, kind, batch=batch, batch_poll_s=0.05, max_concurrency=1, **PRICES)
    result = run_queries(store, dep, reqs)
    assert result.errors == 0
    # the answers in the run's order, each its own request's (hashes untouched)
    assert [(c.request_hash, c.instance_id, c.text) for c in result.completions] == [
        (r.request_hash, r.instance_id, f"answer {i}") for i, r in enumerate(reqs)]
    assert dev_server.heads() == ["Instructions A"] * 6 + ["Instructions B"] * 6
    assert dev_server.stats()["batches"] == (1 if batch else 0)


@pytest.mark.parametrize("kind", KINDS)
def test_max_wait_counts_from_the_batch_submission_so_a_rerun_past_it_cancels_at_once(dev_server, store, kind):
    """``batch: {max_wait: 1h}``; a run killed with its batch pending for 2 h: the rerun cancels it at its first
    poll, keeps its finished lines and sends the rest real-time, once (it does not wait another hour)."""
    import asyncio
    import time
    from datetime import UTC, datetime, timedelta

    from helmflow.batches import BatchRecord, Ledger
    from helmflow.clients import make_client

    dev_server.configure(batch_delay_s=3600, batch_done_fraction=0.5)
    dep = dev_deployment(dev_server, kind, batch={"max_wait": "1h"}, batch_poll_s=0.05, **PRICES)
    assert dep.batch and dep.batch_max_wait_s == 3600
    reqs = make_requests(10, max_tokens=2)

    async def create() -> str:
        client = make_client(dep)
        try:
            return await client.batch_submit([await client.batch_line(r.request_hash, r.body) for r in reqs], "t")
        finally:
            await client.aclose()

    batch_id = asyncio.run(create())
    two_hours_ago = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    Ledger(store, dep.name).write(BatchRecord(batch_id=batch_id, deployment=dep.name, hashes=[r.request_hash for r in reqs],
                                              submitted_at=two_hours_ago))
    started = time.monotonic()
    result = run_queries(store, dep, reqs)
    assert time.monotonic() - started < 60
    stats = dev_server.stats()
    assert result.errors == 0 and [c.text for c in result.completions] == [f"answer {i}" for i in range(10)]
    assert stats["batches"] == 1 and stats["batch_answered"] == 5 and stats["requests"] == 5 and stats["repeats"] == 0
