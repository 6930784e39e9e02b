"""Stop when told, and leave nothing running: Ctrl-C, SIGTERM and the temporary Prefect server.

On the first SIGINT or SIGTERM no new request starts (the query path checks :func:`stop_requested`
once a request holds its slot), the requests in flight get a short grace to finish and be spooled,
open journals move what they hold to storage, and the process exits 130 after one line. A second
signal exits at once. Exiting skips the flow's remaining tasks on purpose: everything finished is
in the journal (spooled rows that did not reach storage are recovered by the next run), so the next
run re-sends none of it.

Prefect starts its temporary API server (no ``PREFECT_API_URL``) as a child in our process group,
so a terminal's Ctrl-C killed it first and the run then hung on a dead API; and a killed run left it
running. :class:`TemporaryServer` starts it ourselves, from the main thread, in its own
session (a Ctrl-C to our group does not reach it) and with ``PR_SET_PDEATHSIG`` (the kernel stops
it when we die, even by SIGKILL).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

EXIT_INTERRUPTED = 130
GRACE_S = 3.0  # for requests in flight to finish (then they are abandoned: never journaled, re-sent)
FLUSH_S = 5.0  # for open journals to move their spools to storage (else the next run recovers them)

_stop = threading.Event()
_in_flight = 0  # requests on the wire; changed on the I/O loop only


def stop_requested() -> bool:
    return _stop.is_set()


def request_stop() -> None:
    _stop.set()


def reset() -> None:
    """Forget a stop (tests that run several boards in one process)."""
    _stop.clear()


class InFlight:
    """Counts a request on the wire (used on the I/O loop, around the provider call)."""

    def __enter__(self) -> None:
        global _in_flight
        _in_flight += 1

    def __exit__(self, *exc: object) -> None:
        global _in_flight
        _in_flight -= 1


def in_flight() -> int:
    return _in_flight


# --------------------------------------------------------------------------- signals
def install_signal_handlers(flush: Callable[[float], Any], say: Callable[[str], None]) -> Callable[[], None]:
    """SIGINT and SIGTERM stop sending, wait for what is in flight, ``flush`` and exit 130 (call
    from the main thread); returns what puts the previous handlers back.

    A Python signal handler runs in the main thread only, and only once that thread wakes: blocked
    on a task's future it may not for many seconds, while the I/O thread keeps sending (measured:
    289 requests after the signal). So the C-level handler writes each signal to a pipe
    (``signal.set_wakeup_fd``) and a thread of ours acts on it at once.
    """
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    count = 0
    _installed.append((flush, say))

    def on_signal(signum: int) -> None:
        nonlocal count
        count += 1
        if count > 1:
            os._exit(EXIT_INTERRUPTED)  # the second signal: now
        name = signal.Signals(signum).name
        _begin_exit(f"helmflow: {name}: sending no new requests; {in_flight()} in flight get {GRACE_S:g} s, finished "
                    f"responses are journaled and will not be sent again; exiting (again to exit at once)",
                    EXIT_INTERRUPTED)

    def watch() -> None:
        while (got := os.read(read_fd, 1)) and got != b"\0":
            if got[0] in (signal.SIGINT, signal.SIGTERM):
                on_signal(got[0])
        os.close(read_fd)

    threading.Thread(target=watch, name="helmflow-signals", daemon=True).start()
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = {sig: signal.signal(sig, lambda signum, frame: None) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        with contextlib.suppress(ValueError):
            _installed.remove((flush, say))
        for sig, old in previous.items():
            signal.signal(sig, old)
        signal.set_wakeup_fd(previous_fd)
        os.write(write_fd, b"\0")  # the watcher's end
        os.close(write_fd)

    return restore


_installed: list[tuple[Callable[[float], Any], Callable[[str], None]]] = []  # (flush, say) of the handlers in force
_notes: list[Callable[[], str | None]] = []  # more to say on the way out (batches left running)


def add_exit_note(note: Callable[[], str | None]) -> None:
    """``note()`` is said after the stop line, when it has something to say (None: nothing)."""
    if note not in _notes:
        _notes.append(note)
_exiting = threading.Lock()


def halt(line: str, code: int) -> None:
    """Stop as on Ctrl-C, from any thread, with ``line`` and exit ``code`` (a run that must not send
    any more: its board's lease lapsed). Without :func:`install_signal_handlers` in force (a library
    caller) nothing new is sent and ``line`` is logged; the caller's requests then fail as interrupted."""
    if not _installed:
        if not _stop.is_set():
            logging.getLogger("helmflow").error(line)
        _stop.set()
        return
    _begin_exit(line, code)


def _begin_exit(line: str, code: int) -> None:
    _stop.set()
    if not _exiting.acquire(blocking=False):
        return  # already on the way out
    flush, say = _installed[-1]
    say(line)
    for note in list(_notes):
        with contextlib.suppress(Exception):  # a note must never keep the process from stopping
            if text := note():
                say(text)
    _silence_logs()  # the flow's tasks now fail as interrupted: that is not news
    threading.Thread(target=_exit_soon, args=(flush, code), name="helmflow-stop", daemon=True).start()


def _exit_soon(flush: Callable[[float], Any], code: int = EXIT_INTERRUPTED) -> None:
    deadline = time.monotonic() + GRACE_S
    while in_flight() > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    done = threading.Thread(target=flush, args=(FLUSH_S,), daemon=True)
    done.start()
    done.join(FLUSH_S)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not sys.exit: the flow's remaining tasks must not run


def end_process(code: int) -> None:
    """Leave the process with ``code`` once a command has returned, skipping native teardown.

    pyarrow's global thread pools can abort the interpreter's final teardown with "terminate called
    without an active exception" (SIGABRT, exit -6; apache/arrow#34314, open upstream): at random,
    more often under load, after every file was written and the release printed, so a finished
    nightly run would report a crash. Everything Python-level still runs first: the command's
    non-daemon threads are joined and the ``atexit`` handlers run (Prefect's log and event flushers
    among them), then the standard streams are flushed; only the C++ static destructors, where that
    abort happens, are skipped by ``os._exit``.
    """
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # what the interpreter's own exit would run now
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing left to say
            pass
    os._exit(code)


def _silence_logs() -> None:
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.CRITICAL + 1)


# --------------------------------------------------------------------------- the temporary Prefect server
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class TemporaryServer:
    """Prefect's temporary API server, started by helmflow instead of by Prefect's client.

    The same command and environment Prefect's ``SubprocessASGIServer`` uses (uvicorn on
    ``prefect.server.api.server:create_app``, UI off, its ephemeral flags), but spawned without
    importing that module here: in the CLI process the import alone took 4–10 s (the whole server
    app, measured under load 10), and the server child imports it again anyway. Spawned as early as
    the CLI knows a flow will run, so the server's start-up overlaps the CLI's own imports and
    planning on the second core; :meth:`wait` then waits only for what is left. In its own session
    with ``PR_SET_PDEATHSIG`` (see the module doc); stopped at exit after Prefect's workers flush.
    """

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.proc = self._spawn()
        atexit.register(self.stop)

    def _spawn(self) -> subprocess.Popen:
        import importlib.util
        import socket
        from pathlib import Path

        with socket.socket() as sock:  # a free port (uvicorn exits 3 if someone takes it first: respawned)
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        # Prefect is not imported here (seconds: the child imports it anyway, at the same time). Its
        # settings reach the child as they reach this process: environment, profile and prefect.toml.
        spec = importlib.util.find_spec("prefect")
        site = Path(spec.origin).parent.parent if spec and spec.origin else Path(sys.prefix)
        env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
        return subprocess.Popen(  # noqa: PLW1509 - preexec_fn only calls prctl
            [sys.executable, "-m", "uvicorn", "--app-dir", str(site), "--factory",
             "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(self.port),
             "--log-level", "error", "--lifespan", "on"],
            env=env, start_new_session=True, preexec_fn=_die_with_parent,
        )

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def wait(self, timeout_s: float) -> str:
        """The API URL once ``/health`` answers; ``TimeoutError`` ``timeout_s`` after the spawn,
        ``ChildProcessError`` if the server exits first."""
        import httpx

        deadline = self.started + timeout_s
        with httpx.Client() as client:
            while True:  # asked at least once: it may have come up while the CLI was busy
                if self.proc.poll() == 3:  # the port was taken meanwhile
                    self.proc = self._spawn()
                try:
                    if client.get(f"{self.api_url}/health", timeout=5).status_code == 200:
                        return self.api_url
                except httpx.HTTPError:
                    pass
                if self.proc.poll() not in (None, 3):
                    raise ChildProcessError(f"exited with code {self.proc.returncode}")
                if time.monotonic() >= deadline:
                    raise TimeoutError("no answer")
                time.sleep(0.1)

    def stop(self) -> None:
        terminate(self.proc, grace_s=5)


def terminate(proc: subprocess.Popen, grace_s: float) -> None:
    """Stop a child we started: SIGTERM, then SIGKILL if it has not exited after ``grace_s``; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_temporary_server() -> TemporaryServer | None:
    """Spawn Prefect's temporary server now, guarded, unless ``$PREFECT_API_URL`` names a server
    (``None`` then, and off Linux, where Prefect starts its own on first use). An API URL set in a
    Prefect profile or prefect.toml is only known once Prefect is imported:
    :func:`helmflow.prefect_runtime.temporary_server` then stops this one unused."""
    if os.environ.get("PREFECT_API_URL") or not sys.platform.startswith("linux"):
        return None
    return TemporaryServer()
