"""Throughput of the real query path against the dev server, next to the server's own ceiling.

    python benchmarks/throughput.py [--requests 5000] [--latency-ms 50] [--concurrency 1,10,100]
    python benchmarks/throughput.py --concurrency 100 --baseline <python of another checkout> --rounds 3

The dev server runs in its own process. For each concurrency, first a minimal raw-HTTP load
generator (aiohttp, same concurrency, same request body) measures what the server can serve; then
the same number of requests goes through helmflow's real path (``run_queries``: journal lookup,
limiter, retries, the ``openai`` SDK over HTTP, spool, journal flush and compaction), each in a fresh
process. Printed: requests/s, helmflow / ceiling, client CPU ms per request, peak RSS of the client.
``--baseline`` also runs the helmflow path under another interpreter (another checkout's venv), each
round measuring the ceiling, this code and the baseline one after the other, so both codes meet the
same load and are compared as ratios; with ``--rounds`` > 1 the medians per code follow the rows.
Client CPU is read from a cpuacct cgroup holding the measured process (every thread of it: the I/O
loop, the journal's threads) where the machine offers one, else from the process's own CPU time.
A benchmark, not a test: numbers depend on the machine (and on whoever else is using it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from helmflow.devserver import start_dev_server

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Question?\nanswer is here"}], "max_tokens": 6,
        "temperature": 0.0}


# --------------------------------------------------------------------------- one measurement per process
async def _raw(url: str, n: int, concurrency: int) -> None:
    import aiohttp

    payload = json.dumps(BODY).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
    left = iter(range(n))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def worker() -> None:
            for _ in left:
                async with session.post(f"{url}/v1/chat/completions", data=payload, headers=headers) as r:
                    await r.read()
                    assert r.status == 200

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def _helmflow(url: str, n: int, concurrency: int) -> None:
    from helmflow.query import run_queries
    from helmflow.records import Deployment, Request, RequestBody
    from helmflow.storage import Store
    from helmflow.versions import request_hash

    dep = Deployment(name="bench/dev", client="openai-compatible", model="bench", base_url=f"{url}/v1",
                     max_concurrency=concurrency)
    requests = []
    for i in range(n):
        body = RequestBody(model="bench", prompt=f"Question {i}?\nanswer {i} is here", max_tokens=6, temperature=0.0)
        requests.append(Request(request_hash=request_hash(body, 0), instance_id=str(i), split="test", body=body))
    store = Store(tempfile.mkdtemp(prefix="helmflow-bench-"))
    result = run_queries(store, dep, requests)
    assert result.errors == 0 and result.sent == n, result.error_messages


CPUACCT = "/sys/fs/cgroup/cpuacct"


def new_cgroup() -> str | None:
    """A fresh cpuacct cgroup for one measured process (None where the machine offers none)."""
    path = os.path.join(CPUACCT, f"helmflow-throughput-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.mkdir(path)
    except OSError:
        return None
    return path


def cpu_clock(cgroup: str | None):
    """CPU seconds of this process, every thread: its cgroup's ``cpuacct.usage`` once it is in it."""
    if not cgroup:
        return time.process_time
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
        fh.write(str(os.getpid()))

    def read() -> float:
        with open(os.path.join(cgroup, "cpuacct.usage")) as fh:
            return int(fh.read()) / 1e9

    return read


def measure(mode: str, url: str, n: int, concurrency: int, cgroup: str | None = None) -> dict[str, float]:
    """Run in a child process: wall time, client CPU and peak RSS of this process alone."""
    clock = cpu_clock(cgroup)
    if mode == "helmflow":  # imports and SDK set-up are not what is measured
        _helmflow(url, min(concurrency, n), concurrency)
    wall, cpu = time.perf_counter(), clock()
    if mode == "raw":
        asyncio.run(_raw(url, n, concurrency))
    else:
        _helmflow(url, n, concurrency)
    wall, cpu = time.perf_counter() - wall, clock() - cpu
    return {"rps": n / wall, "cpu_ms": cpu / n * 1000, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(mode: str, url: str, n: int, concurrency: int, python: str = sys.executable) -> dict[str, float]:
    cgroup = new_cgroup()
    try:
        out = subprocess.run(
            [python, __file__, "--child", mode, "--url", url, "--requests", str(n), "--concurrency", str(concurrency)]
            + (["--cgroup", cgroup] if cgroup else []),
            capture_output=True, text=True, check=True, env=dict(os.environ, HELMFLOW_SPOOL=tempfile.mkdtemp()),
        )
    finally:
        if cgroup:
            os.rmdir(cgroup)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=5000)
    p.add_argument("--latency-ms", type=float, default=50.0)
    p.add_argument("--concurrency", default="1,10,100")
    p.add_argument("--baseline", metavar="PYTHON", help="also measure the helmflow path under this interpreter")
    p.add_argument("--rounds", type=int, default=1, help="measurements per concurrency (interleaved)")
    p.add_argument("--child", choices=["raw", "helmflow"], help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--cgroup", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.url, args.requests, int(args.concurrency), args.cgroup)))
        return
    with start_dev_server("--latency-ms", str(args.latency_ms)) as server:
        url = server.url
        print(f"dev server at {url}, latency {args.latency_ms:g} ms, {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} at start")
        print(f"{'concurrency':>11} {'requests':>8} {'code':>8} {'ceiling r/s':>11} {'helmflow r/s':>12} {'ratio':>6} "
              f"{'CPU ms/req':>10} {'peak MB':>8} {'load':>5}")
        codes = [("this", sys.executable)] + ([("baseline", args.baseline)] if args.baseline else [])
        rows: dict[tuple[int, str], list[dict[str, float]]] = {}
        raws: list[float] = []
        for c in [int(x) for x in args.concurrency.split(",")]:
            # at concurrency 1 a request takes latency_ms: keep that run to ~15 s
            n = min(args.requests, max(200, int(15 * c * 1000 / max(args.latency_ms, 1))))
            for _ in range(args.rounds):
                for label, python in codes:
                    raw = run_child("raw", url, n, c)
                    hf = run_child("helmflow", url, n, c, python)
                    raws.append(raw["cpu_ms"])
                    rows.setdefault((c, label), []).append(dict(hf, ratio=hf["rps"] / raw["rps"], ceiling=raw["rps"]))
                    print(f"{c:>11} {n:>8} {label:>8} {raw['rps']:>11.0f} {hf['rps']:>12.0f} "
                          f"{hf['rps'] / raw['rps']:>6.2f} {hf['cpu_ms']:>10.2f} {hf['rss_mb']:>8.0f} "
                          f"{os.getloadavg()[0]:>5.1f}", flush=True)
        if args.rounds > 1:
            print("medians:")
            for (c, label), found in rows.items():
                med = {k: statistics.median(r[k] for r in found) for k in ("ceiling", "rps", "ratio", "cpu_ms", "rss_mb")}
                print(f"{c:>11} {'':>8} {label:>8} {med['ceiling']:>11.0f} {med['rps']:>12.0f} {med['ratio']:>6.2f} "
                      f"{med['cpu_ms']:>10.2f} {med['rss_mb']:>8.0f}")
        print(f"load average {os.getloadavg()[0]:.1f} at end; raw client CPU for comparison: "
              f"{statistics.median(raws):.2f} ms/request (median)")


if __name__ == "__main__":
    main()
