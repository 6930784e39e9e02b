"""Hints fit the situation: the command that adds an extra to *this* install, and where your own models go."""

from __future__ import annotations

import pytest

from helmflow import errors
from helmflow.cli import main
from tests.support.cli import REPO


def test_install_command_from_a_checkout_is_editable(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    assert errors.install_command("lite") == "pip install -e '.[lite]'"
    monkeypatch.chdir(tmp_path)
    assert errors.install_command("lite") == f"pip install -e '{REPO}[lite]'"


def test_install_command_from_an_index_install(monkeypatch, tmp_path):
    site = tmp_path / "site-packages" / "helmflow"
    site.mkdir(parents=True)
    monkeypatch.setattr(errors, "__file__", str(site / "errors.py"))
    assert errors.install_command("safety") == "pip install 'helmflow[safety]'"


@pytest.mark.parametrize("argv", [["run", "demo", "--models", "me/my-model"], ["show", "demo", "--models", "me/my-model"],
                                  ["eval", "arithmetic", "--models", "me/my-model"], ["check", "--models", "me/my-model"]])
def test_an_unknown_model_points_at_the_models_file(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model(s) me/my-model" in err
    assert "--models-file" in err and "$HELMFLOW_MODELS" in err


def test_help_lists_commands_in_the_order_a_user_needs_them(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("    ")
              and not line.startswith("     ")]
    first = ["run", "eval", "list", "show", "serve", "report", "retry", "lineage"]  # in this order, before the rest
    assert listed[:6] == first[:6] and [c for c in listed if c in first] == first
    assert max(listed.index(c) for c in first) < min(listed.index(c) for c in ("check", "mirror", "compact"))
    assert {"import-helm", "export", "import", "compact", "dev-server"} <= set(listed)


def test_list_without_a_kind_lists_all_three(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for kind, name in [("boards", "demo"), ("scenarios", "arithmetic"), ("models", "offline/solver")]:
        assert f"helmflow list {kind}" in out and name in out
