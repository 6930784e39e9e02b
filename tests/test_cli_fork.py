"""The suite's ``helmflow`` commands come from a fork server (tests/support/cli_fork.py): each must behave as a new
``python -m helmflow.cli`` process would, with its own environment, directory, arguments, streams, exit code and
random state, and with Prefect's settings read from its own environment."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from tests.support.cli import run_cli, run_prefect, run_python, spawn_cli

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


def test_a_command_past_its_timeout_is_killed_and_its_stacks_say_where_it_waited(tmp_path):
    (tmp_path / "slow.py").write_text("import time\n\ndef waiting_here():\n    time.sleep(60)\n\nwaiting_here()\n")
    with pytest.raises(subprocess.TimeoutExpired) as timed_out:
        run_cli("--plugin", str(tmp_path / "slow.py"), "list", "boards", timeout=3)
    assert "in waiting_here" in timed_out.value.stderr, timed_out.value.stderr


def test_an_interpreter_variable_gets_a_fresh_interpreter(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['fork_probe_site'] = sys\n")
    (tmp_path / "probe.py").write_text("import sys\nprint('SITE', 'fork_probe_site' in sys.modules)\n")
    out = run_cli("--plugin", str(tmp_path / "probe.py"), "list", "boards", env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0 and "SITE True" in out.stdout, out.stderr


def test_a_background_command_can_be_waited_for_signalled_and_put_in_a_session_of_its_own(tmp_path):
    """``spawn_cli``: what the tests do with ``subprocess.Popen`` of ``helmflow`` works on a forked command."""
    import signal

    (tmp_path / "probe.py").write_text(PROBE)
    done = spawn_cli(["--plugin", "probe.py", "list", "boards"], cwd=tmp_path, env={"FORK_PROBE": "bg"},
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert not isinstance(done, subprocess.Popen)  # forked, not a new interpreter
    out, err = done.communicate(timeout=120)
    assert done.returncode == 0 and err is None and "demo" in out, out
    seen = json.loads(next(x for x in out.splitlines() if x.startswith("PROBE "))[len("PROBE "):])
    assert seen["pid"] == done.pid and seen["value"] == "bg" and seen["cwd"] == str(tmp_path)

    (tmp_path / "slow.py").write_text("import os, time\nprint('PGID', os.getpgid(0), flush=True)\ntime.sleep(60)\n")
    slow = spawn_cli(["--plugin", str(tmp_path / "slow.py"), "list", "boards"], stdout=subprocess.PIPE,
                     start_new_session=True)
    assert slow.stdout.readline().split() == ["PGID", str(slow.pid)]  # the leader of a group of its own
    assert slow.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        slow.wait(0.5)
    os.killpg(slow.pid, signal.SIGKILL)
    assert slow.wait(30) == -signal.SIGKILL and slow.poll() == -signal.SIGKILL
    slow.stdout.close()


def test_prefects_own_command_is_forked_with_the_environment_it_is_given(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_LOGGING_LEVEL"}
    env.update(PREFECT_API_URL="http://127.0.0.1:9/api", PREFECT_HOME=str(tmp_path / "home"))
    out = run_prefect("--no-prompt", "config", "view", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PREFECT_API_URL='http://127.0.0.1:9/api' (from env)" in out.stdout
    assert f"PREFECT_HOME='{tmp_path / 'home'}' (from env)" in out.stdout
    assert "PREFECT_LOGGING_LEVEL" not in out.stdout  # left out of its environment: not this process's setting


def test_a_script_runs_as_python_c_runs_it(tmp_path):
    code = ("import os, sys\nprint(__name__, sys.argv, os.environ['FORK_PROBE'], os.getcwd())\n"
            "sys.exit(int(sys.argv[1]))\n")
    out = run_python(code, "3", env={"FORK_PROBE": "script"}, cwd=tmp_path)
    assert out.returncode == 3 and out.args[1:3] == ["-c", code], out.stderr
    assert out.stdout.strip() == f"__main__ ['-c', '3'] script {tmp_path}"
    assert run_python("raise ValueError('in the script')").stderr.strip().endswith("ValueError: in the script")
