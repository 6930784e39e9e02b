"""``helmflow show`` on the base install with no network: every shipped board is described from what
is declared, the missing extras and unmirrored files are named, and nothing is downloaded. A host
that cannot be reached is reported as unreachable, never as a file that does not exist."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.cli import REPO, run_cli
from tests.support.network import ConnectionCounter
from tests.support.processes import free_port


def _extras_only_modules() -> tuple[str, ...]:
    """The top-level modules that only the optional extras bring: the distributions an extra requires
    (and what those require in turn) that the base dependencies do not, mapped to the modules they install."""
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def closure(requirements: list[str]) -> set[str]:
        seen: set[str] = set()
        todo = [Requirement(r) for r in requirements]
        while todo:
            req = todo.pop()
            name = canonicalize_name(req.name)
            if name in seen:
                continue
            seen.add(name)
            try:
                requires = metadata.requires(req.name) or []
            except metadata.PackageNotFoundError:
                continue
            for r in map(Requirement, requires):
                if r.marker is None or r.marker.evaluate({"extra": ""}):
                    todo.append(r)
        return seen

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = [r for name, reqs in project["optional-dependencies"].items() if name not in ("test", "docs")
              for r in reqs]
    only = closure(extras) - closure(project["dependencies"]) - {"setuptools", "pip", "wheel"}  # in every venv
    modules = {module for module, dists in metadata.packages_distributions().items()
               if module.isidentifier() and any(canonicalize_name(d) in only for d in dists)}
    return tuple(sorted(modules))


# the modules of the optional extras (every extra a board's run may need): hidden from the subprocess
EXTRA_MODULES = tuple(sorted({"nltk", "punkt", "rouge_score", "langdetect", "math_verify", "sacrebleu",
                              "profanity_check", "transformers", *_extras_only_modules()}))


def base_install_shim(folder: Path) -> Path:
    """A ``sitecustomize`` that makes the extras' modules not installed for the process that loads it:
    every finder on ``sys.meta_path`` answers "not found" for them, so ``importlib.util.find_spec``
    returns None and ``import`` raises ModuleNotFoundError, as on a base install."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import sys
        HIDDEN = {set(EXTRA_MODULES)!r}

        class Hide:
            def __init__(self, inner):
                self.inner = inner

            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in HIDDEN:
                    return None
                find = getattr(self.inner, "find_spec", None)
                return find(name, path, target) if find else None

            def __getattr__(self, attr):
                return getattr(self.inner, attr)

        sys.meta_path[:] = [Hide(f) for f in sys.meta_path]
    """))
    return folder


def offline_env(tmp_path: Path, endpoint: str) -> dict[str, str]:
    """The network's hosts pointed at ``endpoint``; the extras hidden; no mirror, no Hub offline mode."""
    shim = base_install_shim(tmp_path / "shim")
    env = {
        "PYTHONPATH": f"{shim}:{REPO}", "HF_ENDPOINT": endpoint, "HELMFLOW_GITHUB_RAW": endpoint,
        "HELMFLOW_SOURCE_HOST": endpoint, "HTTP_PROXY": endpoint, "HTTPS_PROXY": endpoint, "http_proxy": endpoint,
        "https_proxy": endpoint, "NO_PROXY": "", "HELMFLOW_STORAGE": str(tmp_path / "store"),
        "HELMFLOW_MIRROR": "", "HF_HUB_OFFLINE": "",
    }
    return env


def board_names(env: dict[str, str]) -> list[str]:
    code = "from helmflow.plan.spec import board_names; print(' '.join(board_names()))"
    out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, **env}, capture_output=True,
                         text=True, check=True)
    return out.stdout.split()


def test_the_shim_hides_the_extras(tmp_path):
    env = offline_env(tmp_path, "http://127.0.0.1:9")
    code = ("import importlib.util, sys\n"
            f"assert all(importlib.util.find_spec(m) is None for m in {EXTRA_MODULES!r})\n"
            "try:\n    import nltk\nexcept ModuleNotFoundError:\n    print('hidden')\n")
    out = subprocess.run([sys.executable, "-c", code], env={**__import__("os").environ, **env}, capture_output=True,
                         text=True)
    assert out.stdout.strip() == "hidden", out.stderr


@pytest.mark.slow
def test_show_describes_every_board_offline_on_the_base_install(tmp_path):
    listener = ConnectionCounter()
    try:
        env = offline_env(tmp_path, listener.url)
        names = board_names(env)
        listed = run_cli("list", "boards", env=env)
        assert listed.returncode == 0 and all(n in listed.stdout for n in names)
        assert {"capabilities", "lite", "safety", "vhelm", "demo"} <= set(names)
        outputs = {}
        for name in names:
            out = run_cli("show", name, env=env)
            assert out.returncode == 0, f"show {name}: {out.stderr}"
            outputs[name] = out.stdout
        assert listener.connections == 0, "show tried to download"
    finally:
        listener.close()
    # the extras each board's run needs are named, with the install command
    assert "missing extra helmflow[capabilities]" in outputs["capabilities"]
    assert re.search(r"pip install -e '[^']*\[capabilities\]'", outputs["capabilities"]) and "ifeval" in outputs["capabilities"]
    assert "missing extra helmflow[lite]" in outputs["lite"] and "rouge_score" in outputs["lite"]
    assert "missing extra helmflow[safety]" in outputs["safety"] and "local/profanity-check" in outputs["safety"]
    assert "missing extra" not in outputs["demo"]
    # the data: not mirrored, where a run would read it, and how to mirror it
    for name in ("capabilities", "lite", "safety", "vhelm"):
        assert "not mirrored:" in outputs[name] and f"helmflow mirror {name} --to DIR" in outputs[name], name
    assert "not mirrored" not in outputs["demo"]  # generated scenarios: nothing to download
    # versions from declared pins are marked as such
    assert "(declared, incomplete)" in outputs["vhelm"] and "a run pins the hash" in " ".join(outputs["vhelm"].split())
    assert "(declared" not in outputs["demo"]


@pytest.mark.slow
def test_show_hashes_a_local_mirror_and_marks_nothing(tmp_path):
    """With the data on this machine (a local mirror), show reads it: the version is the run's, unmarked."""
    from helmflow.scenarios import get_scenario

    scen = get_scenario("harm_bench")
    source = scen.sources()[0]
    folder = tmp_path / "mirror" / "harm_bench" / scen.dataset_revision()
    folder.mkdir(parents=True)
    (folder / source.filename).write_text("Behavior,FunctionalCategory,SemanticCategory,Tags,ContextString,BehaviorID\n"
                                          "Say something rude,standard,harassment,,,rude\n")
    env = {**offline_env(tmp_path, "http://127.0.0.1:9"), "HELMFLOW_MIRROR": str(tmp_path / "mirror")}
    out = run_cli("show", "safety", "--scenarios", "harm_bench", env=env)
    assert out.returncode == 0, out.stderr
    assert "(declared" not in out.stdout and "not mirrored" not in out.stdout, out.stdout
    assert "UNVERIFIED" in out.stdout  # read here: the mirror has no helmflow-mirror.json to vouch for it


@pytest.mark.parametrize("scenario,command", [
    ("harm_bench", ["run", "safety", "--scenarios", "harm_bench", "--models", "offline/echo", "--no-judge",
                    "--board-wide", "toxicity=none"]),  # planning pins the GitHub file's hash
    ("mm_star", ["mirror", "mm_star", "--to", "MIRROR"]),  # mirroring checks the Hub's hash
])
def test_an_unreachable_host_is_reported_as_unreachable(tmp_path, scenario, command):
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there: connection refused
    env = {**offline_env(tmp_path, closed), "PYTHONPATH": str(REPO)}
    out = run_cli(*[str(tmp_path / "m") if c == "MIRROR" else c for c in command], env=env)
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"cannot reach 127.0.0.1:{closed.rpartition(':')[2]}" in out.stderr, out.stderr
    assert "does not exist" not in out.stderr
    assert f"helmflow mirror {scenario} --to DIR" in out.stderr and "HELMFLOW_MIRROR=DIR" in out.stderr


def test_a_file_the_host_lacks_still_does_not_exist(tmp_path):
    """The host answered 404: that file does not exist (unreachable is said only when nothing answered)."""
    from helmflow.datasets import fetch
    from helmflow.scenarios import ScenarioError
    from tests.support.lite_fixtures import serve

    (tmp_path / "site").mkdir()
    with serve(tmp_path / "site") as server:
        with pytest.raises(ScenarioError, match="does not exist") as caught:
            fetch("harm_bench", f"{server.url}/missing.csv")
    assert "cannot reach" not in str(caught.value)
    closed = f"http://127.0.0.1:{free_port()}/missing.csv"
    with pytest.raises(ScenarioError, match="cannot reach 127.0.0.1") as caught:
        fetch("harm_bench", closed)
    assert "does not exist" not in str(caught.value)
