"""Batch mode at 2,000 requests, counted at the dev server through the real SDKs and the real CLI.

    python benchmarks/batch_scale.py [--scenarios 2] [--per-scenario 500] [--kills 3]

A board of S arithmetic scenarios x N instances x an openai and an anthropic deployment (2 x S x N
requests; 2,000 by default) on a dedicated Prefect server (SQLite) and a ``helmflow dev-server``:

1. ``helmflow run`` real-time, on its own storage and dev-server scope;
2. ``helmflow run --batch`` on another storage and scope, its batches held pending by the dev server
   (``batch_delay_s``), SIGKILLed ``--kills`` times once every batch is submitted and polled, then, the
   batches let to end, run once more to the end.

Printed: the counts at the dev server (batches, lines, distinct lines, repeated lines, answered lines,
real-time requests), whether the two leaderboards are equal but for the cost column, the two costs and
their ratio, and the wall and CPU seconds of each step (the CLI processes, with the dev server's CPU
beside). The suite runs the same checks at 200 requests (``tests/test_batch_board.py``); this is the
2,000-request scale, a benchmark because its CPU would not fit the suite's budget. Exit 1 when a check
fails.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ENV = {"HELMFLOW_BATCH_KEY": "sk-batch-bench", "COLUMNS": "200"}


def write_board(work: Path, server, scenarios: int, per_scenario: int) -> list[str]:
    key = {"api_key_env": "HELMFLOW_BATCH_KEY", "batch_poll_s": 0.1, "price_input_per_mtok": 2.0,
           "price_output_per_mtok": 8.0, "max_concurrency": 32}
    models = work / f"models-{server.scope}.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/gpt", "client": "openai", "model": "gpt-dev", "base_url": server.openai_url, **key},
        {"name": "dev/claude", "client": "anthropic", "model": "claude-dev", "base_url": server.url,
         "context_window": 200000, **key},
    ]}))
    board = work / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "batched", "version": "1", "models": ["dev/gpt", "dev/claude"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": per_scenario, "seed": k},
                       "label": f"arith-{k}"} for k in range(scenarios)],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models)]


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def leaderboard(root: Path) -> list[dict]:
    import pyarrow.parquet as pq

    latest = json.loads((root / "leaderboards/batched/latest.json").read_text())
    rows = pq.read_table(root / f"leaderboards/batched/{latest['release_id']}/leaderboard.parquet").to_pylist()
    return sorted(rows, key=lambda r: r["deployment"])


def batch_calls(server) -> int:
    calls = server.stats()["by_endpoint"]
    return calls.get("batches", 0) + calls.get("message_batches", 0) + calls.get("files", 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=2)
    parser.add_argument("--per-scenario", type=int, default=500)
    parser.add_argument("--kills", type=int, default=3)
    opts = parser.parse_args()
    from helmflow.devserver import start_dev_server
    from tests.support.prefect_server import dedicated_prefect_server

    total = 2 * opts.scenarios * opts.per_scenario
    pairs = 2 * opts.scenarios
    steps: list[tuple[str, float, float]] = []
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="batch-scale-") as tmp, start_dev_server() as dev:
        work = Path(tmp)
        with dedicated_prefect_server(work / "prefect") as prefect:
            env = dict(prefect.env, **ENV)
            cli = [sys.executable, "-m", "helmflow.cli"]
            rt, batched = dev.scoped("realtime"), dev.scoped("batch")
            dev_cpu0 = cpu_of(dev.proc.pid)

            def run(name: str, args: list[str]) -> subprocess.CompletedProcess:
                wall, cpu = time.perf_counter(), cpu_of_children()
                done = subprocess.run(cli + args, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=3600, check=False)
                steps.append((name, time.perf_counter() - wall, cpu_of_children() - cpu))
                if done.returncode != 0:
                    print(done.stdout[-5000:])
                return done

            print(f"{total:,} requests: {opts.scenarios} scenarios x {opts.per_scenario} instances x "
                  f"dev/gpt (openai) and dev/claude (anthropic)", flush=True)
            args_rt = [*write_board(work, rt, opts.scenarios, opts.per_scenario), "--storage", str(work / "rt")]
            check(run("real-time run", args_rt).returncode == 0, "the real-time run exits 0")
            args_b = [*write_board(work, batched, opts.scenarios, opts.per_scenario), "--storage",
                      str(work / "batch"), "--batch"]
            batched.configure(batch_delay_s=3600)  # the batches stay pending while the runs are killed
            for k in range(opts.kills):
                before = batch_calls(batched)
                wall, cpu = time.perf_counter(), cpu_of_children()
                proc = subprocess.Popen(cli + args_b, cwd=REPO, env=env, text=True, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
                deadline = time.monotonic() + 900
                # every batch submitted (by the first run), and each polled by this run, before the kill
                while batched.stats()["batches"] < pairs or batch_calls(batched) < before + 2 * pairs:
                    if proc.poll() is not None:
                        print(proc.stdout.read()[-5000:] if proc.stdout else "")
                        failures.append(f"batch run {k + 1} ended before it was killed")
                        return 1
                    if time.monotonic() > deadline:
                        proc.kill()
                        failures.append(f"batch run {k + 1}: no batches polled")
                        return 1
                    time.sleep(0.05)
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                steps.append((f"--batch run {k + 1}, SIGKILLed with its batches pending", time.perf_counter() - wall,
                              cpu_of_children() - cpu))
                stats = batched.stats()
                check(stats["batches"] == pairs and stats["batch_lines"] == total,
                      f"after SIGKILL {k + 1}: {stats['batches']} batches, {stats['batch_lines']:,} lines "
                      f"(expected {pairs}, {total:,})")
            batched.configure(batch_delay_s=0)
            check(run("--batch run to the end", args_b).returncode == 0, "the last --batch run exits 0")
            dev_cpu = cpu_of(dev.proc.pid) - dev_cpu0
            s, r = batched.stats(), rt.stats()
            print(f"dev server, batch scope: {s['batches']} batches, {s['batch_lines']:,} lines, "
                  f"{s['batch_line_ids']:,} distinct, {s['batch_line_repeats']} repeated, {s['batch_answered']:,} "
                  f"answered ({s['batch_answered_repeats']} twice), {s['requests']} real-time requests", flush=True)
            check(s["batches"] == pairs and s["batch_lines"] == s["batch_line_ids"] == s["batch_answered"] == total
                  and s["batch_line_repeats"] == 0 and s["batch_answered_repeats"] == 0,
                  "every request in exactly one batch line, answered once")
            check(s["requests"] == 0 and r["requests"] == total and r["batches"] == 0,
                  "nothing real-time in batch mode; everything real-time in the real-time run")
            rows_rt, rows_b = leaderboard(work / "rt"), leaderboard(work / "batch")
            same = len(rows_rt) == len(rows_b) and all(
                {k: v for k, v in a.items() if k != "cost_usd"} == {k: v for k, v in b.items() if k != "cost_usd"}
                for a, b in zip(rows_rt, rows_b, strict=False))
            check(same, "the same leaderboard but for the cost column")
            cost_rt, cost_b = sum(x["cost_usd"] for x in rows_rt), sum(x["cost_usd"] for x in rows_b)
            ratio = cost_b / cost_rt if cost_rt else float("nan")
            check(abs(ratio - 0.5) < 1e-9, f"published cost ${cost_b:.6f} batched vs ${cost_rt:.6f} real-time: "
                                           f"{ratio:.6f}x")
    print("\n| step | wall s | CPU s (CLI) |\n|---|---|---|")
    for name, wall, cpu in steps:
        print(f"| {name} | {wall:.1f} | {cpu:.1f} |")
    print(f"\ndev server CPU over all steps: {dev_cpu:.1f} s; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    if failures:
        print(f"FAILED: {'; '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
