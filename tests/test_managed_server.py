"""helmflow's managed Prefect server: started by the first command without PREFECT_API_URL, reused by the
next, stopped by ``helmflow server stop`` or after an idle time; and every way it can go wrong is one line
or a recovery, never a hang. Server processes are counted from /proc (their command line names the
PREFECT_HOME they serve).

Each test has a throwaway PREFECT_HOME and port, and its fixture stops the server it started (and fails
the test if one is still running after that): the suite leaves no background server behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from helmflow import prefect_server
from helmflow import prefect_server as prefect_server_module  # the fixture of that name is the tests' server
from tests.support.cli import REPO, board_task_runs_filter, run_cli, spawn_cli
from tests.support.paid_board import board_args, wait_for_requests
from tests.support.prefect_server import seed_database
from tests.support.processes import free_port

STARTED = re.compile(r"^Prefect UI: http://127\.0\.0\.1:(\d+) \(running in the background; helmflow server stop\)$",
                     re.MULTILINE)


def server_pids(home: Path) -> list[int]:
    """Live managed-server processes serving ``home``."""
    return sorted(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and prefect_server.is_ours(
        int(p.name), home))


@pytest.fixture
def fresh_home(tmp_path) -> Path:
    """A PREFECT_HOME with nothing in it: the managed server's first start there prepares Prefect's database."""
    home = tmp_path / "prefect-home"
    yield home
    prefect_server.stop_server(home)
    left = server_pids(home)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "a managed server was still running after `stop`"


@pytest.fixture
def home(fresh_home, env) -> Path:
    """A PREFECT_HOME holding a database a server's first start already prepared (a copy), for the tests about
    anything but that first preparation: their servers start without the migrations' and the block
    registration's CPU-seconds (``env`` says the blocks are registered)."""
    env.update(seed_database(fresh_home))
    return fresh_home


@pytest.fixture
def env(fresh_home) -> dict[str, str]:
    """A user with no Prefect server configured, on a port of this test's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "HELMFLOW_EPHEMERAL")}
    env.pop("PREFECT_LOGGING_LEVEL", None)  # the CLI's own default, as a user has it
    # the companion worker (the UI's Retry button) only where a test retries: its start-up is seconds of CPU
    return dict(env, PREFECT_HOME=str(fresh_home), HELMFLOW_SERVER_PORT=str(free_port()), COLUMNS="200",
                HELMFLOW_SERVER_WORKER="0")


def hf(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env, inherit_env=False, timeout=timeout)


def ok(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, f"{out.args}\n{out.stdout}\n{out.stderr}"
    return out


def shot(page, name: str, docs: bool = True) -> None:
    """A screenshot into test-artifacts/, and into docs/screenshots/ with HELMFLOW_UPDATE_SCREENSHOTS=1."""
    import shutil

    from tests.support.prefect_server import ARTIFACTS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))
    if docs and os.environ.get("HELMFLOW_UPDATE_SCREENSHOTS"):
        shutil.copy(ARTIFACTS / name, REPO / "docs" / "screenshots" / name)


def demo(tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "demo", "--scenarios", "dyck-3", "--models", "offline/solver", "--max-instances", "2",
            "--storage", str(tmp_path / "store"), *extra]


# --------------------------------------------------------------------------- fast: no server
def test_a_configured_api_url_is_read_without_prefect(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert prefect_server.configured_api_url() is None
    (tmp_path / "profiles.toml").write_text('active = "team"\n[profiles.team]\nPREFECT_API_URL = "http://10.0.0.1:4200/api"\n')
    assert prefect_server.configured_api_url() == "http://10.0.0.1:4200/api"
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    assert prefect_server.configured_api_url() == "http://127.0.0.1:9/api"


def test_a_record_of_no_managed_server_is_stale(tmp_path):
    (tmp_path / prefect_server.STATE_FILE).write_text("{not json")
    assert prefect_server.read_state(tmp_path) is None
    assert not prefect_server.is_ours(os.getpid(), tmp_path)  # pytest is not a managed server


# --------------------------------------------------------------------------- slow: real servers
@pytest.mark.slow
def test_first_command_starts_the_server_the_second_reuses_it(tmp_path, fresh_home, env):
    home = fresh_home
    first = ok(hf(*demo(tmp_path), env=env))
    assert "preparing Prefect's database, once" in first.stderr
    port = int(STARTED.search(first.stderr).group(1))
    assert port == int(env["HELMFLOW_SERVER_PORT"])
    assert "Traceback" not in first.stderr
    [pid] = server_pids(home)  # outlived the command
    flow_run = re.search(r"flow run: ([0-9a-f-]{36}) \(completed\)", first.stdout).group(1)
    ui = f"http://127.0.0.1:{port}"
    assert f"Prefect UI: {ui}/runs/flow-run/{flow_run}" in first.stdout
    # the printed UI serves the run: its page, the API behind it (at this port, not 4200), its task runs
    page = httpx.get(f"{ui}/runs/flow-run/{flow_run}", headers={"Accept": "text/html"}, timeout=30)  # as a browser asks
    assert page.status_code == 200 and "<!DOCTYPE html>" in page.text
    assert httpx.get(f"{ui}/ui-settings", timeout=30).json()["api_url"] == f"{ui}/api"
    assert httpx.get(f"{ui}/api/flow_runs/{flow_run}", timeout=30).json()["state"]["type"] == "COMPLETED"
    task_runs = httpx.post(f"{ui}/api/task_runs/filter", timeout=30, json=board_task_runs_filter(flow_run)).json()
    assert sorted(t["name"] for t in task_runs) == ["prepare dyck-3", "release demo", "run dyck-3 x offline/solver"]
    subflows = httpx.post(f"{ui}/api/flow_runs/filter", timeout=30,
                          json={"flow_runs": {"parent_flow_run_id": {"any_": [flow_run]}}}).json()
    assert [s["name"] for s in subflows] == ["demo dyck-3"]  # the scenario's subflow: its prepare and its run

    status = ok(hf("server", "status", env=env)).stdout
    assert f"Prefect UI: {ui} (answering)" in status and f"pid {pid}, Prefect " in status

    second = ok(hf(*demo(tmp_path, "--force-flow"), env=env))
    assert "Prefect UI" not in second.stderr and "preparing" not in second.stderr
    assert server_pids(home) == [pid]  # no new server process

    assert ok(hf("server", "stop", env=env)).stdout.strip() == f"stopped helmflow's Prefect server (pid {pid}, {ui})"
    assert server_pids(home) == []
    assert not (home / prefect_server.STATE_FILE).exists() and not (home / "server.pid").exists()
    assert hf("server", "status", env=env).returncode == 1


@pytest.mark.slow
def test_two_commands_starting_at_once_get_one_server(home, env):
    procs = [spawn_cli(["server", "start"], env=env, inherit_env=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    [pid] = server_pids(home)
    said = sorted(out.strip() for out, _ in outs)
    url = f"http://127.0.0.1:{env['HELMFLOW_SERVER_PORT']}"
    assert said == sorted([f"Prefect UI: {url} (already running, pid {pid})",
                           f"Prefect UI: {url} (running in the background; helmflow server stop)"]), outs


def write_record(home: Path, env: dict[str, str], pid: int) -> None:
    """A server record naming ``pid``, as a managed server writes it."""
    record = {"pid": pid, "port": int(env["HELMFLOW_SERVER_PORT"]), "prefect_version": "3.9.1", "home": str(home),
              "idle_timeout_s": 3600, "started_at": 0}
    (home / prefect_server.STATE_FILE).write_text(json.dumps(record))


@pytest.mark.slow
def test_a_stale_record_is_replaced(home, env):
    """A record whose process exited: the next start says so and starts a new server (a record naming a pid
    that another program now has: test_the_server_stops_itself_when_idle)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_record(home, env, dead.pid)
    out = ok(hf("server", "start", env=env))
    assert f"helmflow's Prefect server (pid {dead.pid}) is no longer running: starting a new one" in out.stderr
    [running] = server_pids(home)
    assert running != dead.pid


@pytest.mark.slow
def test_a_port_taken_by_another_program_moves_the_server(home, env):
    taken = int(env["HELMFLOW_SERVER_PORT"])
    with socket.socket() as other:
        other.bind(("127.0.0.1", taken))
        other.listen()
        out = ok(hf("server", "start", env=env))
        assert f"port {taken} is in use by another program" in out.stderr
        port = int(STARTED.search(out.stdout).group(1))
        assert port != taken
        assert prefect_server.read_state(home).port == port  # recorded: the next command finds it there
        assert httpx.get(f"http://127.0.0.1:{port}/ui-settings", timeout=30).json()["api_url"] == \
            f"http://127.0.0.1:{port}/api"
        [pid] = server_pids(home)
        assert ok(hf("server", "start", env=env)).stdout.strip() == \
            f"Prefect UI: http://127.0.0.1:{port} (already running, pid {pid})"


@pytest.mark.slow
def test_a_server_of_another_prefect_version_is_one_line(tmp_path, home, env):
    ok(hf("server", "start", env=env))
    [pid] = server_pids(home)
    state = json.loads((home / prefect_server.STATE_FILE).read_text())
    (home / prefect_server.STATE_FILE).write_text(json.dumps(dict(state, prefect_version="3.0.0")))
    out = hf(*demo(tmp_path), env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [
        f"helmflow: error: helmflow's Prefect server (pid {pid}, http://127.0.0.1:{state['port']}) runs Prefect "
        f"3.0.0, this helmflow uses Prefect {prefect_server.prefect_version()}: `helmflow server stop`, then the next "
        f"command starts one of this version"]
    assert not (tmp_path / "store").exists()  # nothing ran
    assert server_pids(home) == [pid]  # left alone: another installation may be using it
    ok(hf("server", "stop", env=env))
    ok(hf(*demo(tmp_path), env=env))


@pytest.mark.slow
def test_a_server_that_does_not_answer_is_one_line_not_a_hang_and_one_that_exits_as_a_command_waits_is_replaced(
        tmp_path, home, env):
    """A stopped (SIGSTOP) server: a command under a 3 s start-up timeout says so in one line instead of
    hanging. Then the same server stops for good (its idle stop, a kill) while a command waits for it: the
    command starts a new one instead of failing."""
    ok(hf("server", "start", env=env))
    [pid] = server_pids(home)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        out = hf(*demo(tmp_path), env=dict(env, HELMFLOW_SERVER_STARTUP_TIMEOUT_S="3"), timeout=120)
        took = time.monotonic() - started
    except BaseException:
        os.kill(pid, signal.SIGCONT)
        raise
    assert out.returncode == 3, out.stdout + out.stderr
    [line] = out.stderr.strip().splitlines()
    assert line.startswith(f"helmflow: error: helmflow's Prefect server (pid {pid}, ") and \
        "did not answer within 3 s" in line and "`helmflow server stop`" in line, line
    assert took < 60, took

    # still stopped: the next command finds it, and waits for an answer
    proc = spawn_cli(demo(tmp_path), env=env, inherit_env=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert STARTED.search(err), err  # a new one, said as on a first start
    [new] = server_pids(home)
    assert new != pid and "(completed)" in out


@pytest.mark.slow
def test_a_server_that_dies_mid_run_stops_the_run_in_one_line_and_the_next_run_recovers(
        tmp_path, home, env, dev_server):
    args = board_args(tmp_path, dev_server, per_scenario=50)  # 4 x 50 requests
    dev_server.configure(latency_ms=40)
    ok(hf("server", "start", env=env))
    [pid] = server_pids(home)
    proc = spawn_cli(args, env=env, inherit_env=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_for_requests(dev_server, 40, proc)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 3, out
    assert time.monotonic() - killed < 30
    assert f"helmflow: Prefect's server (pid {pid}, http://127.0.0.1:" in out and "stopped during the run" in out, out
    assert "Traceback" not in out, out
    sent = dev_server.stats()["unique"]
    again = hf(*args, env=env)
    ok(again)
    assert f"helmflow's Prefect server (pid {pid}) is no longer running: starting a new one" in again.stderr
    assert dev_server.stats()["unique"] == 200 and sent < 200  # every request answered once, the rest completed now
    assert len(server_pids(home)) == 1


@pytest.mark.slow
def test_the_server_stops_itself_when_idle(home, env):
    """Its start finds a record naming a pid another program now has (a reused pid): stale, replaced, that
    program never signalled; the new server stops itself after its idle time."""
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # a reused pid
    try:
        write_record(home, env, unrelated.pid)
        out = ok(hf("server", "start", "--idle-timeout", "2", env=env))
        assert f"helmflow's Prefect server (pid {unrelated.pid}) is no longer running: starting a new one" in out.stderr
        assert STARTED.search(out.stdout)
        [pid] = server_pids(home)
        assert pid != unrelated.pid
        deadline = time.monotonic() + 60
        while server_pids(home) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert server_pids(home) == []
        assert not (home / prefect_server.STATE_FILE).exists()
        assert "no API request for 2 s: stopping" in (home / prefect_server.LOG_FILE).read_text()
        assert hf("server", "status", env=env).returncode == 1
        assert unrelated.poll() is None  # never signalled
    finally:
        unrelated.kill()
        unrelated.wait()


@pytest.mark.slow
def test_prefect_api_url_wins_and_starts_nothing(tmp_path, fresh_home, env, prefect_server):
    out = ok(hf(*demo(tmp_path), env=dict(env, PREFECT_API_URL=prefect_server)))
    assert "Prefect UI" not in out.stderr + out.stdout
    assert server_pids(fresh_home) == [] and not (fresh_home / prefect_server_module.STATE_FILE).exists()


@pytest.mark.slow
def test_ephemeral_leaves_nothing_running(tmp_path, home, env):
    out = ok(hf(*demo(tmp_path, "--ephemeral"), env=env))
    assert "Prefect UI" not in out.stderr + out.stdout
    assert server_pids(home) == [] and not (home / prefect_server.STATE_FILE).exists()


@pytest.mark.slow
def test_retry_on_the_managed_server_says_only_its_answer_then_ends_like_run(tmp_path, fresh_home, env):
    home = fresh_home  # the server's first start prepares its database, as a user's does
    env = dict(env, HELMFLOW_SERVER_WORKER="1")  # the worker runs, and must leave a terminal retry to the terminal
    models = tmp_path / "models.yaml"
    entry = "deployments:\n  - {{name: flaky/echo, client: offline, model: echo, revision: '1', options: {}}}\n"
    models.write_text(entry.format("{behavior: echo, fail: always}"))
    run = ["run", "demo", "--scenarios", "dyck-3", "--models", "offline/solver,flaky/echo", "--max-instances", "3",
           "--models-file", str(models), "--storage", str(tmp_path / "store")]
    failed = hf(*run, env=env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    flow_run = re.search(r"flow run: ([0-9a-f-]{36}) \(failed\)", failed.stdout).group(1)
    models.write_text(entry.format("{behavior: echo}"))

    started = time.monotonic()
    dry = ok(hf("retry", flow_run, "--dry-run", env=env))
    took = time.monotonic() - started
    assert dry.stderr == ""  # no Prefect noise (it printed 135 lines of sqlite "database is locked" on its temporary server)
    assert dry.stdout.splitlines() == [
        f"flow run {flow_run} ({re.search(r'demo [0-9-]+ [0-9:]+', dry.stdout).group(0)}) ended Failed.",
        f"storage: {tmp_path / 'store'} (from the flow run's storage parameter)",
        "will re-execute 1 pair(s); every other task is cached:",
        "  - dyck-3 x flaky/echo"]
    print(f"retry --dry-run: {took:.2f} s (load {os.getloadavg()[0]:.1f})")
    assert took < 3 * max(1.0, os.getloadavg()[0] / 3), f"{took:.1f} s at load {os.getloadavg()}"  # 2 cores, shared

    retried = ok(hf("retry", flow_run, env=env))
    lines = retried.stdout.splitlines()
    assert any("demo — release" in line and "(complete)" in line for line in lines), retried.stdout
    assert f"flow run: {flow_run} (completed)" in retried.stdout  # the same flow run, now completed
    assert re.search(rf"^release: {re.escape(str(tmp_path / 'store'))}/leaderboards/demo/\S+$", retried.stdout, re.M)
    assert "Traceback" not in retried.stderr and "INFO" not in retried.stderr + retried.stdout
    reply = httpx.get(f"{prefect_server.read_state(home).api_url}/flow_runs/{flow_run}", timeout=30).json()
    assert reply["state"]["type"] == "COMPLETED" and reply["run_count"] == 2
    assert reply["work_pool_name"] == prefect_server.POOL  # a deployment's run (the UI's Retry), executed here
    assert "submitting flow run" not in (home / prefect_server.LOG_FILE).read_text()  # not by the worker


def wait_for_flow_run(api: str, flow_run: str, run_count: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        reply = httpx.get(f"{api}/flow_runs/{flow_run}", timeout=30).json()
        if reply["run_count"] >= run_count and reply["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED"):
            return reply
        assert time.monotonic() < deadline, f"flow run {flow_run} still {reply['state']['name']} after {timeout} s"
        time.sleep(1)


@pytest.mark.slow
def test_a_failed_cell_of_a_cli_run_is_retried_by_the_ui_retry_button(tmp_path, home, env, dev_server, browser):
    """``helmflow run`` on the managed server gives its flow run a deployment, so the UI shows Retry; the
    call the button makes (Prefect UI's ``retryFlowRun``: POST /flow_runs/{id}/set_state, Scheduled named
    AwaitingRetry, not forced) has the server's worker re-execute the same flow run, where only the failed
    cell re-sends its requests: counted at the dev server, one counter scope per deployment."""
    from playwright.sync_api import expect

    good, bad = dev_server.scoped(f"{dev_server.scope}-good"), dev_server.scoped(f"{dev_server.scope}-bad")
    bad.configure(fault_rate=1.0, faults="500")  # every request of one deployment fails: its cell fails
    models = tmp_path / "models.yaml"
    models.write_text(json.dumps({"deployments": [
        {"name": name, "client": "openai-compatible", "model": "m", "base_url": scope.openai_url,
         "retry": {"attempts": 1, "timeout_s": 30}} for name, scope in (("dev/good", good), ("dev/bad", bad))]}))
    env = dict(env, HELMFLOW_SERVER_WORKER="1")
    failed = hf("run", "demo", "--scenarios", "dyck-3", "--models", "dev/good,dev/bad", "--max-instances", "3",
                "--models-file", str(models), "--storage", str(tmp_path / "store"), env=env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    flow_run = re.search(r"flow run: ([0-9a-f-]{36}) \(failed\)", failed.stdout).group(1)
    [worker] = prefect_server.worker_pids(prefect_server.read_state(home))  # the server's own
    assert f"worker: pid {worker} on work pool helmflow-managed" in ok(hf("server", "status", env=env)).stdout
    sent = {"good": good.stats()["requests"], "bad": bad.stats()["requests"]}
    assert sent == {"good": 3, "bad": 3}, sent
    api = prefect_server.read_state(home).api_url
    ui = api.removesuffix("/api")
    before = {t["id"] for t in httpx.post(f"{api}/task_runs/filter", timeout=30,
                                          json=board_task_runs_filter(flow_run)).json()}

    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{ui}/runs/flow-run/{flow_run}")
        expect(page.get_by_role("button", name="Retry").first).to_be_visible()  # a deployment's run: the button
    finally:
        context.close()

    bad.configure(fault_rate=0.0)  # the provider is back
    reply = httpx.post(f"{api}/flow_runs/{flow_run}/set_state", timeout=30, json={  # what the button sends
        "state": {"type": "SCHEDULED", "name": "AwaitingRetry", "message": "Retry from the UI"}, "force": False})
    assert reply.status_code == 201 and reply.json()["status"] == "ACCEPT", reply.text
    retried = wait_for_flow_run(api, flow_run, 2, timeout=300 * max(1.0, os.getloadavg()[0] / 4))
    assert retried["state"]["type"] == "COMPLETED", (retried["state"], (home / prefect_server.LOG_FILE).read_text())
    assert retried["run_count"] == 2
    assert good.stats()["requests"] == 3  # nothing of the good cell was sent again
    assert bad.stats()["requests"] == 6 and bad.stats()["answered"] == 3  # the failed cell's 3, once each
    deadline = time.monotonic() + 30
    while True:  # task runs reach the API as events, a moment after the flow run ends
        new = [t for t in httpx.post(f"{api}/task_runs/filter", timeout=30, json=board_task_runs_filter(
            flow_run)).json() if t["id"] not in before]
        if len(new) >= 4 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    states = sorted((t["name"], t["state"]["name"]) for t in new)
    assert states == [("prepare dyck-3", "Cached"), ("release demo", "Completed"),
                      ("run dyck-3 x dev/bad", "Completed"), ("run dyck-3 x dev/good", "Cached")], states

    os.kill(prefect_server.read_state(home).pid, signal.SIGKILL)  # the worker never outlives its server
    deadline = time.monotonic() + 30
    while alive(worker):
        assert time.monotonic() < deadline, "the worker outlived its killed server"
        time.sleep(0.2)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
def test_the_flow_runs_logs_and_artifacts_tabs_read_as_a_report(tmp_path, home, env, browser):
    """What a first-day user opens from the printed link: the Logs tab has a line per cell (finished
    with its run's files), the release and where its report is; the Artifacts tab has the leaderboard
    and the release; each scenario's subflow run has its cells' started and finished lines and their
    cards. Checked through the API and in Chromium."""
    from playwright.sync_api import expect

    args = ["run", "demo", "--scenarios", "dyck-3,arithmetic-3", "--models", "offline/solver,offline/echo",
            "--max-instances", "2", "--storage", str(tmp_path / "store")]
    out = ok(hf(*args, env=env))
    assert "started" not in out.stdout + out.stderr  # the log lines go to the flow run, not to the terminal
    flow_run = re.search(r"flow run: ([0-9a-f-]{36})", out.stdout).group(1)
    release = re.search(r"^release: (\S+)$", out.stdout, re.M).group(1)
    api = prefect_server.read_state(home).api_url

    def logs(run_id: str) -> list[str]:
        reply = httpx.post(f"{api}/logs/filter", timeout=30, json={
            "logs": {"flow_run_id": {"any_": [run_id]}}, "sort": "TIMESTAMP_ASC"})
        return [entry["message"] for entry in reply.json()]

    task_runs = httpx.post(f"{api}/task_runs/filter", timeout=30, json=board_task_runs_filter(flow_run)).json()
    cells = sorted(t["name"].removeprefix("run ") for t in task_runs if t["name"].startswith("run "))
    assert len(cells) == 6  # 2 scenarios + arithmetic's robustness copy, x 2 models
    subflows = {s["name"]: s["id"] for s in httpx.post(f"{api}/flow_runs/filter", timeout=30, json={
        "flow_runs": {"parent_flow_run_id": {"any_": [flow_run]}}}).json()}
    assert sorted(subflows) == ["demo arithmetic-3", "demo dyck-3"]  # the robustness copy runs in its original's
    messages = logs(flow_run)
    inside = [m for run_id in subflows.values() for m in logs(run_id)]  # each scenario's subflow logs its cells
    for cell in cells:
        assert f"{cell}: started" in inside, inside
        for log_lines in (messages, inside):  # a line per finished cell in the board's log too, as in its subflow's
            [done] = [m for m in log_lines if m.startswith(f"{cell}: finished, ")]
            assert re.search(rf"\(complete, error rate 0\.0%\): file://{re.escape(str(tmp_path / 'store'))}/runs/\w+$",
                             done), done
    release_id = release.rsplit("/", 1)[-1]
    assert f"release {release_id} published (complete): file://{release}" in messages
    assert any(m.startswith(f"report: `helmflow serve --storage {tmp_path / 'store'}` shows it at /boards/demo/"
                            f"{release_id}/") for m in messages), messages

    artifacts = httpx.post(f"{api}/artifacts/filter", timeout=30,
                           json={"artifacts": {"flow_run_id": {"any_": [flow_run]}}}).json()
    assert sorted(a["key"] for a in artifacts) == ["demo-leaderboard", "demo-release", "demo-release-link"]
    cell_cards = httpx.post(f"{api}/artifacts/filter", timeout=30,  # on each scenario's subflow run, from its run tasks
                            json={"artifacts": {"flow_run_id": {"any_": list(subflows.values())}}}).json()
    assert len([a for a in cell_cards if a["task_run_id"]]) == 6

    again = ok(hf(*args, "--force-flow", env=env))  # every cell cached: the log still says where each run is
    rerun = logs(re.search(r"flow run: ([0-9a-f-]{36})", again.stdout).group(1))
    assert all(any(m.startswith(f"{cell}: cached, the run published earlier: file://") for m in rerun)
               for cell in cells), rerun
    assert f"release {release_id} unchanged (already published: nothing written) (complete): file://{release}" in rerun

    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        ui = api.removesuffix("/api")
        page.goto(f"{ui}/runs/flow-run/{flow_run}")
        page.get_by_text("Logs", exact=True).first.click()
        expect(page.get_by_text(f"release {release_id} published", exact=False).first).to_be_visible()
        shot(page, "prefect-flow-run-logs.png")
        page.get_by_text("Artifacts", exact=True).first.click()
        expect(page.get_by_text("demo-leaderboard", exact=True).first).to_be_visible()  # the board's own three
        shot(page, "prefect-managed-artifacts.png", docs=False)  # the docs' copy: tests/test_prefect_ui.py
        page.goto(f"{ui}/runs/flow-run/{subflows['demo dyck-3']}")  # a scenario's cell cards: on its subflow run
        page.get_by_text("Artifacts", exact=True).first.click()
        expect(page.get_by_text("demo-dyck-3-offline-solver", exact=True).first).to_be_visible()
    finally:
        context.close()
