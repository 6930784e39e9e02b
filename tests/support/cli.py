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
            timeout: float = 300, fresh: bool = False, stderr_to_stdout: bool = False,
            inherit_env: bool = True) -> subprocess.CompletedProcess:
    """The real ``helmflow`` command (same interpreter) in a process of its own with this environment.

    The process is forked from the suite's fork server (:mod:`tests.support.cli_fork`), which has the heavy
    modules imported already. ``fresh=True``, or an environment that changes how the interpreter starts
    (a ``PYTHON*``, ``LANG`` or ``LC_*`` variable other than the server's), runs ``python -m helmflow.cli``
    from scratch instead: for a test about what a new interpreter imports or finds. ``stderr_to_stdout``: both
    streams in ``stdout``, interleaved as written. ``inherit_env=False``: ``env`` is the whole environment (a
    test's own, with variables of this process left out), not additions to this process's."""
    full_env = dict(os.environ, **(env or {})) if inherit_env else dict(env or {})
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


def run_prefect(*args: str, env: dict[str, str], cwd: Path | str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real ``prefect`` command (``python -m prefect``) with exactly the environment ``env``, forked from the fork
    server like :func:`run_cli`'s commands (a new interpreter where ``env`` changes how one starts)."""
    if os.environ.get("HELMFLOW_TEST_FORK", "1") != "0" and _forkable(env):
        return _fork_run(list(args), dict(env), str(cwd), timeout, False, module="prefect")
    return subprocess.run([sys.executable, "-m", "prefect", *args], env=env, cwd=str(cwd), capture_output=True,
                          text=True, timeout=timeout)


def run_python(code: str, *args: str, env: dict[str, str] | None = None, cwd: Path | str | None = None,
               timeout: float = 300, inherit_env: bool = True) -> subprocess.CompletedProcess:
    """``python -c code args...`` (output captured as text), forked from the fork server like :func:`run_cli`'s
    commands: for a script that drives helmflow's API in a process of its own (killed, or with its own
    environment), not for one about what a new interpreter imports or finds."""
    full_env = dict(os.environ, **(env or {})) if inherit_env else dict(env or {})
    workdir = str(cwd or REPO)
    if os.environ.get("HELMFLOW_TEST_FORK", "1") != "0" and _forkable(full_env):
        return _fork_run(list(args), full_env, workdir, timeout, False, code=code)
    return subprocess.run([sys.executable, "-c", code, *args], env=full_env, cwd=workdir, capture_output=True, text=True,
                          timeout=timeout)


def _fork_run(argv: list[str], env: dict[str, str], cwd: str, timeout: float,
              stderr_to_stdout: bool, module: str = "helmflow.cli", code: str | None = None) -> subprocess.CompletedProcess:
    import contextlib
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
        request = {"argv": argv, "env": env, "cwd": cwd, "module": module, "code": code}
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [out_w, err_w])
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
        with contextlib.suppress(ProcessLookupError):  # the command's threads' stacks to its stderr, then the kill
            os.kill(pid, signal.SIGUSR1)
            time.sleep(1)
        os.kill(pid, signal.SIGKILL)
        for reader in readers:
            reader.join(10)
        raise subprocess.TimeoutExpired([module.split(".")[0], *argv], timeout, _decode(captured.get(out_r, b"")),
                                        _decode(captured.get(err_r, b""))) from None
    finally:
        conn.close()
    for reader in readers:
        reader.join()
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", module]
    return subprocess.CompletedProcess([*command, *argv], os.waitstatus_to_exitcode(reply["status"]),
                                       _decode(captured[out_r]), None if stderr_to_stdout else _decode(captured[err_r]))


def spawn_cli(args: list[str], env: dict[str, str] | None = None, cwd: Path | str | None = None, *,
              inherit_env: bool = True, fresh: bool = False, stdout=None, stderr=None,
              start_new_session: bool = False, text: bool = True, module: str = "helmflow.cli",
              code: str | None = None) -> subprocess.Popen | ForkedCommand:
    """The real ``helmflow`` command started in the background, as ``subprocess.Popen`` starts it (``stdout`` and
    ``stderr``: ``subprocess.PIPE``, ``STDOUT``, ``DEVNULL``, a file, or None for this process's own), forked from
    the fork server like :func:`run_cli`'s commands. What comes back has the part of ``Popen``'s interface the tests
    use (``pid``, ``poll``, ``wait``, ``communicate``, ``send_signal``, ``terminate``, ``kill``, ``stdout``,
    ``returncode``). ``fresh=True``, or an environment that changes how the interpreter starts, gives a real
    ``Popen`` of ``python -m helmflow.cli``. ``module="prefect"``: Prefect's own command (``python -m prefect``);
    ``code``: a script, as ``python -c code args...`` (see :func:`run_python`)."""
    full_env = dict(os.environ, **(env or {})) if inherit_env else dict(env or {})
    workdir = str(cwd or REPO)
    if not fresh and os.environ.get("HELMFLOW_TEST_FORK", "1") != "0" and _forkable(full_env):
        return ForkedCommand(list(args), full_env, workdir, stdout, stderr, start_new_session, text, module, code)
    command = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", module]
    return subprocess.Popen([*command, *args], env=full_env, cwd=workdir, stdout=stdout,
                            stderr=stderr, text=text, start_new_session=start_new_session)


class ForkedCommand:
    """A command forked from the fork server and maybe still running. It is not this process's child: its wait
    status comes from the server's watcher over the request's socket."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, stdout, stderr, new_session: bool,
                 text: bool, module: str = "helmflow.cli", code: str | None = None) -> None:
        import json
        import socket

        self.args = [sys.executable, *(("-c", code) if code is not None else ("-m", module)), *argv]
        self.returncode: int | None = None
        self.stdout = self.stderr = None
        self._text = text
        self._captured: dict[str, object] = {}
        self._readers: list = []
        close: list[int] = []

        def target(spec, name: str) -> int:
            if spec == subprocess.PIPE:
                r, w = os.pipe()
                setattr(self, name, os.fdopen(r, "r") if text else os.fdopen(r, "rb"))
                close.append(w)
                return w
            if spec == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_WRONLY)
                close.append(fd)
                return fd
            if spec is None:
                return 1 if name == "stdout" else 2
            return spec if isinstance(spec, int) else spec.fileno()

        out_fd = target(stdout, "stdout")
        err_fd = out_fd if stderr == subprocess.STDOUT else target(stderr, "stderr")
        path = _fork_server()
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._conn.connect(path)
            request = {"argv": argv, "env": env, "cwd": cwd, "setsid": new_session, "module": module, "code": code}
            socket.send_fds(self._conn, [json.dumps(request).encode() + b"\n"], [out_fd, err_fd])
        finally:
            for fd in close:
                os.close(fd)
        self._buf = b""
        first = json.loads(self._line(None) or b"{}")
        if "pid" not in first:
            raise RuntimeError(f"the CLI fork server refused the command: {first}")
        self.pid: int = first["pid"]

    def _line(self, timeout: float | None) -> bytes | None:
        """The watcher's next line; None if it has not come within ``timeout`` s (0: do not wait)."""
        import socket

        self._conn.settimeout(timeout)
        try:
            while b"\n" not in self._buf:
                chunk = self._conn.recv(4096)
                if not chunk:
                    raise RuntimeError(f"the fork server's watcher of {self.args} went away")
                self._buf += chunk
        except (BlockingIOError, TimeoutError, socket.timeout):
            return None
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _status(self, timeout: float | None) -> int | None:
        import json

        if self.returncode is None:
            line = self._line(timeout)
            if line is not None:
                self.returncode = os.waitstatus_to_exitcode(json.loads(line)["status"])
                self._conn.close()
        return self.returncode

    def poll(self) -> int | None:
        return self._status(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def communicate(self, input=None, timeout: float | None = None):  # noqa: A002 - Popen's name
        """Both pipes read to their end and the exit waited for, as ``Popen.communicate`` does."""
        import threading
        import time

        assert input is None, "a forked command's stdin is /dev/null"
        if not self._readers:
            for name in ("stdout", "stderr"):
                stream = getattr(self, name)
                if stream is not None:
                    def drain(stream=stream, name=name) -> None:
                        with stream:
                            self._captured[name] = stream.read()
                    self._readers.append(threading.Thread(target=drain, daemon=True))
                    self._readers[-1].start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in self._readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._captured.get("stdout"), self._captured.get("stderr")

    def send_signal(self, sig: int) -> None:
        import signal as _signal

        if self.poll() is None:
            os.kill(self.pid, _signal.Signals(sig))

    def terminate(self) -> None:
        import signal as _signal

        self.send_signal(_signal.SIGTERM)

    def kill(self) -> None:
        import signal as _signal

        self.send_signal(_signal.SIGKILL)


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
