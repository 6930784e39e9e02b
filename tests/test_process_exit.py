"""A finished command exits with its own code, whatever native libraries do at teardown.

CI saw a finished `helmflow run` (release printed, nothing left to write) exit -6 with "terminate
called without an active exception": pyarrow's thread pools aborting in the C++ static destructors
that run after Python's own shutdown (apache/arrow#34314). That abort is random, so the test plants
a native exit handler that always aborts, through a ``--plugin`` file, and runs each entry point a
user has: the bare interpreter exit dies of it; helmflow's entry points must not, and must still run
the Python ``atexit`` handlers (Prefect flushes its logs and events there) and flush their output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO

PLUGIN = '''
import atexit, ctypes, os
libc = ctypes.CDLL(None)
# runs in exit(), after the interpreter's teardown, like a C++ static destructor
libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)
atexit.register(lambda: open(os.environ["ATEXIT_MARK"], "w").write("ran"))
'''


def _entry_points() -> dict[str, list[str]]:
    script = Path(sys.executable).with_name("helmflow")
    return {"python -m helmflow": [sys.executable, "-m", "helmflow"],
            "python -m helmflow.cli": [sys.executable, "-m", "helmflow.cli"],
            "helmflow script": [str(script) if script.exists() else shutil.which("helmflow") or "helmflow"]}


@pytest.fixture
def aborting_plugin(tmp_path):
    plugin = tmp_path / "aborts_at_exit.py"
    plugin.write_text(PLUGIN)
    return plugin


def test_the_planted_native_abort_kills_a_plain_interpreter_exit(tmp_path, aborting_plugin):
    """The reproduction: what CI saw, made certain."""
    mark = tmp_path / "mark"
    out = subprocess.run([sys.executable, str(aborting_plugin)], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "ATEXIT_MARK": str(mark)}, timeout=60)
    assert out.returncode == -6
    assert mark.read_text() == "ran"


@pytest.mark.parametrize("entry", sorted(_entry_points()))
@pytest.mark.parametrize("argv, code", [(["list", "scenarios"], 0), (["show", "demo", "--scenarios", "nope"], 2)])
@pytest.mark.slow
def test_every_entry_point_exits_with_the_commands_code(tmp_path, aborting_plugin, entry, argv, code):
    mark = tmp_path / "mark"
    out = subprocess.run([*_entry_points()[entry], "--plugin", str(aborting_plugin), *argv], cwd=REPO,
                         capture_output=True, text=True, env={**os.environ, "ATEXIT_MARK": str(mark)}, timeout=120)
    assert out.returncode == code, out.stdout + out.stderr
    assert mark.read_text() == "ran"  # Python's atexit handlers still ran
    if code == 0:
        assert "dyck_language" in out.stdout  # the output was flushed before the hard exit
    else:
        assert out.stderr.startswith("helmflow: error:") and "no scenario nope" in out.stderr


def test_a_usage_error_keeps_argparse_exit_code_and_message():
    """argparse leaves by SystemExit, before any plugin loads: the entry point keeps its code and words."""
    out = subprocess.run([*_entry_points()["helmflow script"], "list", "everything"], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert "argument what: invalid choice: 'everything'" in out.stderr
