"""docs/first-hour.md, run as written: every ```bash block of the page in one shell, in order (the clone
excepted: the test runs in the checkout), with the storage, Prefect server and ports of the test."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.support.cli import REPO
from tests.support.processes import free_port

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "first-hour.md"
NOT_RUN = "# not run by the test"


def page_script() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(blocks) >= 4, "the page lost its commands"
    lines = [ln for block in blocks for ln in block.splitlines() if NOT_RUN not in ln]
    assert any(ln.startswith("git clone") for block in blocks for ln in block.splitlines())  # the page starts there
    return "\n".join(lines)


def test_the_first_hour_page_runs_as_written(prefect_server, tmp_path):
    script = page_script()
    dev, web = free_port(), free_port()  # the page's ports, moved to free ones: other tests run beside this one
    script = script.replace("8765", str(dev)).replace("8000", str(web))
    script = script.replace("python3 -m pip install -e .", f"python3 -m pip install -q --no-deps -e {REPO}")
    wrapped = f"set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{script}\n"
    out = subprocess.run(["bash", "-c", wrapped], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, COLUMNS="120", HELMFLOW_STORAGE=str(tmp_path / "helmflow-store")))
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert text.count("demo — release") >= 2 and "me/my-model" in text  # the demo, then the board with your model
    assert "subset of the board" in text and 'optgroup label="subset releases"' in out.stdout
    assert "Traceback" not in text
