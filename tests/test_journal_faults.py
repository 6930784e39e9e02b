"""A corrupt journal part, and ``compact`` racing a run: the journal keeps every good row, re-sends
only what the bad part held, and nothing crashes."""

from __future__ import annotations

import logging
import threading

import pytest

from helmflow.journal import Journal
from helmflow.operations import compact_store
from helmflow.query import run_queries
from helmflow.records import Completion
from helmflow.storage import TMP_PREFIX, Store
from tests.support.devserver import dev_deployment, make_requests


def _ok(i: int) -> Completion:
    return Completion(request_hash=f"{i:02x}" + f"{i:062x}", text=f"answer {i}", finish_reason="stop", output_tokens=2)


def _journal(store: Store, batches: list[list[int]]) -> list[str]:
    """One part per batch (all in partition ``00``'s neighbourhood: hashes start with the row's hex)."""
    for batch in batches:
        j = Journal(store, "dep/m")
        for i in batch:
            j.append(_ok(i))
        j.close(compact=False)
    return [k for k in store.find("responses/dep--m") if k.endswith(".parquet")]


CORRUPTIONS = {
    "garbage": lambda data: b"this is not parquet at all",
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_a_corrupt_part_is_quarantined_once_and_only_its_rows_are_missing(store, caplog, how):
    _journal(store, [[1, 2], [1, 3], [4]])  # partition 01 holds two parts; 1 is in both
    [bad] = [k for k in store.find("responses/dep--m/03") if k.endswith(".parquet")]
    store.write_bytes(bad, CORRUPTIONS[how](store.read_bytes(bad)))
    wanted = {_ok(i).request_hash for i in (1, 2, 3, 4)}

    with caplog.at_level(logging.WARNING, logger="helmflow"):
        found = Journal(store, "dep/m").lookup(wanted)
        assert set(found) == wanted - {_ok(3).request_hash}  # only the bad part's row is unanswered
        again = Journal(store, "dep/m").lookup(wanted)
    assert set(again) == set(found)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    moved = f"quarantine/{bad}"
    assert store.exists(moved) and not store.exists(bad)
    assert bad in warnings[0] and moved in warnings[0] and "re-sent" in warnings[0]


def test_a_part_with_the_wrong_columns_is_quarantined(store):
    import pyarrow as pa

    _journal(store, [[5]])
    [part] = store.find("responses/dep--m/05")
    store.write_parquet(part, pa.table({"request_hash": [1234], "text": ["x"]}))  # a hash that is not a string
    assert Journal(store, "dep/m").lookup({_ok(5).request_hash}) == {}
    assert store.exists(f"quarantine/{part}")


def test_compact_survives_a_corrupt_part_and_merges_the_rest(store, cli):
    parts = _journal(store, [[1], [1, 17], [17], [33]])
    bad = next(k for k in parts if k.startswith("responses/dep--m/11/"))
    store.write_bytes(bad, b"\x00garbage")
    out = cli("compact", "--storage", store.root)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and f"quarantine/{bad}" in out.stdout + out.stderr
    for xx in {k.split("/")[2] for k in parts}:
        assert len(store.ls(f"responses/dep--m/{xx}")) <= 1  # every partition merged, the bad part set aside
    assert set(Journal(store, "dep/m").lookup({_ok(i).request_hash for i in (1, 17, 33)})) >= {_ok(1).request_hash,
                                                                                             _ok(33).request_hash}


def test_compact_never_crashes_on_temporaries_vanishing_under_it(store, monkeypatch):
    """Before: ``compact`` during a run crashed when a writer's temporary was renamed between the
    listing and the age check. Here every temporary the listing returns is gone when it is looked at."""
    _journal(store, [[1], [1]])
    real_find = store.fs.find

    def find_then_vanish(path, *args, **kwargs):
        found = real_find(path, *args, **kwargs)
        tmp = f"{store.path('responses/dep--m/01')}/{TMP_PREFIX}123.part-x.parquet"
        return sorted([*found, tmp])  # listed, but never there when looked at: renamed by its writer

    monkeypatch.setattr(store.fs, "find", find_then_vanish)
    stop = threading.Event()

    def writer():  # a live writer of temporaries and parts, as a run is
        i = 0
        while not stop.is_set():
            store.write_bytes(f"runs/r/{i % 7}.json", b"{}")
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(20):
            compact_store(store)  # the default age: a live writer's temporaries are never taken
    finally:
        stop.set()
        t.join()


@pytest.mark.slow
def test_only_the_corrupt_parts_requests_are_resent_counted_at_the_server(dev_server, tmp_path):
    store = Store(str(tmp_path / "store"))
    dep = dev_deployment(dev_server, "openai-compatible")
    requests = make_requests(300)
    first = run_queries(store, dep, requests)
    assert first.sent == 300 and first.errors == 0
    assert dev_server.requests == 300
    parts = [k for k in store.find("responses") if k.endswith(".parquet")]
    bad = max(parts, key=lambda k: store.read_parquet(k).num_rows)
    lost = {r["request_hash"] for r in store.read_parquet(bad).to_pylist()}
    store.write_bytes(bad, b"corrupt")

    second = run_queries(store, dep, requests)
    assert dev_server.requests - 300 == len(lost) == second.sent  # those, and only those, went out again
    assert second.errors == 0 and [c.text for c in second.completions] == [c.text for c in first.completions]
    assert store.exists(f"quarantine/{bad}")

    third = run_queries(store, dep, requests)  # and the journal is whole again
    assert third.sent == 0 and dev_server.requests - 300 == len(lost)


def test_compact_older_than_0_leaves_a_live_writers_temporary_alone(store, cli):
    """Before: a run streams a pair's completions into one temporary for the whole pair, and
    ``compact --older-than 0`` removed it mid-write: the pair failed at the rename."""
    import os

    old = store.path("runs/old")
    os.makedirs(old)
    abandoned = f"{old}/{TMP_PREFIX}dead.completions.parquet"  # a killed writer's: no lock holds it
    with open(abandoned, "wb") as fh:
        fh.write(b"half")
    with store.writing("queries/q/completions.parquet") as fh:
        fh.write(b"first chunk")
        out = cli("compact", "--storage", store.root, "--older-than", "0")
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.splitlines() == ["removed 1 temporaries; compacted 0 journal partitions"], out.stdout
        fh.write(b", second chunk")
    assert store.read_bytes("queries/q/completions.parquet") == b"first chunk, second chunk"
    assert not os.path.exists(abandoned)


def test_compact_quarantines_a_corrupt_part_alone_in_its_partition_and_says_so(store, cli):
    """Before: a corrupt part with no other part beside it was never read: exit 0, left in place, nothing said."""
    [bad] = _journal(store, [[0xAB]])
    store.write_bytes(bad, b"garbage")
    out = cli("compact", "--storage", store.root)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1].endswith("moved 1 corrupt journal part(s) to quarantine/ (their requests "
                                                "count as unanswered: the next run sends them again)"), out.stdout
    assert f"quarantine/{bad}" in out.stderr + out.stdout
    assert store.exists(f"quarantine/{bad}") and not store.exists(bad)
