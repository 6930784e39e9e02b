"""Every HELMFLOW_* variable is read through helmflow.settings, at call time, and described for the configuration
reference."""

from __future__ import annotations

import ast
import re

import pytest

from helmflow.settings import Settings, scenario_mirror, scenario_mirror_var, settings
from tests.support.cli import REPO

PRODUCT_DIRS = ["helmflow", "tasks", "flows", "scenarios", "clients", "metrics"]


def test_settings_are_read_when_asked_not_at_import(monkeypatch, tmp_path):
    monkeypatch.setenv("HELMFLOW_STORAGE", str(tmp_path))
    monkeypatch.setenv("HELMFLOW_DASK_WORKERS", "3")
    assert settings().storage == str(tmp_path) and settings().dask_workers == 3
    monkeypatch.setenv("HELMFLOW_MIRROR_MY_BENCH_V2", "/m")
    assert scenario_mirror_var("my-bench.v2") == "HELMFLOW_MIRROR_MY_BENCH_V2" and scenario_mirror("my-bench.v2") == "/m"
    from helmflow.storage import resolve_root

    assert resolve_root() == str(tmp_path)


def test_settings_follow_every_change_of_the_environment(monkeypatch):
    """Settings are kept for the environment they were read from: any change of a HELMFLOW_* variable
    (set, changed, removed, in any case) is read at the next call, and a bad value fails every call."""
    from helmflow.errors import HelmflowError

    monkeypatch.delenv("HELMFLOW_TASK_THREADS", raising=False)
    default = settings().task_threads
    monkeypatch.setenv("HELMFLOW_TASK_THREADS", "3")
    assert settings().task_threads == 3
    monkeypatch.setenv("HELMFLOW_TASK_THREADS", "5")
    assert settings().task_threads == 5
    monkeypatch.delenv("HELMFLOW_TASK_THREADS")
    monkeypatch.setenv("helmflow_task_threads", "7")  # pydantic-settings matches names in any case
    assert settings().task_threads == 7
    monkeypatch.delenv("helmflow_task_threads")
    assert settings().task_threads == default
    first = settings()
    first.task_threads = default + 1  # a caller's copy: changing it changes no later call's settings
    assert settings().task_threads == default
    monkeypatch.setenv("HELMFLOW_TASK_THREADS", "many")
    for _ in range(2):
        with pytest.raises(HelmflowError, match="HELMFLOW_TASK_THREADS"):
            settings()


@pytest.mark.slow
def test_no_product_module_reads_a_helmflow_variable_from_the_environment_itself():
    found = []
    for folder in PRODUCT_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name == "settings.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.environ.get", "os.getenv") and node.args:
                    arg = ast.unparse(node.args[0])
                    if "HELMFLOW" in arg or arg.endswith("_ENV"):  # a literal, or a constant naming one
                        found.append(f"{path.relative_to(REPO)}:{node.lineno}: {arg}")
    assert found == []


def test_the_configuration_reference_lists_every_variable():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "scripts" / "gen_reference.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    page = gen.config_markdown()
    listed = set(re.findall(r"`(HELMFLOW_[A-Z0-9_]+)`", page))
    for field in Settings.model_fields:
        assert f"HELMFLOW_{field.upper()}" in listed, field
        assert Settings.model_fields[field].description, field
    assert "HELMFLOW_MIRROR_<NAME>" in page
