"""Crash safety, counted at the server: a killed, interrupted or concurrent `helmflow run` never
pays twice for a request it finished (the dev server keeps the sha256 of every request body, so a
re-sent request shows up as a repeat)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cli import REPO, spawn_cli
from tests.support.paid_board import (
    CONCURRENCY,
    PER_SCENARIO,
    SCENARIOS,
    WAITING,
    board_args,
    run_cli_text,
    start_cli,
    wait_for_line,
    wait_for_requests,
)

pytestmark = pytest.mark.slow

def journaled(store: Path, spool: Path) -> set[str]:
    """Request hashes the journal holds: parts in storage plus rows still in spool files."""
    import pyarrow.parquet as pq

    found = set()
    for part in (store / "responses").rglob("part-*.parquet"):
        found.update(pq.read_table(part, columns=["request_hash"]).column("request_hash").to_pylist())
    for path in spool.rglob("spool-*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                found.add(json.loads(line)["request_hash"])
            except ValueError:
                pass  # a torn last line
    return found


def test_sigkill_loop_resends_at_most_what_was_in_flight(prefect_server, dev_server, tmp_path):
    """Kill `helmflow run` four times at different points, then let it finish: every request is
    paid once, plus at most the requests in flight at each kill (sent, not yet journaled)."""
    total = SCENARIOS * PER_SCENARIO
    args = board_args(tmp_path, dev_server)
    spool = Path(os.environ["HELMFLOW_SPOOL"])
    dev_server.configure(latency_ms=40)
    kills = []
    for k in range(4):
        proc = start_cli(args)
        wait_for_requests(dev_server, dev_server.stats()["requests"] + 25 + 40 * k, proc)
        os.kill(proc.pid, signal.SIGSTOP)  # frozen: nothing new starts while the server is asked
        at_kill = dev_server.stats()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # not journaled = sent, and neither in storage nor in a spool: what the next run may re-send
        unjournaled = at_kill["unique"] - len(journaled(tmp_path / "store", spool))
        kills.append({"repeats": at_kill["repeats"], "unjournaled": unjournaled, "at_server": at_kill["in_flight"]})
    proc = start_cli(args)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out
    final = dev_server.stats()
    assert final["unique"] == total
    # what kill k costs is re-sent by the run after it (up to the next kill, or the end)
    after = [k["repeats"] for k in kills[1:]] + [final["repeats"]]
    per_kill = [(a - k["repeats"], k["unjournaled"], k["at_server"]) for a, k in zip(after, kills, strict=True)]
    print("per kill (re-sent, not journaled at the kill, in flight at the server):", per_kill)
    for k, (resent, unjournaled, _) in enumerate(per_kill):
        # not journaled: what was in flight at this kill, plus what earlier kills left and this run
        # had not re-sent yet
        assert resent <= unjournaled <= CONCURRENCY * (k + 1), per_kill


# --------------------------------------------------------------------------- Ctrl-C, SIGTERM, the temporary server
def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def without_prefect_api() -> dict[str, str]:
    """The environment of a user with no Prefect server configured who asks for a temporary one
    (HELMFLOW_EPHEMERAL, as ``--ephemeral``): nothing may be left running."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return dict(env, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180", COLUMNS="200", HELMFLOW_EPHEMERAL="1")


def start_isolated(args: list[str], env: dict[str, str], fresh: bool = True):
    """`helmflow` in its own process group, as a terminal runs it (Ctrl-C goes to the whole group): a new
    interpreter (Python's own SIGINT handling), or forked from the suite's fork server (``fresh=False``)."""
    return spawn_cli(args, env=env, inherit_env=False, cwd=REPO, fresh=fresh, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, start_new_session=True)


def interrupt_and_measure(dev_server, proc: subprocess.Popen, send) -> dict:
    """Freeze the run, count at the server, deliver the signal, thaw: what starts after the signal
    is new spending. Returns the counts and the seconds from the signal to the exit."""
    os.kill(proc.pid, signal.SIGSTOP)
    at_signal = dev_server.stats()
    send()
    started = time.monotonic()
    os.kill(proc.pid, signal.SIGCONT)
    out = proc.communicate(timeout=120)[0]
    return {"out": out, "seconds": time.monotonic() - started, "at_signal": at_signal, "after": dev_server.stats()}


def test_sigint_stops_sending_journals_what_finished_and_exits_130(prefect_server, dev_server, tmp_path):
    """Before: SIGINT let 1,700 more requests out before exit 130, 44 s later."""
    args = board_args(tmp_path, dev_server)
    spool = Path(os.environ["HELMFLOW_SPOOL"])
    dev_server.configure(latency_ms=40)
    proc = start_cli(args, fresh=True)  # Python's own SIGINT handling, as a new interpreter sets it up
    wait_for_requests(dev_server, 60, proc)
    seen = interrupt_and_measure(dev_server, proc, lambda: os.kill(proc.pid, signal.SIGINT))
    started_after = seen["after"]["requests"] - seen["at_signal"]["requests"]
    print(f"SIGINT: {started_after} requests started after the signal, exit after {seen['seconds']:.1f} s")
    assert proc.returncode == 130, seen["out"]
    assert started_after <= CONCURRENCY, seen["out"]
    assert seen["out"].count("SIGINT: sending no new requests") == 1 and "Traceback" not in seen["out"], seen["out"]
    unjournaled = seen["after"]["unique"] - len(journaled(tmp_path / "store", spool))

    rerun = start_cli(args)
    out = rerun.communicate(timeout=600)[0]
    assert rerun.returncode == 0, out
    final = dev_server.stats()
    assert final["unique"] == SCENARIOS * PER_SCENARIO
    assert final["repeats"] <= unjournaled <= CONCURRENCY  # nothing that finished is paid again


def test_ctrl_c_to_the_process_group_with_the_temporary_prefect_server(dev_server, tmp_path):
    """Before: a terminal's Ctrl-C killed Prefect's temporary server first; helmflow then sent
    everything and hung for over 120 s until a second Ctrl-C."""
    args = board_args(tmp_path, dev_server)
    dev_server.configure(latency_ms=40)
    proc = start_isolated(args, without_prefect_api())
    wait_for_requests(dev_server, 60, proc)
    servers = children(proc.pid)
    assert servers, "no temporary Prefect server under helmflow"
    seen = interrupt_and_measure(dev_server, proc, lambda: os.killpg(proc.pid, signal.SIGINT))
    started_after = seen["after"]["requests"] - seen["at_signal"]["requests"]
    print(f"group Ctrl-C: {started_after} requests started after the signal, exit after {seen['seconds']:.1f} s")
    assert proc.returncode == 130, seen["out"]
    assert started_after <= CONCURRENCY and seen["after"]["requests"] < SCENARIOS * PER_SCENARIO, seen["out"]
    deadline = time.monotonic() + 20
    while any(alive(p) for p in servers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in servers), "the temporary Prefect server outlived helmflow"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_temporary_prefect_server_dies_with_helmflow(dev_server, tmp_path, sig):
    """Before: after SIGKILL/SIGTERM the temporary server (250 MB) was alive 26 minutes later."""
    args = board_args(tmp_path, dev_server)
    dev_server.configure(latency_ms=40)
    proc = start_isolated(args, without_prefect_api(), fresh=False)  # no SIGINT here: forked will do
    wait_for_requests(dev_server, 30, proc)
    servers = children(proc.pid)
    assert servers, "no temporary Prefect server under helmflow"
    os.kill(proc.pid, sig)
    out = proc.communicate(timeout=120)[0]
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and out.count("SIGTERM: sending no new requests") == 1, out
    deadline = time.monotonic() + 20
    while any(alive(p) for p in servers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in servers), "the temporary Prefect server outlived helmflow"


# --------------------------------------------------------------------------- a full spool disk
def test_a_full_spool_stops_every_pair_at_once_and_pays_nothing_twice(prefect_server, dev_server, tmp_path):
    """Before: a full spool disk paid 699 requests twice, pairs kept sending after failing, and
    the error did not name the spool."""
    args = board_args(tmp_path, dev_server)
    spool = tmp_path / "spool"
    dev_server.configure(latency_ms=20)
    full = {"HELMFLOW_SPOOL": str(spool), "HELMFLOW_TEST_SPOOL_BYTES": "60000"}  # room for ~100 answers
    out = run_cli_text("--plugin", str(REPO / "tests" / "support" / "full_disk.py"), *args, env=full)
    assert out.returncode == 1, out.stdout
    text = out.stdout
    assert "cannot be written (No space left on device)" in text and "HELMFLOW_SPOOL" in text, text
    assert str(spool) in text.replace("\n", ""), text
    assert "Traceback" not in text
    first = dev_server.stats()
    unjournaled = first["unique"] - len(journaled(tmp_path / "store", spool))
    print(f"full spool: {first['requests']} sent, {unjournaled} not journaled")
    assert unjournaled <= CONCURRENCY and first["requests"] < SCENARIOS * PER_SCENARIO

    again = run_cli_text(*args, env={"HELMFLOW_SPOOL": str(spool)})  # room again
    assert again.returncode == 0, again.stdout
    final = dev_server.stats()
    assert final["unique"] == SCENARIOS * PER_SCENARIO and final["repeats"] <= unjournaled


def test_too_little_room_in_the_spool_is_said_before_sending(dev_server, tmp_path, monkeypatch):
    import shutil as shutil_module
    from collections import namedtuple

    from helmflow.query import BoardRun, run_queries
    from helmflow.storage import Store
    from tests.support.devserver import dev_deployment, make_requests

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil_module, "disk_usage", lambda path: usage(10**9, 10**9 - 50_000, 50_000))
    shared = BoardRun()
    result = run_queries(Store(str(tmp_path / "store")), dev_deployment(dev_server), make_requests(100), shared=shared)
    assert dev_server.requests == 0 and result.errors == 100
    assert "has 0.1 MB free" in result.permanent_error and "HELMFLOW_SPOOL" in result.permanent_error
    other = run_queries(Store(str(tmp_path / "store")), dev_deployment(dev_server, name="dev/other"),
                        make_requests(1, tag="x"), shared=shared)
    assert other.permanent_error == result.permanent_error and dev_server.requests == 0


# --------------------------------------------------------------------------- two runs of one board
def test_a_second_run_of_the_board_on_the_same_storage_exits_naming_the_first(prefect_server, dev_server, tmp_path):
    """Before: two concurrent runs of one board each sent every request (3,988 for 2,000)."""
    args = board_args(tmp_path, dev_server)
    dev_server.configure(latency_ms=20)
    first = start_cli(args)
    wait_for_requests(dev_server, 20, first)
    os.kill(first.pid, signal.SIGSTOP)  # still running, however long the second takes to start
    second = run_cli_text(*args, env={})
    assert second.returncode == 75, second.stdout
    assert f"is being run by pid {first.pid}" in second.stdout and "--wait" in second.stdout
    waiting = start_cli([*args, "--wait"])  # queues behind the first, then finds everything journaled
    said = wait_for_line(waiting, WAITING)  # it queued: the first still holds the lease
    assert f"is being run by pid {first.pid}" in said, said
    os.kill(first.pid, signal.SIGCONT)
    first_out, waiting_out = first.communicate(timeout=600)[0], waiting.communicate(timeout=600)[0]
    assert first.returncode == 0, first_out
    assert waiting.returncode == 0, f"exit {waiting.returncode}: {said}{waiting_out}"
    stats = dev_server.stats()
    assert stats["unique"] == SCENARIOS * PER_SCENARIO and stats["repeats"] == 0, stats


def test_the_lease_ends_with_its_holder(tmp_path):
    """A run killed with SIGKILL holds no lease: the kernel drops the lock with the process."""
    from helmflow.lease import BoardBusy, board_lease
    from helmflow.storage import Store

    script = ("import sys, time\nfrom helmflow.lease import board_lease\nfrom helmflow.storage import Store\n"
              f"with board_lease(Store({str(tmp_path)!r}), 'b'):\n    print('held', flush=True)\n    time.sleep(60)\n")
    holder = spawn_cli([], code=script, cwd=REPO, stdout=subprocess.PIPE)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(BoardBusy, match=f"pid {holder.pid}"), board_lease(Store(str(tmp_path)), "b"):
        pass
    holder.kill()
    holder.wait()
    with board_lease(Store(str(tmp_path)), "b"):
        pass


# --------------------------------------------------------------------------- compact during a run
def test_compact_older_than_0_during_a_run_breaks_no_pair_and_pays_nothing_twice(prefect_server, dev_server, tmp_path):
    """Before: `compact --older-than 0` during a run removed the pairs' open temporaries (a pair
    streams its completions into one for the whole pair): 8 of 10 pairs failed."""
    args = board_args(tmp_path, dev_server)
    dev_server.configure(latency_ms=20)
    proc = start_cli(args)
    wait_for_requests(dev_server, 20, proc)
    compacts = []
    while proc.poll() is None:
        compacts.append(run_cli_text("compact", "--storage", str(tmp_path / "store"), "--older-than", "0", env={}))
    out = proc.communicate()[0]
    assert proc.returncode == 0, out
    assert compacts and all(c.returncode == 0 for c in compacts), [c.stdout for c in compacts]
    stats = dev_server.stats()
    print(f"{len(compacts)} compactions during the run; {stats['requests']} sent, {stats['repeats']} repeats")
    assert stats["unique"] == SCENARIOS * PER_SCENARIO and stats["repeats"] == 0, stats
