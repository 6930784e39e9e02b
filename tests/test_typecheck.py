"""mypy passes over the plugin API: every scenario, the client and metric bases (the @metric registry) and records.

clients/, scenarios/, metrics/, flows/ and tasks/ install as helmflow.* (pyproject package-dir), which an
editable install does with an import hook that mypy cannot follow; the test lays the same tree out of
symlinks and checks it with the repository's [tool.mypy] configuration.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import REPO

MAPPED = ("scenarios", "clients", "metrics", "flows", "tasks")
CHECKED = ["helmflow.scenarios", "helmflow.clients.base", "helmflow.metrics.base",
           "helmflow.records"]


def test_mypy_finds_nothing(tmp_path):
    tree = tmp_path / "tree" / "helmflow"
    tree.mkdir(parents=True)
    for entry in (REPO / "helmflow").iterdir():
        (tree / entry.name).symlink_to(entry)
    for name in MAPPED:
        (tree / name).symlink_to(REPO / name)
    args = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
            "--cache-dir", str(tmp_path / "cache")]
    for module in CHECKED:
        args += ["-p", module]
    out = subprocess.run(args, capture_output=True, text=True, cwd=tree.parent, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
