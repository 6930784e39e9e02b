"""Stored task results are data: a record planted in ``prefect-results/`` never runs code.

Prefect reads a result record with the serializer the record names, so a planted
cloudpickle record (and a record naming Prefect's JSON serializer with a hostile decoder) ran code
on the next ``helmflow run``. These tests plant both at the exact keys the next run reads.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import pytest

from helmflow.clients.offline import offline_call_count
from helmflow.storage import Store
from tests.support.cli import flow_run_id_from, run_cli, task_runs_of


class Payload:
    """Unpickling this writes ``marker``: proof that a stored result ran code."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"echo pwned > {self.marker}",))


def pickle_record(key: str, marker: str) -> bytes:
    """What an attacker plants: a genuine Prefect result record whose cloudpickle payload runs a command."""
    from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
    from prefect.serializers import PickleSerializer

    record = ResultRecord(metadata=ResultRecordMetadata(storage_key=key, serializer=PickleSerializer()),
                          result=Payload(marker))
    return record.serialize()


def json_decoder_record(key: str, marker: str) -> bytes:
    """Prefect's JSON serializer is no safer: the record names its decoder, and ``subprocess.run``
    called on ``{"sh": 0, "-c": 0, "<cmd>": 0}`` runs ``sh -c <cmd>`` (a dict iterates its keys)."""
    return json.dumps({
        "metadata": {"storage_key": key, "expiration": None, "prefect_version": "3.9.1", "storage_block_id": None,
                     "serializer": {"type": "json", "object_decoder": "subprocess.run"}},
        "result": json.dumps({"sh": 0, "-c": 0, f"echo pwned > {marker}": 0}),
    }).encode()


def plant(store: Store, marker: Path) -> list[str]:
    keys = store.find("prefect-results")
    assert keys, "the first run persisted no results"
    for i, key in enumerate(keys):
        name = key.rsplit("/", 1)[-1]
        make = pickle_record if i % 2 == 0 else json_decoder_record
        store.write_bytes(key, make(name, str(marker)))
    return keys


def test_planted_records_never_run_and_are_refused_before_prefect_sees_them(tmp_path):
    """The storage block is the only way Prefect reaches prefect-results/; it hands over nothing but
    helmflow's own JSON records (fast: no server, the block's methods called as Prefect calls them)."""
    from prefect._internal.result_records import ResultRecord

    from helmflow.outcomes import PromptSet
    from helmflow.tasks.results import OutcomeJSON, StaleResult, UntrustedResult, result_storage_for

    store = Store(str(tmp_path / "store"))
    block = result_storage_for(store.root)
    good = ResultRecord(metadata={"storage_key": "adapt-x", "serializer": OutcomeJSON()},
                        result=PromptSet(prompts_key="work/prompts/x.parquet", num_prompts=3))
    block.write_path("adapt-x", good.serialize(), _sync=True)
    with pytest.raises(StaleResult, match="work/prompts/x.parquet"):  # the file it points at is not there: a miss
        block.read_path("adapt-x", _sync=True)
    outside = tmp_path / "outside.parquet"  # a planted link out of the root: the file is there, and refused
    outside.write_bytes(b"prompts")
    (tmp_path / "store" / "work" / "prompts").mkdir(parents=True)
    (tmp_path / "store" / "work" / "prompts" / "x.parquet").symlink_to(outside)
    with pytest.raises(StaleResult, match=r"resolve outside the storage root \(work/prompts/x.parquet\): refused") as err:
        block.read_path("adapt-x", _sync=True)
    assert "gone" not in str(err.value)
    (tmp_path / "store" / "work" / "prompts" / "x.parquet").unlink()
    store.write_bytes("work/prompts/x.parquet", b"prompts")
    assert json.loads(store.read_bytes("prefect-results/adapt-x"))["metadata"]["serializer"] == {"type": "helmflow-outcome-json"}
    back = ResultRecord.deserialize(block.read_path("adapt-x", _sync=True))
    assert back.result == PromptSet(prompts_key="work/prompts/x.parquet", num_prompts=3)

    marker = tmp_path / "pwned"
    for key, make in (("query-a", pickle_record), ("query-b", json_decoder_record)):
        store.write_bytes(f"prefect-results/{key}", make(key, str(marker)))
        with pytest.raises(UntrustedResult, match=f"prefect-results/{key}.*quarantine/prefect-results/{key}"):
            block.read_path(key, _sync=True)
        assert not store.exists(f"prefect-results/{key}")  # moved aside, so the task recomputes and rewrites it
        assert [k for k in store.find("quarantine/prefect-results") if k.rsplit("/", 1)[-1].startswith(key)]
    assert not marker.exists()

    # and the serializer itself writes and reads only helmflow's outcome models
    with pytest.raises(Exception, match="not a helmflow outcome"):
        OutcomeJSON().dumps({"any": "dict"})
    hostile = base64.b64encode(b"x").decode()
    for blob in (b'{"outcome": "Popen", "data": {}}', json.dumps({"outcome": "PromptSet", "data": hostile}).encode()):
        with pytest.raises(Exception):  # noqa: B017 - unknown class or invalid data: refused either way
            OutcomeJSON().loads(blob)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["local", "s3"])
def test_planted_payload_at_every_key_the_next_run_reads_runs_nothing_and_recomputes(prefect_server, tmp_path, where, request):
    root = tmp_path / "store" if where == "local" else request.getfixturevalue("s3_root")
    store = Store(str(root))
    args = ["run", "demo", "--max-instances", "3", "--scenarios", "arithmetic-3", "--models", "offline/solver",
            "--storage", str(root)]
    first = run_cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    calls = offline_call_count(store, "offline/solver")

    marker = tmp_path / "pwned"
    planted = plant(store, marker)
    second = run_cli(*args, "--force-flow", cwd=tmp_path)  # through Prefect: the planted records are what it reads
    assert not marker.exists(), "a planted result record ran code"
    assert second.returncode == 0, second.stdout + second.stderr
    # a prepare task per scenario (the clean one and its perturbed copy), a run task per pair, the release
    expected, flow_run_id, deadline = 5, flow_run_id_from(second), time.monotonic() + 30
    while len(task_runs := task_runs_of(flow_run_id)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)  # task runs reach the API as events, a moment after the flow run returns
    assert len(task_runs) == expected, sorted(tr.name for tr in task_runs)
    states = {tr.name.split(" ")[0].rsplit("-", 1)[0]: tr.state.name for tr in task_runs}
    assert set(states.values()) == {"Completed"}, states  # every planted key was a cache miss: recomputed
    assert offline_call_count(store, "offline/solver") == calls  # from the journal: nothing re-sent
    assert "quarantine/prefect-results" in second.stdout + second.stderr  # one warning per refused record
    for key in planted:  # rewritten as helmflow's own JSON records
        assert json.loads(store.read_bytes(key))["metadata"]["serializer"] == {"type": "helmflow-outcome-json"}

    third = run_cli(*args, "--force-flow", cwd=tmp_path)  # and those records are a cache like any other
    assert third.returncode == 0, third.stdout + third.stderr
    flow_run_id, deadline = flow_run_id_from(third), time.monotonic() + 30
    while len(task_runs := task_runs_of(flow_run_id)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(task_runs) == expected, sorted(tr.name for tr in task_runs)
    assert {tr.state.name for tr in task_runs} == {"Cached"}, sorted((tr.name, tr.state.name) for tr in task_runs)


def test_a_cache_hit_reads_and_checks_its_record_once(tmp_path, monkeypatch):
    """Prefect's cache lookup reads a record whole twice (``exists``, then ``read``): the block reads
    and checks it once per lookup, and a later lookup reads storage again."""
    from prefect._internal.result_records import ResultRecord, ResultRecordMetadata
    from prefect.results import ResultStore

    from helmflow.outcomes import FailedCell
    from helmflow.tasks import results as results_module
    from helmflow.tasks.results import OutcomeJSON, OutcomeStorage

    cell = FailedCell(run_id="r", scenario="s", deployment="d", error="e")
    block = OutcomeStorage(root=str(tmp_path))
    block.write_path("k1", ResultRecord(metadata=ResultRecordMetadata(storage_key="k1", serializer=OutcomeJSON()),
                                        result=cell).serialize())
    results = ResultStore(result_storage=block, serializer=OutcomeJSON(), cache_result_in_memory=False)
    reads: list[str] = []
    read_bytes = Store.read_bytes
    monkeypatch.setattr(Store, "read_bytes", lambda self, key: reads.append(key) or read_bytes(self, key))

    assert results.exists("k1") and results.read("k1").result == cell
    assert reads == ["prefect-results/k1"]
    assert results.exists("k1") and len(reads) == 2  # the next lookup reads again

    monkeypatch.setattr(results_module, "REREAD_S", 0.0)  # a record checked long ago is read and checked again
    assert results.exists("k1") and results.read("k1").result == cell
    assert len(reads) == 4
