"""The real ``helmflow`` command in a subprocess, and reading its flow runs back through the Prefect API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from uuid import UUID

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300, fresh: bool = False, stderr_to_stdout: bool = False) -> subprocess.CompletedProcess:
    """The real ``helmflow`` command (same interpreter) in a process of its own with this environment.

    The process is forked from the suite's fork server (:mod:`tests.support.cli_fork`), which has the heavy
    modules imported already. ``fresh=True``, or an environment that changes how the interpreter starts
    (a ``PYTHON*``, ``LANG`` or ``LC_*`` variable other than the server's), runs ``python -m helmflow.cli``
    from scratch instead: for a test about what a new interpreter imports or finds. ``stderr_to_stdout``: both
    streams in ``stdout``, interleaved as written."""
    full_env = dict(os.environ, **(env or {}))
    full_env.setdefault("COLUMNS", "200")
    workdir = str(cwd or REPO)
    if not fresh and os.environ.get("HELMFLOW_TEST_FORK", "1") != "0" and _forkable(full_env):
        return _fork_run(list(args), full_env, workdir, timeout, stderr_to_stdout)
    return subprocess.run(
        [sys.executable, "-m", "helmflow.cli", *args],
        env=full_env,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if stderr_to_stdout else subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


_FORK: dict = {}


def _interpreter_env(env: dict[str, str]) -> dict[str, str]:
    """The variables a Python interpreter reads as it starts, before any of the command's code runs."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}


def _forkable(env: dict[str, str]) -> bool:
    return _interpreter_env(env) == _FORK.get("env", _interpreter_env(dict(os.environ)))


def _fork_server() -> str:
    """The socket of this process's fork server, started (and its imports waited for) on first use."""
    proc = _FORK.get("proc")
    if proc is not None and proc.poll() is None:
        return _FORK["path"]
    import atexit
    import tempfile

    folder = tempfile.mkdtemp(prefix="helmflow-fork-")
    path = os.path.join(folder, "socket")
    log = open(os.path.join(folder, "server.log"), "wb")
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.cli_fork", path], cwd=str(REPO),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
    line = proc.stdout.readline() if proc.stdout else b""
    if line.strip() != b"ready":
        proc.kill()
        raise RuntimeError(f"the CLI fork server did not start: {Path(folder, 'server.log').read_text()[-2000:]}")
    atexit.register(proc.kill)
    _FORK.update(proc=proc, path=path, env=_interpreter_env(dict(os.environ)))
    return path


def _decode(data: bytes) -> str:
    """What ``subprocess.run(text=True)`` makes of a stream: the locale's encoding, universal newlines."""
    import locale

    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def _fork_run(argv: list[str], env: dict[str, str], cwd: str, timeout: float,
              stderr_to_stdout: bool) -> subprocess.CompletedProcess:
    import json
    import signal
    import socket
    import threading
    import time

    path = _fork_server()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if stderr_to_stdout:
        os.close(err_w)
        err_w = os.dup(out_w)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode() + b"\n"],
                        [out_w, err_w])
    finally:
        os.close(out_w)
        os.close(err_w)
    captured: dict[int, bytes] = {}

    def drain(fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            captured[fd] = stream.read()

    readers = [threading.Thread(target=drain, args=(fd,), daemon=True) for fd in (out_r, err_r)]
    for reader in readers:
        reader.start()
    replies = conn.makefile("rb")
    deadline = time.monotonic() + timeout
    first = json.loads(replies.readline() or b"{}")
    if "pid" not in first:
        raise RuntimeError(f"the CLI fork server refused the command: {first}")
    pid = first["pid"]
    conn.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        reply = json.loads(replies.readline() or b"{}")
    except (TimeoutError, socket.timeout):
        os.kill(pid, signal.SIGKILL)
        for reader in readers:
            reader.join(10)
        raise subprocess.TimeoutExpired(["helmflow", *argv], timeout, _decode(captured.get(out_r, b"")),
                                        _decode(captured.get(err_r, b""))) from None
    finally:
        conn.close()
    for reader in readers:
        reader.join()
    code = os.waitstatus_to_exitcode(reply["status"])
    return subprocess.CompletedProcess([sys.executable, "-m", "helmflow.cli", *argv], code, _decode(captured[out_r]),
                                       None if stderr_to_stdout else _decode(captured[err_r]))


def flow_run_id_from(out: subprocess.CompletedProcess) -> UUID:
    """The flow-run id that ``helmflow run`` prints."""
    match = re.search(r"flow run: ([0-9a-f-]{36})", out.stdout)
    assert match, out.stdout + out.stderr
    return UUID(match.group(1))


def task_runs_of(flow_run_id, top_level: bool = False):
    """A board flow run's task runs, read back through the Prefect API: ``prepare`` and ``run`` from its
    scenarios' subflow runs, and its own ``release``. ``top_level``: the flow run's own task runs only,
    each scenario subflow as the task run that stands for it in the graph."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return board_task_runs(client, flow_run_id, top_level)


def subflow_runs_of(flow_run_id):
    """The subflow runs of a flow run (a board's: one per scenario), oldest first."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return subflow_runs(client, flow_run_id)


def subflow_runs(client, flow_run_id):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.client.schemas.sorting import FlowRunSort

    return client.read_flow_runs(sort=FlowRunSort.START_TIME_ASC, flow_run_filter=FlowRunFilter(
        parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))


def board_task_runs(client, flow_run_id, top_level: bool = False):
    """:func:`task_runs_of` through a given sync client."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        Operator,
        TaskRunFilter,
        TaskRunFilterSubFlowRuns,
    )

    if top_level:
        return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return client.read_task_runs(
        flow_run_filter=FlowRunFilter(operator=Operator.or_, id=FlowRunFilterId(any_=[flow_run_id]),
                                      parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])),
        task_run_filter=TaskRunFilter(subflow_runs=TaskRunFilterSubFlowRuns(exists_=False)))


BOARD_TASK_RUNS = {"task_runs": {"subflow_runs": {"exists_": False}}}


def board_task_runs_filter(flow_run_id) -> dict:
    """The JSON body of ``POST /api/task_runs/filter`` for :func:`task_runs_of` (``prepare``, ``run``, ``release``)."""
    return {"flow_runs": {"operator": "or_", "id": {"any_": [str(flow_run_id)]},
                          "parent_flow_run_id": {"any_": [str(flow_run_id)]}}, **BOARD_TASK_RUNS}


def read_flow_run(flow_run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)
