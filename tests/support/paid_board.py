"""A board of paid requests to the dev server, and driving ``helmflow run`` on it as a process that can
be killed: what the crash-safety, lease and fail-fast tests share."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import yaml

from tests.support.cli import REPO, run_cli, spawn_cli

SCENARIOS, PER_SCENARIO, CONCURRENCY = 4, 100, 4


def board_args(tmp_path: Path, dev_server, scenarios: int = SCENARIOS, per_scenario: int = PER_SCENARIO,
               **deployment) -> list[str]:
    """A board of ``scenarios`` arithmetic scenarios x one dev-server deployment: as many query
    tasks of one deployment as scenarios, in parallel, as a real board has."""
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/paid", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url,
         "max_concurrency": CONCURRENCY, "retry": {"attempts": 4, "base_s": 0.05, "cap_s": 0.5, "timeout_s": 30},
         **deployment},
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "paid", "version": "1", "models": ["dev/paid"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": per_scenario, "seed": k},
                       "label": f"arith-{k}"} for k in range(scenarios)],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(tmp_path / "store")]


def start_cli(args: list[str], env: dict[str, str] | None = None, fresh: bool = False):
    """``helmflow run`` in the background (forked like the suite's other commands; ``fresh``: a new interpreter),
    both streams in ``stdout``."""
    return spawn_cli(args, env=dict(COLUMNS="200", **(env or {})), cwd=REPO, fresh=fresh,
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for_requests(dev_server, at_least: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while dev_server.stats()["requests"] < at_least:
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {at_least} requests: {proc.stdout.read()}")
        assert time.monotonic() < deadline, f"fewer than {at_least} requests within {timeout} s"
        time.sleep(0.05)


WAITING = "waiting for it (--wait)"  # what a `helmflow run --wait` says once it queues behind another run


def wait_for_line(proc, text: str, timeout: float = 240) -> str:
    """Read ``proc``'s output (``start_cli``'s, both streams) until a line containing ``text``; returns what was
    read. The rest stays in ``proc.stdout`` for ``communicate``."""
    seen: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            seen.append(line)
            if text in line:
                found.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.05):
        if not reader.is_alive():
            raise AssertionError(f"output ended without {text!r}: {''.join(seen)}")
        assert time.monotonic() < deadline, f"no {text!r} within {timeout} s: {''.join(seen)}"
    return "".join(seen)


def run_cli_text(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_cli(*args, env={"COLUMNS": "400", **env}, timeout=600, stderr_to_stdout=True)
