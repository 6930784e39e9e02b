"""``benchmarks/lite_ui_screenshots.py``'s own contract: it says what it needs and checks it before any work, runs
without pytest, writes its screenshots to ``--out`` or a new temporary folder (the tracked ones only with
``--update-docs``) and removes its work folder unless ``--keep``.

What it screenshots (HELM Lite through its own Prefect server, in Chromium) takes over a minute of CPU, so that part
is run by hand (docs/boards/lite.md); here ``take`` is replaced by a stand-in that writes files where the real one
does: into the work folder it is given, and the two screenshots into the output folder.
"""

from __future__ import annotations

import hashlib
import runpy
import subprocess
import sys
import tempfile

import pytest

from tests.support.cli import REPO

SCRIPT = REPO / "benchmarks" / "lite_ui_screenshots.py"
NAMES = ("prefect-lite-flow-run.png", "prefect-lite-artifact.png")


def digests(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def script(monkeypatch, tmp_path):
    """The script's namespace, its temporary folders under ``tmp_path``, and a stand-in for ``take``."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace = runpy.run_path(str(SCRIPT))  # not as __main__: nothing runs yet
    seen = {}

    def take(models, work, out_dir):
        seen.update(models=models, work=work)
        (work / "store").mkdir()
        (work / "store" / "big.parquet").write_bytes(b"x" * 4096)
        for name in NAMES:
            (out_dir / name).write_bytes(b"\x89PNG\r\n\x1a\n" + name.encode())
        return [out_dir / name for name in NAMES]

    namespace["main"].__globals__["take"] = take
    return namespace, seen


def run_main(namespace, monkeypatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *argv])
    namespace["main"]()


def test_help_says_what_it_needs_without_pytest_installed():
    hide_pytest = ("import runpy, sys; sys.modules['pytest'] = None; sys.argv = [sys.argv[1], '--help']; "
                   "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", hide_pytest, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Playwright" in out.stdout and "apt-get install -y chromium" in out.stdout and "--update-docs" in out.stdout


def test_a_missing_chromium_is_one_line_before_any_work(script, monkeypatch, tmp_path):
    namespace, seen = script
    namespace["main"].__globals__["CHROMIUM"] = str(tmp_path / "no-chromium")
    with pytest.raises(SystemExit, match="needs .*no-chromium: apt-get install -y chromium"):
        run_main(namespace, monkeypatch)
    assert seen == {} and list(tmp_path.iterdir()) == []  # no output or work folder was made


def test_screenshots_go_to_a_new_folder_the_work_folder_goes_and_the_tracked_ones_stay(script, monkeypatch, tmp_path,
                                                                                      capsys):
    namespace, seen = script
    tracked = digests(REPO / "docs" / "screenshots")
    run_main(namespace, monkeypatch, "--models", "offline/solver")
    out = capsys.readouterr().out
    assert seen["models"] == "offline/solver" and not seen["work"].exists()  # its tens of MB are gone
    (shots,) = tmp_path.glob("lite-ui-shots-*")  # a new folder under the system's temporary directory
    assert sorted(p.name for p in shots.iterdir()) == sorted(NAMES) and f"wrote {shots / NAMES[0]}" in out
    assert digests(REPO / "docs" / "screenshots") == tracked
    assert [p for p in tmp_path.iterdir() if p != shots] == []


def test_keep_and_out_and_update_docs(script, monkeypatch, tmp_path, capsys):
    namespace, seen = script
    docs = tmp_path / "docs-screenshots"
    docs.mkdir()
    namespace["main"].__globals__["DOCS"] = docs
    run_main(namespace, monkeypatch, "--out", str(tmp_path / "mine"), "--keep", "--update-docs")
    out = capsys.readouterr().out
    assert seen["work"].is_dir() and f"work folder kept: {seen['work']}" in out
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == sorted(NAMES)
    assert digests(docs) == digests(tmp_path / "mine")  # copied over the documentation's only when asked
