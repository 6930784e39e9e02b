"""The repository stays clean under its ruff configuration (pyproject: pyflakes, syntax checks, import order,
120-column lines outside tests/ and benchmarks/)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import REPO


def test_ruff_finds_nothing():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(REPO)],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
