"""The suite's ``helmflow`` commands come from a fork server (tests/support/cli_fork.py): each must behave as a new
``python -m helmflow.cli`` process would, with its own environment, directory, arguments, streams, exit code and
random state, and with Prefect's settings read from its own environment."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from tests.support.cli import run_cli

pytestmark = pytest.mark.slow  # starts the fork server (once per worker)

PROBE = textwrap.dedent("""
    import json, os, random, sys

    import prefect.settings

    print("PROBE " + json.dumps({
        "pid": os.getpid(), "cwd": os.getcwd(), "path0": sys.path[0], "argv": sys.argv[1:],
        "value": os.environ.get("FORK_PROBE"), "random": random.random(),
        "api": prefect.settings.get_current_settings().api.url,
    }))
""")


def probe(out: subprocess.CompletedProcess) -> dict:
    line = next(x for x in out.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line[len("PROBE "):])


def test_each_command_gets_its_own_process_environment_directory_and_random_state(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    first = run_cli("--plugin", "probe.py", "list", "boards", cwd=tmp_path,
                    env={"FORK_PROBE": "one", "PREFECT_API_URL": "http://127.0.0.1:9/api"})
    second = run_cli("--plugin", "probe.py", "list", "boards", cwd=tmp_path, env={"PREFECT_API_URL": ""})
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a, b = probe(first), probe(second)
    assert a["pid"] != b["pid"] and os.getpid() not in (a["pid"], b["pid"])
    assert a["cwd"] == a["path0"] == str(tmp_path)  # as `python -m` puts the working directory first
    assert a["argv"] == ["--plugin", "probe.py", "list", "boards"]
    assert (a["value"], b["value"]) == ("one", None)  # nothing of the first command's environment is left
    assert a["api"] == "http://127.0.0.1:9/api" and b["api"] in (None, "")
    assert a["random"] != b["random"]  # reseeded in each process, not the server's state copied
    assert "demo" in first.stdout


def test_exit_codes_and_streams_are_the_commands(tmp_path):
    bad = run_cli("show", "no-such-board")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("helmflow: error: unknown board 'no-such-board'")
    merged = run_cli("show", "no-such-board", stderr_to_stdout=True)
    assert merged.returncode == 2 and merged.stderr is None and "unknown board" in merged.stdout
    usage = run_cli("no-such-command")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    (tmp_path / "boom.py").write_text("raise RuntimeError('plugin failed on import')\n")
    crash = run_cli("--plugin", str(tmp_path / "boom.py"), "list", "boards")
    assert crash.returncode == 1 and "RuntimeError: plugin failed on import" in crash.stderr


def test_a_command_past_its_timeout_is_killed(tmp_path):
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli("--plugin", str(tmp_path / "slow.py"), "list", "boards", timeout=3)


def test_an_interpreter_variable_gets_a_fresh_interpreter(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['fork_probe_site'] = sys\n")
    (tmp_path / "probe.py").write_text("import sys\nprint('SITE', 'fork_probe_site' in sys.modules)\n")
    out = run_cli("--plugin", str(tmp_path / "probe.py"), "list", "boards", env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0 and "SITE True" in out.stdout, out.stderr
