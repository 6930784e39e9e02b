"""The CLI's fast paths: no Prefect import, and bad input exits 2 with one clear line before any work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize("args", [["--help"], ["list", "boards"], ["list", "scenarios"], ["list", "models"], ["show", "demo"]])
def test_fast_commands_do_not_import_prefect(args):
    code = (
        "import sys; from helmflow.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "assert 'prefect' not in sys.modules, 'prefect was imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_list_and_show_print_what_exists():
    assert "offline/solver" in run_cli("list", "models").stdout
    assert "arithmetic" in run_cli("list", "scenarios").stdout
    shown = run_cli("show", "demo", "--max-instances", "7")
    assert shown.returncode == 0 and "arithmetic-3" in shown.stdout and "7" in shown.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "nope"], "unknown board 'nope'"),
        (["run", "demo", "--models", "offline/solver,ghost"], "unknown model(s) ghost"),
        (["run", "demo", "--scenarios", "nothing"], "has no scenario nothing"),
        (["run", "demo", "--models-file", "/nonexistent/models.yaml"], "does not exist"),
        (["run", "demo", "--storage", "/proc/helmflow-store"], "not writable"),
        (["run"], "name a board"),
    ],
)
def test_bad_input_exits_2_before_any_work(args, message, tmp_path):
    out = run_cli(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert not (tmp_path / "helmflow-store").exists()


def test_malformed_models_file_exits_2(tmp_path):
    bad = tmp_path / "m.yaml"
    bad.write_text("deployments:\n  - {name: x, client: offline, model: m, tempurature: 1}\n")
    out = run_cli("run", "demo", "--models-file", str(bad), cwd=tmp_path)
    assert out.returncode == 2 and "tempurature: unknown field" in out.stderr
