"""Scale in runs and in requests: wall time and peak RSS of `helmflow run` as a board grows.

    python benchmarks/scale.py [--runs 50,500,2000] [--max-instances 5] [--deployments-min 25]
    python benchmarks/scale.py --requests 10000,100000 [--deployments 4]
    python benchmarks/scale.py --runs 100 --passes cold --baseline /path/to/other/venv/bin/python [--rounds 3]

Each size is a board of D offline deployments × S of the demo scenarios (D ≥ 25, S ≤ 8, D × S =
runs; generated models file, fresh storage), run through the real CLI three times:
  cold   fresh storage: every run queried, scored and published;
  warm   the same board again with --force-flow: through Prefect, every task Cached;
  skip   the same board again without it: the CLI finds the release published, starts no flow.
Printed per size and pass: seconds, seconds per run, and peak RSS of the `helmflow run` process
(``wait4``'s ru_maxrss: the CLI process, not Prefect's temporary server, which is its own child).
At --max-instances 5 almost all of it is overhead per run.

--baseline: the same boards also through another interpreter whose ``helmflow`` is the code to compare
against (e.g. a venv with an editable install of a ``git worktree`` at an older commit), each with its
own storage, the two alternating pass by pass (``--rounds`` times, fresh storage each round, the order
swapped every round), so both see the same machine load. Printed per row: which code ran; at the end,
per size and pass, the median seconds per run of each and their ratio.

--requests: each size is a board of --deployments offline deployments × the demo's three
synthetic-reasoning modes (HELM's 10,000-instance evaluation pool per mode) at the --max-instances
that makes about that many requests, run cold and then warm (--force-flow: every task Cached).
Printed: seconds, seconds per 1,000 requests and peak RSS, so growth with requests shows at a fixed
number of runs. A benchmark, not a test: numbers depend on the machine and its load (printed with them).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BEHAVIOURS = [("solver", "{behavior: solver, accuracy: 1.0}"), ("solver", "{behavior: solver, accuracy: 0.7}"),
              ("echo", "{behavior: echo}"), ("first-option", "{behavior: first_option}")]


def shape(runs: int, deployments_min: int, scenarios_max: int) -> tuple[int, int]:
    """(deployments, scenarios) with deployments ≥ deployments_min, scenarios ≤ scenarios_max, product = runs."""
    for scenarios in range(min(scenarios_max, runs // deployments_min), 0, -1):
        if runs % scenarios == 0:
            return runs // scenarios, scenarios
    return max(deployments_min, math.ceil(runs / scenarios_max)), scenarios_max


def models_file(path: Path, count: int) -> list[str]:
    names, lines = [], ["deployments:"]
    for i in range(count):
        model, options = BEHAVIOURS[i % len(BEHAVIOURS)]
        name = f"bench/{model}-{i:04d}"
        names.append(name)
        lines.append(f"  - {{name: {name}, client: offline, model: {model}, revision: '1', options: {options}}}")
    path.write_text("\n".join(lines) + "\n")
    return names


MAX_RSS_MB = 6000  # the machine is shared: a run past this is stopped and reported (its slope is the answer)


def _guard(pid: int, limit_mb: float) -> None:
    """Stop ``pid`` when its resident memory passes ``limit_mb`` (checked every second)."""
    while True:
        try:
            with open(f"/proc/{pid}/status") as fh:
                rss_kb = next((int(line.split()[1]) for line in fh if line.startswith("VmRSS:")), 0)
        except (OSError, StopIteration):
            return
        if rss_kb / 1024 > limit_mb:
            print(f"# stopped: RSS passed {limit_mb:.0f} MB", file=sys.stderr, flush=True)
            os.kill(pid, 15)
            return
        time.sleep(1)


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, int, str]:
    """(seconds, CPU seconds, peak RSS in MB of the process, exit code, the output's tail). CPU: user +
    system time of the process and the children it waited for (the temporary Prefect server), which
    other processes' load inflates less than wall time. ``cwd`` is the board's
    work folder, never a checkout: ``python -m`` puts the current folder first on the import path."""
    import threading

    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=_guard, args=(proc.pid, MAX_RSS_MB), daemon=True).start()
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started, cpu, usage.ru_maxrss / 1024, proc.returncode, out[-2000:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="50,500,2000", help="comma-separated board sizes in runs")
    ap.add_argument("--max-instances", type=int, default=5)
    ap.add_argument("--deployments-min", type=int, default=25)
    ap.add_argument("--passes", default="cold,warm,skip", help="which passes to run (cold is always run first)")
    ap.add_argument("--keep", action="store_true", help="keep the storage roots (printed)")
    ap.add_argument("--requests", default="", help="comma-separated board sizes in requests (instead of --runs)")
    ap.add_argument("--deployments", type=int, default=4, help="deployments of a --requests board")
    ap.add_argument("--baseline", default="", help="another Python whose helmflow to run side by side (--runs)")
    ap.add_argument("--rounds", type=int, default=1, help="with --baseline: how many times to alternate the two")
    opts = ap.parse_args()
    if opts.requests:
        return requests_mode(opts)

    from helmflow.plan.spec import load_board

    scenarios = [s.label for s in load_board("demo").scenarios]
    codes = [("this", sys.executable)] + ([("baseline", opts.baseline)] if opts.baseline else [])
    env = header("| runs | deployments × scenarios | pass | code | seconds | s/run | CPU s/run | peak RSS MB | exit |")
    passes = [p for p in ("cold", "warm", "skip") if p in opts.passes.split(",") or p == "cold"]
    per_run: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
    for runs in [int(r) for r in opts.runs.split(",")]:
        n_dep, n_scen = shape(runs, opts.deployments_min, len(scenarios))
        for round_ in range(opts.rounds if opts.baseline else 1):
            order = codes[::-1] if round_ % 2 == 0 else codes  # the baseline first in even rounds
            works = {label: Path(tempfile.mkdtemp(prefix=f"helmflow-scale-{runs}-{label}-")) for label, _ in order}
            for work in works.values():  # each code its own models file, with the same names
                names = models_file(work / "models.yaml", n_dep)
            for name in passes:
                for label, python in order:
                    args = demo_command(works[label], names, scenarios[:n_scen], opts.max_instances, python)
                    seconds, cpu, rss, code, tail = timed(args + (["--force-flow"] if name == "warm" else []), env,
                                                          works[label])
                    per_run.setdefault((runs, name, label), []).append((seconds / runs, cpu / runs))
                    print(f"| {n_dep * n_scen} | {n_dep} × {n_scen} | {name} | {label} | {seconds:.1f} "
                          f"| {seconds / (n_dep * n_scen):.3f} | {cpu / (n_dep * n_scen):.3f} | {rss:.0f} | {code} |",
                          flush=True)
                    if code != 0:
                        print(tail, file=sys.stderr)
            for work in works.values():
                clean_up(work, opts.keep)
    if opts.baseline:
        print_ratios(per_run)
    return 0


def print_ratios(per_run: dict[tuple[int, str, str], list[tuple[float, float]]]) -> None:
    """Median wall and CPU seconds per run of this code and the baseline, and this / baseline, per size and pass."""
    load = os.getloadavg()
    print(f"\n# medians, load average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| runs | pass | s/run this | baseline | this / baseline | CPU s/run this | baseline | this / baseline |")
    print("|---|---|---|---|---|---|---|---|")
    for runs, name in sorted({(r, n) for r, n, _ in per_run}):
        this, base = per_run[(runs, name, "this")], per_run[(runs, name, "baseline")]
        wall = statistics.median(w for w, _ in this), statistics.median(w for w, _ in base)
        cpu = statistics.median(c for _, c in this), statistics.median(c for _, c in base)
        print(f"| {runs} | {name} | {wall[0]:.3f} | {wall[1]:.3f} | {wall[0] / wall[1]:.2f} "
              f"| {cpu[0]:.3f} | {cpu[1]:.3f} | {cpu[0] / cpu[1]:.2f} |", flush=True)


SR_MODES = ["sr-pattern-match", "sr-variable-substitution", "sr-induction"]
SR_POOL = 10_000  # valid + test instances per synthetic-reasoning mode


def demo_command(work: Path, names: list[str], scenarios: list[str], max_instances: int,
                 python: str = sys.executable) -> list[str]:
    """`helmflow run demo` over the generated deployments in ``work``, with its storage there too."""
    return [python, "-m", "helmflow.cli", "run", "demo", "--models-file", str(work / "models.yaml"),
            "--models", ",".join(names), "--scenarios", ",".join(scenarios),
            "--max-instances", str(max_instances), "--storage", str(work / "store")]


def clean_up(work: Path, keep: bool) -> None:
    if keep:
        print(f"# storage kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


def header(columns: str) -> dict[str, str]:
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", COLUMNS="120")
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(columns)
    print("|" + "---|" * (columns.count("|") - 1))
    return env


def requests_mode(opts: argparse.Namespace) -> int:
    env = header("| requests | deployments × scenarios × instances | pass | seconds | s per 1,000 requests | peak RSS MB | exit |")
    for asked in [int(r) for r in opts.requests.split(",")]:
        per_run = math.ceil(asked / (opts.deployments * len(SR_MODES)))
        if per_run > SR_POOL:
            raise SystemExit(f"{asked} requests need {per_run} instances per run; the pool has {SR_POOL}: add --deployments")
        total = per_run * opts.deployments * len(SR_MODES)
        work = Path(tempfile.mkdtemp(prefix=f"helmflow-requests-{asked}-"))
        names = models_file(work / "models.yaml", opts.deployments)
        base = demo_command(work, names, SR_MODES, per_run)
        for name in ("cold", "warm"):
            seconds, _, rss, code, tail = timed(base + (["--force-flow"] if name == "warm" else []), env, work)
            print(f"| {total} | {opts.deployments} × {len(SR_MODES)} × {per_run} | {name} | {seconds:.1f} "
                  f"| {seconds / total * 1000:.2f} | {rss:.0f} | {code} |", flush=True)
            if code != 0:
                print(tail, file=sys.stderr)
        clean_up(work, opts.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
