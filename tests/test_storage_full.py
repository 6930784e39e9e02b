"""A storage root on a disk that fills mid-run: one line naming the root, exit 1, nothing half-written,
and the next run (with room again) pays nothing twice. The disk is a real tmpfs mounted for the test
(CI runs as root), so every write path meets the kernel's own ENOSPC."""

from __future__ import annotations

import subprocess

import pytest

from helmflow.storage import TMP_PREFIX
from tests.support.paid_board import PER_SCENARIO, SCENARIOS, board_args, run_cli_text

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=420k", "tmpfs", str(disk)], capture_output=True,
                             text=True, check=False)
    if mounted.returncode:
        pytest.fail(f"cannot mount a tmpfs (the suite runs as root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_storage_disk_is_one_line_naming_the_root_and_the_rerun_pays_only_the_rest(
        prefect_server, dev_server, tmp_path, small_disk):
    root = small_disk / "store"
    args = [*board_args(tmp_path, dev_server)[:-1], str(root)]  # the board, stored on the small disk
    env = {"HELMFLOW_SPOOL": str(tmp_path / "spool")}  # the journal's spool has room: only storage is full
    out = run_cli_text(*args, env=env)
    text = out.stdout
    assert out.returncode == 1, text
    errors = [ln for ln in text.splitlines() if ln.startswith("helmflow: error:")]
    assert len(errors) == 1 and f"storage {root} is full (No space left on device)" in errors[0], text
    assert "Traceback" not in text and "Failed to serialize" not in text and len(text.splitlines()) <= 10, text
    assert not [p for p in root.rglob(f"{TMP_PREFIX}*")], "a half-written temporary was left"
    first = dev_server.stats()
    assert 0 < first["unique"], first  # it got as far as asking the model

    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)  # room again
    again = run_cli_text(*args, env=env)
    assert again.returncode == 0, again.stdout
    stats = dev_server.stats()
    print(f"full storage: {first['requests']} sent before the disk filled, {stats['requests']} in all "
          f"for {SCENARIOS * PER_SCENARIO}")
    assert stats["unique"] == SCENARIOS * PER_SCENARIO
    assert stats["requests"] == stats["unique"], stats  # every answer of the first run was kept and reused
