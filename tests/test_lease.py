"""The board's run lease on S3 (moto_server): a conditional create, a heartbeat, expiry when its
holder dies, counted at the dev server with two real `helmflow run` processes.
The local-disk lease (flock) is tested in tests/test_crash_safety.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import REPO, spawn_cli
from tests.support.paid_board import WAITING, board_args, run_cli_text, start_cli, wait_for_line, wait_for_requests

pytestmark = pytest.mark.slow

CONCURRENCY = 8


def s3_board_args(tmp_path, dev_server, s3_root: str, **kw) -> list[str]:
    args = board_args(tmp_path, dev_server, max_concurrency=CONCURRENCY, **kw)
    return [*args[:-1], s3_root]  # --storage <the bucket> instead of a local folder


def holder_script(root: str, ttl_s: float) -> str:
    return ("import time\nfrom helmflow.lease import board_lease\nfrom helmflow.storage import Store\n"
            f"with board_lease(Store({root!r}), 'b', ttl_s={ttl_s}):\n    print('held', flush=True)\n    time.sleep(120)\n")


def test_an_s3_lease_is_renewed_while_its_holder_lives_and_expires_when_it_dies(s3_root):
    from helmflow.lease import BoardBusy, board_lease
    from helmflow.storage import Store

    ttl = 2.0  # renewed every 0.5 s by a holder that does nothing else
    holder = spawn_cli([], code=holder_script(s3_root, ttl), cwd=REPO, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "held"
        time.sleep(2 * ttl)  # alive: its heartbeat keeps the lease fresh for twice the time to live
        with pytest.raises(BoardBusy, match=rf"pid {holder.pid} on \S+, run starting, since 20\d\d-"), \
                board_lease(Store(s3_root), "b", ttl_s=ttl):
            pass
    finally:
        holder.kill()
        holder.wait()
    with pytest.raises(BoardBusy, match=f"pid {holder.pid}"), board_lease(Store(s3_root), "b", ttl_s=ttl):
        pass  # dead, but not yet for the time to live
    started = time.monotonic()
    with board_lease(Store(s3_root), "b", ttl_s=ttl, wait=True, poll_s=0.2) as mine:
        waited = time.monotonic() - started
        assert Store(s3_root).read_json("leases/b.json")["token"] == mine.token
        with pytest.raises(BoardBusy, match=f"pid {os.getpid()}"), board_lease(Store(s3_root), "b", ttl_s=ttl):
            pass  # the taker holds it now
    print(f"dead holder's lease taken over after {waited:.1f} s (ttl {ttl:g} s)")
    assert waited <= ttl + 3
    assert not Store(s3_root).exists("leases/b.json")  # released on exit


def test_two_runs_of_a_board_on_s3_pay_once(prefect_server, dev_server, s3_root, tmp_path):
    """Before: two concurrent runs of one 2,000-request board sent 3,988 requests. The first run is frozen
    (SIGSTOP) once it sends, holding its lease (60 s to live), so the second run (exit 75) and the third
    (``--wait``: it says it queues) start while it holds the lease, however long they take to start."""
    total = 4 * 100
    args = s3_board_args(tmp_path, dev_server, s3_root, scenarios=4, per_scenario=100)
    dev_server.configure(latency_ms=20)
    first = start_cli(args)
    wait_for_requests(dev_server, 20, first)
    os.kill(first.pid, signal.SIGSTOP)
    second = run_cli_text(*args, env={})
    assert second.returncode == 75, second.stdout
    line = second.stdout.strip().splitlines()[-1]
    assert f"is being run by pid {first.pid} on " in line and ", run '" in line and "since 20" in line, line
    assert "--wait" in line and "Traceback" not in second.stdout
    waiting = start_cli([*args, "--wait"])  # queues behind the first, then finds everything journaled
    said = wait_for_line(waiting, WAITING)
    assert f"is being run by pid {first.pid} on " in said, said
    os.kill(first.pid, signal.SIGCONT)
    first_out, waiting_out = first.communicate(timeout=900)[0], waiting.communicate(timeout=900)[0]
    assert first.returncode == 0, first_out
    assert waiting.returncode == 0, f"exit {waiting.returncode}: {said}{waiting_out}"
    stats = dev_server.stats()
    print(f"two runs of a {total}-request board on S3: {stats['requests']} sent")
    assert stats["unique"] == total and stats["requests"] <= total, stats


def test_a_killed_runs_s3_lease_expires_and_the_next_run_resends_at_most_what_was_in_flight(
        prefect_server, dev_server, s3_root, tmp_path):
    ttl = 6.0  # renewed every 1.5 s: a busy machine's slow renewal does not make a live run's lease lapse
    env = {"HELMFLOW_LEASE_TTL_S": str(ttl)}
    args = s3_board_args(tmp_path, dev_server, s3_root)
    dev_server.configure(latency_ms=20)
    first = start_cli(args, env=env)
    wait_for_requests(dev_server, 40, first)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    killed_at = time.monotonic()
    sent_before = dev_server.stats()["requests"]
    after = start_cli([*args, "--wait"], env=env)  # the dead holder's lease, then taken over once stale
    while dev_server.stats()["requests"] == sent_before and after.poll() is None:
        time.sleep(0.05)
    resumed_after = time.monotonic() - killed_at
    out = after.communicate(timeout=600)[0]
    assert after.returncode == 0, out
    stats = dev_server.stats()
    print(f"killed holder: {sent_before} sent before the kill; sending resumed {resumed_after:.1f} s after it "
          f"(ttl {ttl:g} s); {stats['repeats']} re-sent")
    # the last renewal was at most ttl/4 before the kill: nothing is sent until the lease is stale
    assert resumed_after >= 0.75 * ttl - 0.5
    assert stats["unique"] == 4 * 100 and stats["repeats"] <= CONCURRENCY, stats


def test_a_paused_s3_holder_sends_nothing_after_it_wakes_and_pays_nothing_twice(
        prefect_server, dev_server, s3_root, tmp_path):
    """Before: a holder frozen (SIGSTOP) for longer than the time to live, while a waiting run took
    its lease over, kept sending after SIGCONT until its next heartbeat found the lease gone (57 of
    1,000 requests paid twice in the probe). The two runs send to two scopes of the dev server (one
    deployment, one board, one lease; only the base URL differs, which no version or request hash
    covers), so what the woken holder sends is counted apart while the taker goes on."""
    ttl = 6.0  # the taker renews every 1.5 s: a busy machine's slow renewal must not make it lapse too
    env = {"HELMFLOW_LEASE_TTL_S": str(ttl)}
    holder_server, taker_server = dev_server, dev_server.scoped(uuid.uuid4().hex)
    first = start_cli(s3_board_args(tmp_path, holder_server, s3_root), env=env)
    wait_for_requests(holder_server, 40, first)
    os.kill(first.pid, signal.SIGSTOP)
    taker_dir = tmp_path / "taker"
    taker_dir.mkdir()
    second = start_cli([*s3_board_args(taker_dir, taker_server, s3_root), "--wait"], env=env)
    wait_for_requests(taker_server, 20, second)  # the lease went stale and the waiter took it over
    before = holder_server.stats()["requests"]
    os.kill(first.pid, signal.SIGCONT)
    first_out = first.communicate(timeout=300)[0]
    woken_sent = holder_server.stats()["requests"] - before
    second_out = second.communicate(timeout=600)[0]
    total = holder_server.stats()["requests"] + taker_server.stats()["requests"]
    print(f"paused holder: {woken_sent} requests sent after it woke; {total - 4 * 100} paid twice")
    # only requests already past the lease check when it froze may go out (at most one per slot): earlier code sent 26
    assert woken_sent <= CONCURRENCY, first_out
    assert first.returncode == 75, first_out
    lines = [line for line in first_out.splitlines() if "lease" in line]
    assert any("sending no new requests" in line for line in lines) and "Traceback" not in first_out, first_out
    assert second.returncode == 0, second_out  # the taker finished the board: each of its 400 requests went out
    assert total - 4 * 100 <= CONCURRENCY, (holder_server.stats(), taker_server.stats())


def test_the_lease_clock_counts_the_time_a_machine_was_suspended():
    """time.monotonic (CLOCK_MONOTONIC) stands still while the machine is suspended, so a holder woken
    after the time to live found its last renewal recent and went on sending. The lease's freshness
    is judged on CLOCK_BOOTTIME, which counts the sleep (the kernel's uptime, suspensions included)."""
    from helmflow import lease

    if not sys.platform.startswith("linux"):
        pytest.skip("CLOCK_BOOTTIME is Linux's")
    assert lease.CLOCK == time.CLOCK_BOOTTIME
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    assert abs(lease.clock() - uptime) < 1.0
