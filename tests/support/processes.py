"""Child processes of the tests: free loopback ports, waiting for HTTP, stopping a process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Until ``url`` answers below 500; ``TimeoutError`` after ``timeout`` s, ``RuntimeError`` if ``proc`` exits.
    One client for every poll: ``httpx.get`` makes a client, and loads the CA certificates, each time (tens of
    CPU-ms a poll, many polls while a server starts)."""
    import httpx

    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"process for {url} exited with {proc.returncode}")
            try:
                if client.get(url).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def stop_process(proc: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM to the process group (children started with ``start_new_session``), SIGKILL after ``timeout`` s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
