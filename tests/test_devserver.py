"""The dev server speaks the providers' JSON shapes over real HTTP, injects faults, and counts."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from helmflow.devserver import echo, generate, load_policy, parse_faults, start_dev_server

CHAT = {"model": "m", "messages": [{"role": "user", "content": "Q?\nalpha beta gamma"}], "max_tokens": 2}


def test_generate_cuts_at_stop_then_at_max_tokens():
    g = generate(echo, "x\nalpha beta. gamma", {}, 10, ["."])
    assert (g.text, g.finish, g.stop_sequence) == ("alpha beta", "stop", ".")
    g = generate(echo, "alpha beta gamma", {}, 2, [])
    assert (g.text, g.tokens, g.finish) == ("alpha beta", ["alpha", " beta"], "length")


def test_policies_are_checked_at_start(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"contains": "2+2", "reply": "4"}]))
    policy = load_policy(f"script:{rules}")
    assert policy("What is 2+2?", {}) == "4" and policy("x\nhello", {}) == "hello"
    assert load_policy("fn:helmflow.devserver:echo") is echo
    with pytest.raises(ValueError, match="unknown policy"):
        load_policy("magic")
    with pytest.raises(ValueError, match="unknown fault kinds"):
        parse_faults("429,teapot")


@pytest.mark.slow
def test_openai_and_anthropic_shapes(dev_server):
    chat = httpx.post(f"{dev_server.url}/v1/chat/completions", json={**CHAT, "logprobs": True, "top_logprobs": 1}).json()
    assert chat["object"] == "chat.completion" and chat["choices"][0]["finish_reason"] == "length"
    assert chat["choices"][0]["message"] == {"role": "assistant", "content": "alpha beta", "refusal": None}
    assert [t["token"] for t in chat["choices"][0]["logprobs"]["content"]] == ["alpha", " beta"]
    assert chat["usage"] == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
    comp = httpx.post(f"{dev_server.url}/v1/completions",
                      json={"model": "m", "prompt": "alpha beta", "max_tokens": 5, "logprobs": 1}).json()
    assert comp["object"] == "text_completion" and comp["choices"][0]["text"] == "alpha beta"
    assert comp["choices"][0]["finish_reason"] == "stop" and comp["choices"][0]["logprobs"]["tokens"] == ["alpha", " beta"]
    msg = httpx.post(f"{dev_server.url}/v1/messages", json={**CHAT, "system": "Be brief."}).json()
    assert msg["type"] == "message" and msg["content"] == [{"type": "text", "text": "alpha beta"}]
    assert msg["stop_reason"] == "max_tokens" and msg["usage"] == {"input_tokens": 6, "output_tokens": 2}
    assert dev_server.stats()["by_endpoint"] == {"chat": 1, "completions": 1, "messages": 1}


@pytest.mark.slow
def test_each_fault_on_the_wire(dev_server):
    def send():
        return httpx.post(f"{dev_server.url}/v1/chat/completions", json=CHAT, timeout=1.0)

    dev_server.configure(fault_rate=1.0, faults="429", retry_after_ms=120)
    r = send()
    assert r.status_code == 429 and r.headers["retry-after-ms"] == "120" and r.json()["error"]["type"] == "rate_limit_error"
    for status in ("500", "503"):
        dev_server.configure(faults=status)
        assert send().status_code == int(status)
    dev_server.configure(faults="badjson")
    with pytest.raises(json.JSONDecodeError):
        send().json()
    dev_server.configure(faults="empty")
    assert send().content == b""
    dev_server.configure(faults="reset")
    with pytest.raises(httpx.TransportError):
        send()
    dev_server.configure(faults="hang")
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        send()
    assert time.monotonic() - started >= 0.9
    assert dev_server.stats()["faults"] == {"429": 1, "500": 1, "503": 1, "badjson": 1, "empty": 1, "reset": 1, "hang": 1}


@pytest.mark.slow
def test_latency_key_check_and_count_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DEV_KEY", "right-key")
    counts = tmp_path / "counts.json"
    with start_dev_server("--latency-ms", "100", "--api-key-env", "DEV_KEY", "--count-file", str(counts)) as srv:
        started = time.monotonic()
        denied = httpx.post(f"{srv.url}/v1/chat/completions", json=CHAT, headers={"Authorization": "Bearer nope"})
        assert denied.status_code == 401 and time.monotonic() - started >= 0.1
        ok = httpx.post(f"{srv.url}/v1/messages", json=CHAT, headers={"x-api-key": "right-key"})
        assert ok.status_code == 200
    assert json.loads(counts.read_text())["requests"] == 2  # written at exit


@pytest.mark.slow
def test_a_scope_sees_only_its_own_requests_and_settings(_dev_server_session):
    """What keeps counting tests apart: a sender that keeps going in another scope (as a timed-out test's
    threads do) changes neither this scope's counts nor its settings; the default scope sees neither."""
    mine, other = _dev_server_session.scoped("mine"), _dev_server_session.scoped("other")
    before = _dev_server_session.requests
    other.configure(fault_rate=1.0, faults="500")
    stop = threading.Event()

    def hammer() -> None:
        with httpx.Client(timeout=5) as client:
            while not stop.is_set():
                client.post(f"{other.url}/v1/chat/completions", json=CHAT)

    sender = threading.Thread(target=hammer)
    sender.start()
    try:
        while other.requests < 20:
            time.sleep(0.01)
        for _ in range(4):
            assert httpx.post(f"{mine.openai_url}/chat/completions", json=CHAT, timeout=5).status_code == 200
        assert httpx.post(f"{mine.url}/v1/messages", json=CHAT, timeout=5).json()["content"][0]["text"] == "alpha beta"
        stats = mine.stats()
    finally:
        stop.set()
        sender.join()
    assert (stats["requests"], stats["answered"], stats["faults"]) == (5, 5, {})
    assert stats["by_endpoint"] == {"chat": 4, "messages": 1} and stats["settings"]["fault_rate"] == 0.0
    assert other.stats()["faults"]["500"] == other.requests >= 20
    assert _dev_server_session.requests == before
    mine.reset()
    assert mine.requests == 0 and other.requests >= 20
