"""The request journal: spooled before a completion counts, batched to ``responses/``, successes only,
and a process killed at any moment re-sends at most what it had in flight."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helmflow.journal import Journal, spool_dir
from helmflow.query import run_queries
from helmflow.records import Completion
from helmflow.storage import Store
from tests.support.cli import REPO, spawn_cli
from tests.support.devserver import dev_deployment, make_requests


def _ok(i: int) -> Completion:
    return Completion(request_hash=f"{i:064x}"[::-1], text=f"answer {i}", finish_reason="stop", output_tokens=2)


def _simulate_kill(j: Journal) -> None:
    """What SIGKILL leaves behind: the spool file, unlocked, with nothing flushed or deleted."""
    j._closed = True
    j._due.set()
    j._flusher.join()
    j._spool.close()  # releases the flock, as the kernel does for a dead process


def test_spooled_before_counted_then_moved_in_batches(store):
    j = Journal(store, "acme/model", flush_every=10_000, flush_interval_s=3600)
    for i in range(5):
        j.append(_ok(i))
    spooled = [json.loads(line) for line in j._spool_path.read_text().splitlines()]
    assert [r["text"] for r in spooled] == [f"answer {i}" for i in range(5)]
    assert store.find("responses") == []  # not yet batched
    j.flush()
    parts = store.find("responses/acme--model")
    assert parts and all(k.rsplit("/", 1)[-1].startswith("part-") and k.endswith(".parquet") for k in parts)
    assert {k.split("/")[2] for k in parts} == {_ok(i).request_hash[:2] for i in range(5)}
    assert j._spool_path.read_text() == ""  # a fresh spool after the flush
    j.close()
    assert list((spool_dir(store) / "acme--model").glob("spool-*")) == []
    assert set(Journal(store, "acme/model").lookup({_ok(i).request_hash for i in range(7)})) == {
        _ok(i).request_hash for i in range(5)}


def test_errors_are_never_journaled(store):
    j = Journal(store, "m")
    j.append(Completion(request_hash="ab" * 32, error="TransientError: boom"))
    j.close()
    assert store.find("responses") == [] and Journal(store, "m").lookup({"ab" * 32}) == {}


def test_a_killed_writers_spool_is_recovered_by_the_next_journal(store):
    j = Journal(store, "m", flush_interval_s=3600)
    for i in range(3):
        j.append(_ok(i))
    _simulate_kill(j)
    assert j._spool_path.exists()
    again = Journal(store, "m")
    assert len(again.lookup({_ok(i).request_hash for i in range(3)})) == 3
    assert not j._spool_path.exists()
    again.close()


def test_a_live_writers_spool_is_left_alone_and_its_rows_are_read(store):
    live = Journal(store, "m", flush_interval_s=3600)
    live.append(_ok(1))
    other = Journal(store, "m")
    # read (a run that took over a paused holder's lease reuses its finished rows), never moved
    assert set(other.lookup({_ok(1).request_hash})) == {_ok(1).request_hash}
    assert other.lookup_table({_ok(1).request_hash})["request_hash"].to_pylist() == [_ok(1).request_hash]
    assert live._spool_path.exists() and not store.find("responses")
    other.close()
    live.close()
    assert Journal(store, "m").lookup({_ok(1).request_hash}) != {}


def test_timer_moves_spooled_rows_without_blocking_appends(store):
    j = Journal(store, "m", flush_interval_s=0.2)
    j.append(_ok(1))
    deadline = time.monotonic() + 5
    while not store.find("responses") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.find("responses"), "the background flusher never ran"
    j.close()


def test_compaction_merges_and_deduplicates(store):
    for _ in range(4):  # four batches of the same rows: four parts per partition
        j = Journal(store, "m")
        j.append(_ok(1))
        j.close(compact=False)
    xx = _ok(1).request_hash[:2]
    assert len(store.ls(f"responses/m/{xx}")) == 4
    j = Journal(store, "m")
    j.compact({xx})
    [part] = store.ls(f"responses/m/{xx}")
    assert store.read_parquet(part).num_rows == 1
    j.close()


# --------------------------------------------------------------------------- SIGKILL a real run
DRIVER = """
import json, sys
from helmflow.devserver import DevServerHandle
from tests.support.devserver import dev_deployment, make_requests
from helmflow.query import run_queries
from helmflow.storage import Store
port, scope, root, n, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
server = DevServerHandle(None, port, scope)
dep = dev_deployment(server, "openai-compatible", max_concurrency=16)
result = run_queries(Store(root), dep, make_requests(n))
json.dump([c.model_dump() for c in result.completions], open(out, "w"))
print("sent", result.sent, "reused", result.reused, "errors", result.errors)
"""

KEY = ("request_hash", "text", "prompt_tokens", "output_tokens", "finish_reason")


def _driver(dev_server, root: Path, n: int, out: Path):
    """The driver as ``python -c DRIVER ...``, forked from the fork server."""
    return spawn_cli([str(dev_server.port), dev_server.scope, str(root), str(n), str(out)], code=DRIVER, cwd=REPO,
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@pytest.mark.slow
def test_sigkill_at_a_random_point_then_resume_resends_at_most_what_was_in_flight(dev_server, tmp_path):
    n, in_flight = 1500, 16
    seed = random.randrange(1 << 30)
    kill_at = random.Random(seed).randint(n // 5, n * 9 // 10)
    dev_server.configure(latency_ms=20)
    root, out = tmp_path / "store", tmp_path / "out.json"

    first = _driver(dev_server, root, n, out)
    deadline = time.monotonic() + 120
    while dev_server.stats()["answered"] < kill_at:
        assert first.poll() is None, f"driver ended before the kill: {first.stdout.read() if first.stdout else ''}"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert not out.exists()
    killed_after = dev_server.requests

    second = _driver(dev_server, root, n, out)
    assert second.wait(120) == 0, second.stdout.read() if second.stdout else ""
    resent = dev_server.requests - n
    assert 0 <= resent <= in_flight, f"seed {seed}: killed after {killed_after} requests, re-sent {resent}"
    resumed = json.loads(out.read_text())

    dev_server.reset()  # the same run, never interrupted, on a fresh store
    reference = run_queries(Store(str(tmp_path / "fresh")), dev_deployment(dev_server, "openai-compatible"),
                            make_requests(n))
    assert [tuple(c[k] for k in KEY) for c in resumed] == [tuple(getattr(c, k) for k in KEY) for c in reference.completions]
    assert all(c["error"] is None for c in resumed)


def test_concurrent_journals_never_take_each_others_live_spools(store):
    """Many journals of one deployment opening at once in one process (as parallel query tasks do):
    recovery must never lock or delete another journal's fresh spool."""
    import concurrent.futures

    from helmflow.journal import Journal

    def open_close(_):
        journal = Journal(store, "dep/x")
        journal.close(compact=False)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(open_close, range(200)))


def test_journals_opened_together_all_see_the_rows_a_killed_run_spooled(store, monkeypatch):
    """The resumed run's query tasks open their journals at once: while the first moves the orphan
    spool to storage, the others must wait for it, not skip the spool as "a live writer's" and look
    up an empty journal (before: 49 of 81 spooled requests re-sent)."""
    import concurrent.futures

    killed = Journal(store, "m", flush_interval_s=3600)
    for i in range(20):
        killed.append(_ok(i))
    _simulate_kill(killed)

    slow_write = store.write_parquet

    def write_parquet(*args, **kwargs):
        time.sleep(0.3)  # an object store's PUT: recovery takes a while
        return slow_write(*args, **kwargs)

    monkeypatch.setattr(store, "write_parquet", write_parquet)
    hashes = {_ok(i).request_hash for i in range(20)}

    def open_and_look(_):
        journal = Journal(store, "m")
        try:
            return len(journal.lookup(hashes))
        finally:
            journal.close(compact=False)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(open_and_look, range(4))) == [20] * 4
