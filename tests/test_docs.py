"""The documentation site builds without a warning, its generated pages follow the code, and the README
stays a front door."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from pydantic import BaseModel, Field

REPO = Path(__file__).resolve().parents[1]


def generator():
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "scripts" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strict_with_no_warning(tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        # the theme's and MkDocs' own banners about their future releases, not warnings about this site
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"},
    )
    seconds = time.monotonic() - started
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert not re.findall(r"(?m)^(?:WARNING|ERROR)\b.*", log), log
    site = tmp_path / "site"
    cli = (site / "reference" / "cli" / "index.html").read_text()
    config = (site / "reference" / "configuration" / "index.html").read_text()
    assert "helmflow run" in cli and "--max-instances" in cli
    assert "context_window" in config and "HELMFLOW_STORAGE" in config
    assert (site / "performance" / "index.html").exists() and (site / "analysis" / "index.html").exists()
    print(f"mkdocs build --strict: {seconds:.1f} s")


def test_the_cli_reference_has_every_command_and_option():
    from helmflow.cli import build_parser

    page = generator().cli_markdown()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name, sub in commands.items():
        assert f"## `helmflow {name}`" in page, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in page, (name, flag)


def test_the_configuration_reference_describes_every_field():
    from helmflow.records import Deployment
    from helmflow.settings import Settings

    gen = generator()
    page = gen.config_markdown()
    assert gen.MISSING == []  # every field of every model on the page has a description
    for field in Settings.model_fields:
        assert f"`HELMFLOW_{field.upper()}`" in page, field
    assert "`HELMFLOW_MIRROR_<NAME>`" in page
    for name in Deployment.model_fields:
        assert f"| `{name}` |" in page, name


def test_a_field_without_a_description_is_reported():
    class Example(BaseModel):
        documented: int = Field(1, description="says what it is")
        silent: str = "x"

    gen = generator()
    gen.MISSING.clear()
    table = "\n".join(gen.model_table(Example))
    assert "| `documented` | integer | `1` | says what it is |" in table
    assert gen.MISSING == [f"{Example.__module__}.Example.silent"]


def test_the_readme_is_a_front_door():
    readme = (REPO / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 250
    assert lines[2:6] == [
        "```bash",
        "python3 -m pip install -e . && python3 -m helmflow run demo      # install, then run the demo board",
        "./scripts/test.sh                                                  # install test needs, then run every test",
        "```",
    ]
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).exists(), link


def test_no_file_talks_about_how_the_work_was_organised():
    pattern = re.compile(r"issue [0-9]+|\bgoal [0-9]", re.IGNORECASE)
    found = []
    files = [REPO / "README.md"] + [p for d in ("docs", "benchmarks", "tests") for p in (REPO / d).rglob("*")
                                    if p.suffix in (".md", ".py", ".yaml", ".yml", ".txt")]
    for path in files:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line) and path != Path(__file__):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []
