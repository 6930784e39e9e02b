"""CPU of a cold ``helmflow run demo`` and the journal files it writes, this code against another checkout.

    python benchmarks/journal_cost.py --baseline <python of another checkout> [--rounds 3]

One ``prefect server start`` (a throwaway ``PREFECT_HOME``) serves every pass, so its start-up is in
no pass. Each pass is ``helmflow run demo`` on fresh storage and a fresh spool, in a cpuacct cgroup of
its own: the CPU of the command's whole process tree (its Prefect server outside it), read from
``cpuacct.usage``. The two codes alternate ``--rounds`` times; printed per pass: CPU seconds, wall
seconds and the journal's part files under ``responses/``, then the medians and the load average.
A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flow_overhead import wait_for_server  # this folder's: the same wait for a Prefect server to answer

CPUACCT = "/sys/fs/cgroup/cpuacct"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_pass(python: str, board: str, work: Path, env: dict[str, str], tag: str) -> tuple[float, float, int]:
    """CPU seconds (process tree), wall seconds and journal parts of one cold run."""
    store, spool = work / f"store-{tag}", work / f"spool-{tag}"
    cgroup = Path(CPUACCT) / f"helmflow-journal-cost-{os.getpid()}-{tag}"
    cgroup.mkdir()
    try:
        # the child joins the cgroup before it execs helmflow: every process it starts is counted
        script = (f"import os, sys; open({str(cgroup / 'cgroup.procs')!r}, 'w').write(str(os.getpid())); "
                  f"os.execv(sys.executable, [sys.executable, '-m', 'helmflow.cli', 'run', {board!r}, "
                  f"'--storage', {str(store)!r}])")
        wall = time.perf_counter()
        out = subprocess.run([python, "-c", script], env=dict(env, HELMFLOW_SPOOL=str(spool)), capture_output=True,
                             text=True)
        wall = time.perf_counter() - wall
        if out.returncode != 0:
            raise SystemExit(f"helmflow run {board} failed ({out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-3000:]}")
        cpu = int((cgroup / "cpuacct.usage").read_text()) / 1e9
    finally:
        for _ in range(50):  # the tree's last processes may take a moment to leave
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    parts = sum(1 for _ in (store / "responses").rglob("part-*.parquet")) if (store / "responses").exists() else 0
    return cpu, wall, parts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True, metavar="PYTHON", help="the interpreter of the code to compare against")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--board", default="demo")
    args = ap.parse_args()
    if not os.access(CPUACCT, os.W_OK):
        raise SystemExit(f"needs a writable cpuacct cgroup hierarchy at {CPUACCT}")

    work = Path(tempfile.mkdtemp(prefix="journal-cost-"))
    port = free_port()
    env = dict(os.environ, PREFECT_HOME=str(work / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                               str(port)], env=env, stdout=(work / "server.log").open("w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(base, server, work / "server.log", 240)
        env["PREFECT_API_URL"] = f"{base}/api"
        print(f"helmflow run {args.board}, cold, against {base}; {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f} at start", flush=True)
        codes = {"this": sys.executable, "baseline": args.baseline}
        found: dict[str, list[tuple[float, float, int]]] = {label: [] for label in codes}
        one_pass(sys.executable, args.board, work, env, "warm-up")  # the server's first flow run, the caches
        for r in range(args.rounds):
            for label, python in codes.items():
                found[label].append(one_pass(python, args.board, work, env, f"{label}-{r}"))
                cpu, wall, parts = found[label][-1]
                print(f"round {r + 1} {label:>8}: {cpu:6.2f} CPU-s  {wall:6.2f} s  {parts:5d} journal parts  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        for label, passes in found.items():
            print(f"{label:>8}: median {statistics.median(p[0] for p in passes):.2f} CPU-s, "
                  f"{statistics.median(p[1] for p in passes):.2f} s, {statistics.median(p[2] for p in passes):.0f} parts")
        print(f"load average {os.getloadavg()[0]:.1f} at end")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
