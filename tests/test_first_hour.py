"""docs/first-hour.md, run as written: every ```bash block of the page in one shell, in order (the clone
excepted: the test runs in the checkout), with the storage, Prefect server and ports of the test. The page's
``python3`` is a virtual environment's made for the test, which sees this interpreter's packages: the page's
install puts the ``helmflow`` command the rest of the page runs there, and nothing outside the test changes."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

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


def has_build_requirements() -> bool:
    """Whether this interpreter has every package ``[build-system] requires`` names, at a version it allows."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    for line in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]:
        req = Requirement(line)
        try:
            if not req.specifier.contains(version(req.name), prereleases=True):
                return False
        except PackageNotFoundError:
            return False
    return True


def page_venv(root: Path) -> Path:
    """A virtual environment without pip of its own whose interpreter also sees this one's packages (pip, the
    dependencies, setuptools): ``site.addsitedir`` of each, after the environment's own, so the page's editable
    install comes first."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    dirs = [d for d in [*site.getsitepackages(), sysconfig.get_path("purelib")] if Path(d).is_dir()]
    lines = [f"import site; site.addsitedir({d!r})\n" for d in dict.fromkeys(dirs)]
    (purelib / "_outer_site.pth").write_text("".join(lines))
    return root


def test_the_first_hour_page_runs_as_written(prefect_server, tmp_path):
    script = page_script()
    dev, web = free_port(), free_port()  # the page's ports, moved to free ones: other tests run beside this one
    script = script.replace("8765", str(dev)).replace("8000", str(web))
    # the page's install, of the checkout, with what this interpreter has already: its dependencies, and its build
    # backend where it is one pyproject.toml asks for (no isolated build environment fetched for each run)
    build = " --no-build-isolation" if has_build_requirements() else ""
    script = script.replace("python3 -m pip install -e .", f"python3 -m pip install -q --no-deps{build} -e {REPO}")
    venv = page_venv(tmp_path / "venv")
    wrapped = f"set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{script}\n"
    env = dict(os.environ, COLUMNS="120", HELMFLOW_STORAGE=str(tmp_path / "helmflow-store"), VIRTUAL_ENV=str(venv),
               PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONHOME", None)
    out = subprocess.run(["bash", "-c", wrapped], cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert text.count("demo — release") >= 2 and "me/my-model" in text  # the demo, then the board with your model
    assert "subset of the board" in text and 'optgroup label="subset releases"' in out.stdout
    assert "Traceback" not in text
    assert (venv / "bin" / "helmflow").is_file()  # the command the page ran is the one its install made
