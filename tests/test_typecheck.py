"""mypy passes over the whole package: the plugin API (scenarios, clients, @metric, records) and the core.

clients/, scenarios/, metrics/, flows/ and tasks/ install as helmflow.* (pyproject package-dir), which an
editable install does with an import hook that mypy cannot follow; the test lays the same tree out of
symlinks and checks it with the repository's [tool.mypy] configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.cli import REPO

MAPPED = ("scenarios", "clients", "metrics", "flows", "tasks")


def modules() -> list[str]:
    found = []
    for root, prefix in [(REPO / "helmflow", "helmflow")] + [(REPO / m, f"helmflow.{m}") for m in MAPPED]:
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join((prefix, *parts)).removesuffix(".__init__")
            found.append(name)
    return found


def test_the_package_is_walked():
    names = modules()
    assert {"helmflow.records", "helmflow.scenarios.base", "helmflow.clients.base", "helmflow.pipeline",
            "helmflow.cli.runner", "helmflow.tasks.results"} <= set(names)
    assert len(names) > 100


@pytest.mark.slow
def test_mypy_finds_nothing(tmp_path):
    tree = tmp_path / "tree" / "helmflow"
    tree.mkdir(parents=True)
    for entry in (REPO / "helmflow").iterdir():
        (tree / entry.name).symlink_to(entry)
    for name in MAPPED:
        (tree / name).symlink_to(REPO / name)
    args = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
            "--cache-dir", os.devnull]
    for module in modules():
        args += ["-m", module]
    out = subprocess.run(args, capture_output=True, text=True, cwd=tree.parent, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
