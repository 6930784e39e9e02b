"""The CLI's fast paths: no Prefect import, and bad input exits 2 with one clear line before any work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.cli import run_cli


@pytest.mark.parametrize("args", [["--help"], ["list", "boards"], ["list", "scenarios"], ["list", "models"], ["show", "demo"]])
def test_fast_commands_do_not_import_prefect(args):
    code = (
        "import sys; from helmflow.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "assert 'prefect' not in sys.modules, 'prefect was imported'\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_help_imports_no_pydantic_numpy_or_pyarrow():
    """``helmflow --help`` builds every command's parser and nothing else: the run request model
    (pydantic, about a third of the command's start-up) is imported when a command runs."""
    code = (
        "import sys; from helmflow.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'numpy', 'pyarrow', 'fsspec', 'prefect'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


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
        # each said nothing about the flag (a pydantic dump) or was accepted silently
        (["run", "demo", "--max-instances", "0"], "--max-instances: must be 1 or more, got 0"),
        (["run", "demo", "--max-instances", "-5", "--dry-run"], "--max-instances: must be 1 or more, got -5"),
        (["eval", "dyck_language:num_parenthesis_pairs=2", "--models", "offline/echo", "--max-instances", "0"],
         "--max-instances: must be 1 or more"),
        (["run", "demo", "--models", "offline/echo", "--models", "offline/solver"], "--models given twice"),
        (["run", "demo", "--max-instances", "3", "--max-instances", "4", "--dry-run"], "--max-instances given twice"),
        (["run", "demo", "--dry-run", "--dry-run"], "--dry-run given twice"),
        (["run", "demo", "--models", "offline/echo,offline/solver,offline/echo"], "offline/echo given twice"),
        (["run", "demo", "--scenarios", "dyck-3,dyck-3"], "dyck-3 given twice"),
        (["run", "demo", "--board-file", "flows/demo.yaml"], "not both"),
        (["retry", "not-a-run"], "'not-a-run' is not a flow run id"),
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


@pytest.mark.parametrize("flag", ["--models-file", "--board-file"])
def test_non_utf8_yaml_file_is_named(flag, tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("deployments:\n  - {name: caf\xe9, client: offline, model: echo}\n".encode("latin-1"))
    args = ["run", "demo", "--models-file", str(bad)] if flag == "--models-file" else ["run", "--board-file", str(bad)]
    out = run_cli(*args, "--dry-run", cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{bad} is not UTF-8 text" in lines[0], out.stderr


def test_repeatable_options_stay_repeatable(tmp_path):
    plugin = tmp_path / "p.py"
    plugin.write_text("")
    out = run_cli("--plugin", str(plugin), "--plugin", str(plugin), "show", "demo")
    assert out.returncode == 0, out.stderr
