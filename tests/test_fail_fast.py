"""What cannot succeed stops at once, counted at the server: a permanent error stops every pair of
its deployment in the process, and a refused or unresolvable host fails in a few attempts, named."""

from __future__ import annotations

import re
import time

import pytest
import yaml

from helmflow.query import BoardRun, run_queries
from tests.support.cli import run_cli
from tests.support.devserver import dev_deployment, make_requests
from tests.support.processes import free_port


def _refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there


def test_connection_refused_is_named_and_retried_a_few_times_at_most(store):
    """Before: a refused port passed for timeouts, retried 16 times per request (332 s for 40)."""
    from helmflow.records import Deployment

    url = _refused_url()
    dep = Deployment.model_validate({"name": "dev/nowhere", "client": "openai-compatible", "model": "m",
                                     "base_url": url, "max_concurrency": 4,
                                     "retry": {"attempts": 16, "base_s": 0.01, "cap_s": 0.05}})
    result = run_queries(store, dep, make_requests(40))
    assert result.permanent_error == f"Unreachable: deployment 'dev/nowhere': connection refused: {url}"
    assert sum(c.attempts for c in result.completions) <= 3 + 4  # 3 refusals in a row, and what was in flight
    assert result.errors == 40 and result.sent == 40


def test_an_unresolvable_host_is_named_too(store):
    from helmflow.records import Deployment

    dep = Deployment.model_validate({"name": "dev/nohost", "client": "openai-compatible", "model": "m",
                                     "base_url": "http://no-such-host.invalid/v1",
                                     "retry": {"attempts": 16, "base_s": 0.01, "cap_s": 0.05}})
    result = run_queries(store, dep, make_requests(5))
    assert "connection refused: http://no-such-host.invalid/v1 (its host name does not resolve)" in result.permanent_error
    assert sum(c.attempts for c in result.completions) <= 3 + 5


@pytest.mark.slow
def test_timeouts_stay_timeouts(dev_server, store):
    dev_server.configure(fault_rate=1.0, faults="hang", hang_s=30)
    dep = dev_deployment(dev_server, retry={"attempts": 2, "base_s": 0.01, "cap_s": 0.05, "timeout_s": 0.3})
    result = run_queries(store, dep, make_requests(2))
    assert result.permanent_error is None and result.errors == 2
    assert all("no answer within 0.3 s" in c.error for c in result.completions)
    assert all(c.attempts == 2 for c in result.completions)  # retried as timeouts, never stopped as refused
    assert 2 <= dev_server.requests <= 4


@pytest.mark.slow
def test_a_permanent_error_stops_every_pair_of_the_deployment_in_the_process(dev_server, store):
    """Two pairs (two query calls) of one deployment in one board run: the second sends nothing."""
    dev_server.configure(latency_ms=50)
    dep = dev_deployment(dev_server, model="forbidden-model", max_concurrency=4)
    shared = BoardRun()
    first = run_queries(store, dep, make_requests(40, model="forbidden-model", tag="a"), shared=shared)
    sent = dev_server.requests
    assert "HTTP 403" in first.permanent_error and sent <= 4
    second = run_queries(store, dep, make_requests(40, model="forbidden-model", tag="b"), shared=shared)
    assert second.permanent_error == first.permanent_error
    assert dev_server.requests == sent  # not one more request
    other = run_queries(store, dev_deployment(dev_server, name="dev/other"), make_requests(3, tag="c"), shared=shared)
    assert other.permanent_error is None and other.errors == 0  # other deployments go on


@pytest.mark.slow
@pytest.mark.parametrize("model,status", [("forbidden-model", 403), ("unknown-model", 404), ("m", 401)])
def test_a_board_run_stops_the_deployment_at_its_first_permanent_error(prefect_server, dev_server, tmp_path,
                                                                       model, status):
    """Before: 122-128 requests and 221 lines with 9 tracebacks before 8 pairs stopped."""
    from tests.support.paid_board import CONCURRENCY, board_args

    extra = {"client": "openai", "api_key_env": "HELMFLOW_WRONG_KEY"} if status == 401 else {}
    args = board_args(tmp_path, dev_server, scenarios=8, per_scenario=40, **extra)
    models = tmp_path / "models.yaml"
    spec = yaml.safe_load(models.read_text())
    spec["deployments"][0]["model"] = model
    models.write_text(yaml.safe_dump(spec))
    dev_server.configure(latency_ms=50)
    with_server_key = {"HELMFLOW_WRONG_KEY": "sk-wrong"} if status == 401 else {}
    if status == 401:
        from helmflow.devserver import start_dev_server

        with start_dev_server("--api-key-env", "HELMFLOW_RIGHT_KEY", env={"HELMFLOW_RIGHT_KEY": "sk-right"}) as keyed:
            spec["deployments"][0]["base_url"] = keyed.openai_url
            models.write_text(yaml.safe_dump(spec))
            out = run_cli(*args, env=with_server_key)
            requests = keyed.requests
    else:
        out = run_cli(*args)
        requests = dev_server.requests
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert requests <= CONCURRENCY, text
    assert text.count(f"HTTP {status}") == 1, text
    assert "Traceback" not in text
    # the bar counts what went out, not 320/320; Prefect's per-pair "Failed to serialize ... QueryFailed" is not shown
    bars = re.findall(r"requests\b[^\n]*?(\d+)/320", text)
    assert bars and int(bars[-1]) <= CONCURRENCY and "Failed to serialize" not in text, text


def test_check_says_connection_refused(tmp_path):
    from helmflow.check import EXIT_ENDPOINTS

    url = _refused_url()
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/nowhere", "client": "openai-compatible", "model": "m", "base_url": url}]}))
    started = time.monotonic()
    out = run_cli("check", "--models-file", str(models), "--models", "dev/nowhere", env={"COLUMNS": "300"})
    assert out.returncode == EXIT_ENDPOINTS, out.stdout + out.stderr
    assert f"connection refused: {url}" in out.stdout
    assert time.monotonic() - started < 60  # not the 30 s check timeout, nor 16 retries


@pytest.mark.slow
def test_a_lone_surrogate_in_an_answer_is_replaced_counted_and_loses_nothing(store):
    """Before: one such answer failed the pair, all 40 answers lost and re-sent on every rerun."""
    from helmflow.devserver import start_dev_server

    with start_dev_server("--policy", "fn:tests.support.surrogate_policy:lone_surrogate") as server:
        dep = dev_deployment(server)
        result = run_queries(store, dep, make_requests(40, max_tokens=20))
        assert result.errors == 0 and server.requests == 40
        odd = [c for c in result.completions if c.invalid_chars]
        assert len(odd) == 10 and all(c.invalid_chars == 1 and "\ufffd tail" in c.text for c in odd)
        assert all(c.text.encode() for c in result.completions)  # storable as UTF-8
        again = run_queries(store, dep, make_requests(40, max_tokens=20))
        assert again.reused == 40 and server.requests == 40  # journaled: never re-sent
        assert [c.text for c in again.completions] == [c.text for c in result.completions]
