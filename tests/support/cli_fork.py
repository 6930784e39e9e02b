"""A fork server for the test suite's ``helmflow`` commands: each command still runs in a process of its own,
with its own arguments, environment, working directory, standard streams and exit code, but that process is
forked from one that has already imported Prefect, pandas, pyarrow and the openai SDK, instead of paying
those imports again (about 3 CPU-s a command, several hundred commands a suite).

Run as ``python -m tests.support.cli_fork SOCKET``: it imports, then serves one request per connection on a Unix
socket. A request is a JSON object (``argv``, ``env``, ``cwd``; ``module``: ``prefect`` for Prefect's own command
instead of ``helmflow.cli``; ``code``: a script run as ``python -c`` runs it; ``setsid``: a session of its own, as
``start_new_session``) sent with the stdout and stderr descriptors
(``SCM_RIGHTS``); the server forks a watcher, which forks the command and writes back its pid, then its wait
status. The server itself holds no thread and no event loop when it forks (checked at every fork).

What a fresh interpreter does at start-up is done again in the command's process: the environment is the
request's, Prefect's settings and logging are rebuilt from it, ``sys.argv``, ``sys.path[0]`` and the working
directory are those of ``python -m helmflow.cli`` in that directory, signals are at their defaults, and the
random generators are reseeded. One difference remains: Prefect's log handlers are installed from the start,
so a warning that a new process logs before it imports Prefect (Python's bare "last resort" line there) is shown in
Prefect's format here. A command whose environment changes how the interpreter itself starts
(``PYTHON*`` variables) is run as a plain subprocess instead (:func:`tests.support.cli.run_cli` decides).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys
import threading

# What most commands import, none of it reading the environment when imported. Not here: huggingface_hub,
# datasets and transformers (their constants read HF_* variables at import), torch.
PRELOAD = (
    "helmflow.cli",
    "prefect",
    "prefect.flows",
    "prefect.tasks",
    "prefect.client.orchestration",
    "pandas",
    "pyarrow",
    "pyarrow.parquet",
    "openai",
    "httpx",
    "fsspec",
    "numpy",
    "helmflow.pipeline",
)

_MAX_FDS = 2


def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    chunks: list[bytes] = []
    while True:
        msg, ancdata, _flags, _addr = conn.recvmsg(1 << 20, socket.CMSG_SPACE(_MAX_FDS * fds.itemsize))
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
        if not msg:
            break
        chunks.append(msg)
        if msg.endswith(b"\n"):
            break
    return json.loads(b"".join(chunks)), list(fds)


def _run(request: dict) -> None:
    import faulthandler
    import random
    import runpy
    import tempfile

    import numpy
    import prefect.context
    import prefect.logging.configuration

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the harness asks for the stacks of a command it times out
    random.seed()
    numpy.random.seed()
    tempfile.tempdir = None  # found again from this environment's TMPDIR
    prefect.context.refresh_global_settings_context()
    prefect.logging.configuration.setup_logging(incremental=False)
    module = request.get("module", "helmflow.cli")  # or "prefect": Prefect's own command, as `python -m prefect`
    code = request.get("code")  # or a script, as `python -c CODE ARGS...` runs it
    sys.argv = ["-c" if code is not None else module.split(".")[0], *request["argv"]]
    try:
        if code is not None:
            import types

            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(code, "<string>", "exec"), main.__dict__)
        else:  # runpy puts the module's own path first, as -m does
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
        _flush_and_exit(code)
    except BaseException:  # noqa: BLE001 - what an uncaught exception does at the top of a fresh interpreter
        import traceback

        traceback.print_exc()
        _flush_and_exit(1)
    _flush_and_exit(0)


def _flush_and_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _serve_one(conn: socket.socket) -> None:
    """In the watcher (a child of the server): fork the command, report its pid, wait, report its status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server's SIG_IGN would reap the command before our wait
    request, fds = _recv_request(conn)
    out_fd, err_fd = fds
    pid = os.fork()
    if pid == 0:
        conn.close()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in {null, out_fd, err_fd}:
            if fd > 2:
                os.close(fd)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            if request.get("setsid"):  # Popen's start_new_session: a process group (and session) of its own
                os.setsid()
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.path[0] = os.getcwd()
            _run(request)
        finally:
            os._exit(120)
    os.close(out_fd)
    os.close(err_fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    conn.sendall(json.dumps({"status": status}).encode() + b"\n")
    conn.close()


def serve(path: str) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if threading.active_count() != 1:  # a fork with a thread running would copy its locks mid-use
            conn.sendall(json.dumps({"error": f"fork server has {threading.active_count()} threads"}).encode() + b"\n")
            conn.close()
            continue
        if os.fork() == 0:
            listener.close()
            try:
                _serve_one(conn)
            finally:
                os._exit(0)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
