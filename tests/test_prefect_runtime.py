"""Prefect's temporary server under helmflow.

Reproduced first, on this 2-core machine under load: `helmflow run demo --max-instances 5` died twice
in a row with Prefect's "Timed out while attempting to connect to ephemeral Prefect API server" (its
default is 20 s; the server took 64–86 s to start), as a 30-line traceback; and a cached rerun
printed `ERROR … task_run_recorder - Error flushing … CancelledError` tracebacks (172 lines) at
shutdown and left 27 task runs Pending and 19 Running in Prefect's database.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helmflow.prefect_runtime import STARTUP_TIMEOUT_S, PrefectUnavailable, temporary_server
from tests.support.cli import run_cli
from tests.support.processes import stop_process

FINAL = ("COMPLETED", "FAILED", "CANCELLED", "CRASHED")


def test_startup_default_is_raised_unless_the_user_set_one():
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS as TIMEOUT
    from prefect.settings import temporary_settings

    assert TIMEOUT.value() == 20  # Prefect's own (the test session sets none)
    with temporary_server():
        assert TIMEOUT.value() == STARTUP_TIMEOUT_S
    with temporary_settings(updates={TIMEOUT: 7}), temporary_server():
        assert TIMEOUT.value() == 7  # the user's, e.g. PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=7


def test_a_server_that_does_not_start_is_one_error():
    with pytest.raises(PrefectUnavailable, match="did not start within .* PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"), \
            temporary_server():
        raise RuntimeError("Timed out while attempting to connect to ephemeral Prefect API server.")
    with pytest.raises(RuntimeError, match="something else"), temporary_server():
        raise RuntimeError("something else")


def test_a_server_that_exits_before_answering_is_one_error():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    class Exited:  # what helmflow.stopping.TemporaryServer.wait raises when the server process died
        def wait(self, timeout_s: float) -> str:
            raise ChildProcessError("exited with code 1")

    with temporary_settings(restore_defaults={PREFECT_API_URL}), \
            pytest.raises(PrefectUnavailable, match=r"^Prefect's temporary server exited with code 1 before answering "
                                                    r".*`prefect server start` and export PREFECT_API_URL$"), \
            temporary_server(Exited()):  # type: ignore[arg-type]
        pytest.fail("the block must not run without a server")


def test_a_server_named_in_a_profile_is_used_and_the_early_temporary_one_stopped():
    """The CLI spawns the temporary server before Prefect is imported, seeing only $PREFECT_API_URL;
    a URL set in a profile or prefect.toml shows once Prefect reads its settings."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    class Spawned:
        stopped = False

        def wait(self, timeout_s: float) -> str:
            pytest.fail("a configured server must not wait for the temporary one")

        def stop(self) -> None:
            self.stopped = True

    spawned = Spawned()
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}), \
            temporary_server(spawned):  # type: ignore[arg-type]
        assert PREFECT_API_URL.value() == "http://127.0.0.1:9/api"
    assert spawned.stopped


def _temporary_server_env(home: Path, **extra: str) -> dict[str, str]:
    """No PREFECT_API_URL and HELMFLOW_EPHEMERAL (as ``--ephemeral``): the CLI starts Prefect's temporary
    server on a fresh PREFECT_HOME (helmflow's managed server: tests/test_managed_server.py)."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), COLUMNS="200", HELMFLOW_EPHEMERAL="1", **extra)
    env.pop("PREFECT_LOGGING_LEVEL", None)  # the CLI's own default, as a user has it
    return env


def _helmflow(*args: str, env: dict[str, str], cwd: Path,
              loaded: Callable[[], None] | None = None) -> subprocess.CompletedProcess:
    if loaded is None:
        return run_cli(*args, env=env, inherit_env=False, cwd=cwd, timeout=1800)
    # a new interpreter, on the loaded CPU from its first instruction
    return subprocess.run([sys.executable, "-m", "helmflow.cli", *args], env=env, cwd=str(cwd), capture_output=True,
                          text=True, timeout=1800, check=False, preexec_fn=loaded)


def _non_final(home: Path) -> dict[str, list]:
    with sqlite3.connect(home / "prefect.db") as db:
        return {table: db.execute(f"SELECT state_type, count(*) FROM {table} WHERE state_type NOT IN "
                                  f"({','.join('?' * len(FINAL))}) GROUP BY state_type", FINAL).fetchall()
                for table in ("flow_run", "task_run")}


@pytest.mark.slow  # starts (or fails to start) a Prefect server
def test_cli_names_the_setting_when_the_server_does_not_start(tmp_path):
    env = _temporary_server_env(tmp_path / "home", PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    out = _helmflow("run", "demo", "--scenarios", "dyck-3", "--models", "offline/echo", "--max-instances", "2",
                    "--storage", str(tmp_path / "store"), env=env, cwd=tmp_path)
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [(
        "helmflow: error: Prefect's temporary server did not start within 1 s (a busy machine?): set "
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher, or start one with `prefect server start` and "
        "export PREFECT_API_URL")], out.stderr
    assert not (tmp_path / "store" / "runs").exists()


CPU_CGROUPS = Path("/sys/fs/cgroup/cpu")  # cgroup v1's cpu controller


def _half_cpu_group() -> Path | None:
    """A cgroup whose processes together get at most half of one CPU's time (a CFS quota of half its period);
    None where this process may not make one."""
    group = CPU_CGROUPS / f"helmflow-test-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        return None
    try:
        period = int((group / "cpu.cfs_period_us").read_text())
        (group / "cpu.cfs_quota_us").write_text(str(period // 2))
    except OSError:
        group.rmdir()
        return None
    return group


@pytest.fixture
def one_loaded_cpu() -> Iterator[Callable[[], None]]:
    """A loaded machine in miniature: the command under test (its temporary server inherits all this) on one CPU
    and at most half of that CPU's time, the share two busy loops would leave it on a 2-core machine, while the
    suite's other worker keeps the other core. Yields what the command's process runs before it starts.

    Where this process may make a cgroup, the cgroup's CPU quota takes the other half (and the fixture checks
    that the command was held to it); elsewhere a busy-looping process pinned to the same CPU does, burning it."""
    cpu = max(os.sched_getaffinity(0))
    group = _half_cpu_group()
    if group is None:
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True,
                                  preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        try:
            yield lambda: os.sched_setaffinity(0, {cpu})
        finally:
            stop_process(burner)
        return

    def enter() -> None:
        os.sched_setaffinity(0, {cpu})
        with open(group / "tasks", "w") as tasks:
            tasks.write(str(os.getpid()))

    try:
        yield enter
        throttled = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
        assert int(throttled["nr_throttled"]) > 0, f"the command was never held to half a CPU: {throttled}"
    finally:
        deadline = time.monotonic() + 30
        while (left := (group / "tasks").read_text().split()) and time.monotonic() < deadline:
            time.sleep(0.2)  # the temporary server's last processes stopping
        for pid in left:  # out of the group (to the root), so that it can be removed
            with contextlib.suppress(OSError), open(CPU_CGROUPS / "tasks", "w") as tasks:
                tasks.write(pid)
        group.rmdir()


@pytest.mark.slow
def test_readme_command_completes_on_a_loaded_machine_and_its_rerun_too_with_no_error_and_no_run_unfinished(
        tmp_path, one_loaded_cpu):
    """The README's command on a fresh PREFECT_HOME (the temporary server migrates its database) completes on
    a loaded CPU; neither that clean run nor the cached rerun after it prints an error or a traceback, and
    each leaves no flow or task run unfinished in Prefect's database."""
    home = tmp_path / "home"
    env = _temporary_server_env(home)
    for attempt, loaded in (("clean", one_loaded_cpu), ("cached", None)):
        out = _helmflow("run", "demo", "--max-instances", "5", env=env, cwd=tmp_path, loaded=loaded)
        text = out.stdout + out.stderr
        assert out.returncode == 0, text
        assert "ERROR" not in text and "Traceback" not in text, f"{attempt} run:\n{text}"
        assert "(complete)" in out.stdout, f"{attempt} run:\n{text}"
        # read after the process (and its temporary server) ended: what `prefect server start` would show
        assert _non_final(home) == {"flow_run": [], "task_run": []}, attempt
    assert "unchanged: nothing written" in out.stdout
