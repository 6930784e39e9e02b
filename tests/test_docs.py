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

import pytest
from pydantic import BaseModel, Field

from tests.support.cli import run_cli

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


# --------------------------------------------------------------------------- the worked example, as written
def example_files(folder: Path) -> dict[str, Path]:
    """Each code block of docs/add-a-benchmark.md whose first line names a file (``# name.py``), written out."""
    page = (REPO / "docs" / "add-a-benchmark.md").read_text()
    written = {}
    for body in re.findall(r"```(?:python|yaml)\n(.*?)```", page, re.S):
        named = re.match(r"# ([\w.-]+\.(?:py|yaml))[ :\n]", body)
        if named:
            written[named.group(1)] = folder / named.group(1)
            written[named.group(1)].write_text(body)
    assert set(written) >= {"reverse_words.py", "reverse-board.yaml", "reverser.py", "dev-models.yaml"}
    return written


def helmflow(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, timeout=600, env={"COLUMNS": "200", **(env or {})})


def test_the_worked_example_loads_plans_and_refuses_a_misspelt_parameter(tmp_path):
    example_files(tmp_path)
    listed = helmflow("--plugin", "reverse_words.py", "list", "scenarios", cwd=tmp_path)
    assert listed.returncode == 0 and "reverse_words" in listed.stdout, listed.stderr
    dry = helmflow("--plugin", "reverse_words.py", "run", "--board-file", "reverse-board.yaml", "--dry-run",
                   "--storage", str(tmp_path / "store"), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    total = re.search(r"total\s*│\s*│\s*(\d+)", dry.stdout)
    assert total and int(total.group(1)) == 2 * (50 + 30), dry.stdout  # two models x (50 + 30) test instances
    assert not (tmp_path / "store").exists()  # a dry run writes nothing
    bad = helmflow("--plugin", "reverse_words.py", "eval", "reverse_words:lenght=4", "--models", "offline/echo",
                   "--dry-run", cwd=tmp_path)
    assert bad.returncode == 2 and "lenght" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_the_worked_example_metric_gives_credit_per_word_in_place(tmp_path, monkeypatch):
    from helmflow.metrics import METRICS
    from helmflow.scenarios import SCENARIOS

    for registry in (SCENARIOS, METRICS):  # the example registers in copies, dropped after the test
        monkeypatch.setattr(registry, "_items", dict(registry._items))
    files = example_files(tmp_path)
    spec = importlib.util.spec_from_file_location("reverse_words_example", files["reverse_words.py"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from helmflow.metrics import MetricInput
    from helmflow.records import AdapterSpec

    instances = module.ReverseWords(length=4, num_train=2, num_test=3).load({})
    assert [i.split for i in instances] == ["train", "train", "test", "test", "test"]
    first = instances[2]
    words = first.input.text.split()
    assert first.correct_references[0].text.split() == words[::-1]

    class Said:  # the one field of a completion the metric reads
        def __init__(self, text):
            self.text = text

    def score(text):
        return module.word_order_accuracy(MetricInput(first, [], [Said(text)], AdapterSpec()))["word_order_accuracy"]

    assert score(" ".join(words[::-1])) == 1.0
    assert score(" ".join(words[::-1][:2] + ["x", "y"])) == 0.5
    assert score(" ".join(words)) == 0.0  # no word of a 4-word sentence stays in place when reversed
    assert score("") == 0.0
    assert "reverse_words" in SCENARIOS and "word_order_accuracy" in METRICS


@pytest.mark.slow  # a Prefect flow run and a dev server
def test_the_worked_example_runs_as_written_with_the_dev_server(prefect_server, tmp_path):
    files = example_files(tmp_path)
    port = free_port()
    models = files["dev-models.yaml"]
    models.write_text(models.read_text().replace("127.0.0.1:8765", f"127.0.0.1:{port}"))
    server = subprocess.Popen([sys.executable, "-m", "helmflow.cli", "dev-server", "--port", str(port),
                               "--policy", "fn:reverser:reply"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    try:
        assert "listening on" in server.stdout.readline()
        out = helmflow("--plugin", "reverse_words.py", "run", "--board-file", "reverse-board.yaml",
                       "--models-file", "dev-models.yaml", "--models", "dev/reverser,offline/echo",
                       "--storage", str(tmp_path / "store"), cwd=tmp_path)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    import pyarrow.parquet as pq

    [board] = list((tmp_path / "store" / "leaderboards" / "reverse").glob("*/leaderboard.parquet"))
    rows = {r["deployment"]: r for r in pq.read_table(board).to_pylist()}
    assert rows["dev/reverser"]["reverse-4"] == 1.0 and rows["dev/reverser"]["reverse-8"] == 1.0
    assert rows["offline/echo"]["reverse-4"] == 0.0


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_writing_the_cli_reference_leaves_the_terminal_width_alone(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    generator().cli_markdown()
    assert os.environ["COLUMNS"] == "200"
    monkeypatch.delenv("COLUMNS")
    generator().cli_markdown()
    assert "COLUMNS" not in os.environ
