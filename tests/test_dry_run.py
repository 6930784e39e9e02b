"""``--dry-run``: requests, prompt tokens and worst-case cost per run and in total; no call, no write."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.cli import REPO, run_cli


def _total(stdout: str) -> list[str]:
    line = next(ln for ln in stdout.splitlines() if "total" in ln)
    return re.findall(r"[\d.]+", line)


def test_demo_dry_run_counts_every_request_and_writes_nothing(tmp_path: Path):
    root = tmp_path / "store"
    arithmetic = "arithmetic-3,arithmetic-5x-chat,arithmetic-mc,arithmetic-mc-cot"  # quick to generate
    out = run_cli("run", "demo", "--dry-run", "--storage", str(root), "--scenarios", arithmetic)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "dry run" in out.stdout and "flow run" not in out.stdout
    requests, prompt_tokens, _, cost = _total(out.stdout)
    # 4 scenarios x the demo's 4 offline models x 45 instances, plus the perturbed copies of two of them:
    # robustness (mild_mix lowercases every "What is") re-sends all 45; fairness changes no arithmetic question
    assert int(requests) == 4 * 4 * 45 + 2 * 4 * 45
    assert int(prompt_tokens) > 0 and float(cost) == 0.0  # offline models are free
    assert not root.exists(), "a dry run writes nothing (no runs/, no datasets/, no counters)"


def test_worst_case_cost_is_prices_times_prompt_and_max_tokens(tmp_path: Path):
    data = tmp_path / "qa.csv"
    data.write_text("question,answer\none two,x\nthree,y\n")  # prompts "Question: one two\nAnswer:" (4) and 3 words
    models = tmp_path / "models.yaml"
    models.write_text(
        "deployments:\n"
        "  - {name: priced/solver, client: offline, model: solver, price_input_per_mtok: 2.0,"
        " price_output_per_mtok: 10.0, options: {behavior: solver}}\n"
    )
    out = run_cli("eval", f"custom:path={data}", "--models", "priced/solver,offline/echo", "--models-file", str(models),
                  "--adapter", "max_train_instances=0,max_tokens=50", "--dry-run", "--storage", str(tmp_path / "store"))
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [ln for ln in out.stdout.splitlines() if "priced/solver" in ln or "offline/echo" in ln]
    assert len(rows) == 2
    priced = re.findall(r"[\d.]+", rows[0].split("priced/solver", 1)[1])
    assert priced == ["2", "7", "100", f"{(7 * 2.0 + 2 * 50 * 10.0) / 1e6:.6f}"]
    assert _total(out.stdout) == ["4", "14", "200", f"{(7 * 2.0 + 100 * 10.0) / 1e6:.6f}"]
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_a_dry_run_of_long_prompts_holds_one_prompt_at_a_time(tmp_path):
    """A 4 MB instructions prefix on 80 prompts: before, every prompt and request was held at once (peak
    719 MB for this board); counted and priced one at a time, the command stays near its import size."""
    board = tmp_path / "long.yaml"
    board.write_text(yaml.safe_dump({
        "name": "long-prefix", "version": "1", "models": ["offline/solver"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": 40, "seed": k}, "label": f"a{k}",
                       "adapter": {"instructions": "x" * 4_000_000}} for k in range(2)]}))
    measure = ("import resource, subprocess, sys; "
               "p = subprocess.run([sys.executable, '-m', 'helmflow.cli', 'run', '--board-file', sys.argv[1], "
               "'--dry-run'], capture_output=True, text=True); "
               "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); "
               "print(p.stdout[-2000:], p.stderr[-2000:], file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", measure, str(board)], capture_output=True, text=True, cwd=REPO,
                         env=dict(os.environ, COLUMNS="200"), timeout=300)
    code, peak_mb = map(int, out.stdout.split())
    assert code == 0, out.stderr
    assert "a0" in out.stderr and "a1" in out.stderr  # both scenarios priced
    assert peak_mb < 300, f"peak {peak_mb} MB"


def test_a_dry_run_prices_batch_deployments_at_real_time_and_batch_side_by_side(tmp_path: Path):
    data = tmp_path / "qa.csv"
    data.write_text("question,answer\none two,x\nthree,y\n")  # prompts of 4 and 3 words
    models = tmp_path / "models.yaml"
    models.write_text(
        "deployments:\n"
        "  - {name: priced/gpt, client: openai, model: gpt, api_key_env: HELMFLOW_DRY_KEY, price_input_per_mtok: 2.0,"
        " price_output_per_mtok: 10.0}\n"
        "  - {name: priced/claude, client: anthropic, model: claude, api_key_env: HELMFLOW_DRY_KEY,"
        " price_input_per_mtok: 2.0, price_output_per_mtok: 10.0, batch_discount: 0.4}\n"
    )
    out = run_cli("eval", f"custom:path={data}", "--models", "priced/gpt,priced/claude,offline/echo", "--models-file",
                  str(models), "--adapter", "max_train_instances=0,max_tokens=50", "--dry-run",
                  "--storage", str(tmp_path / "store"), env={"HELMFLOW_DRY_KEY": "k"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "batch $" in out.stdout
    real = (7 * 2.0 + 2 * 50 * 10.0) / 1e6
    gpt = re.findall(r"[\d.]+", next(ln for ln in out.stdout.splitlines() if "priced/gpt" in ln).split("priced/gpt")[1])
    claude = re.findall(r"[\d.]+", next(ln for ln in out.stdout.splitlines()
                                       if "priced/claude" in ln).split("priced/claude")[1])
    assert gpt == ["2", "7", "100", f"{real:.6f}", f"{0.5 * real:.6f}"]
    assert claude == ["2", "7", "100", f"{real:.6f}", f"{0.4 * real:.6f}"]
    echo = next(ln for ln in out.stdout.splitlines() if "offline/echo" in ln)
    assert echo.rstrip(" │").endswith("-")  # no batch API
    assert _total(out.stdout) == ["6", "21", "300", f"{2 * real:.6f}", f"{0.9 * real:.6f}"]
