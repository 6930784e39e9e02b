"""Deployments YAML: shipped file plus a user file; every mistake is one clear error."""

from __future__ import annotations

import logging

import pytest

from helmflow.clients import DeploymentError, load_deployments


def _write(tmp_path, text):
    path = tmp_path / "models.yaml"
    path.write_text(text)
    return path


def test_shipped_deployments_load():
    deps = load_deployments()
    assert {"offline/solver", "offline/echo"} <= set(deps)


def test_user_file_adds_and_overrides_with_one_warning(tmp_path, caplog):
    path = _write(tmp_path, """
deployments:
  - {name: offline/echo, client: offline, model: echo, revision: "2", options: {behavior: echo}}
  - {name: mine/solver, client: offline, model: solver}
""")
    with caplog.at_level(logging.WARNING, logger="helmflow"):
        deps = load_deployments(path)
    assert deps["offline/echo"].revision == "2"
    assert "mine/solver" in deps
    warnings = [r for r in caplog.records if "overrides" in r.getMessage()]
    assert len(warnings) == 1 and "offline/echo" in warnings[0].getMessage()


def test_env_var_names_the_user_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HELMFLOW_MODELS", str(_write(tmp_path, "deployments:\n  - {name: e/x, client: offline, model: m}\n")))
    assert "e/x" in load_deployments()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("deployments:\n  - {name: a, client: offline, model: m, colour: red}\n", "colour: unknown field"),
        ("deployments:\n  - {name: a, client: offline, model: m}\n  - {name: a, client: offline, model: m}\n", "duplicate deployment name 'a'"),
        ("deployments:\n  - {name: a, client: telepathy, model: m}\n", "unknown client kind 'telepathy'"),
        ("deployments:\n  - {name: a, client: offline}\n", "model: Field required"),
        ("models: []\n", "must be a mapping with a 'deployments:' list"),
        ("deployments: [\n", "not valid YAML"),
    ],
)
def test_bad_models_files(tmp_path, text, message):
    with pytest.raises(DeploymentError, match=message.replace("(", r"\(")):
        load_deployments(_write(tmp_path, text))


def test_missing_models_file(tmp_path):
    with pytest.raises(DeploymentError, match="does not exist"):
        load_deployments(tmp_path / "nope.yaml")
