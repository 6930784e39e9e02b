"""What Prefect costs a board's flow run: wall time and API requests of ``helmflow run <board>``.

Starts a Prefect server on SQLite in this process's child (uvicorn over Prefect's own app, wrapped in
a middleware that counts every HTTP request and websocket by method and path), then runs the board
through the real CLI, cold (empty storage) and warm (``--force-flow``: every task cached), and prints
per pass the wall time, the requests and the busiest endpoints.

    python benchmarks/flow_overhead.py [--board demo] [--repeat 3] [--max-instances 45]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
COUNT_PATH = "/__requests"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def serve(port: int) -> None:
    """The counting server (run as ``flow_overhead.py --serve PORT``)."""
    import uvicorn
    from prefect.server.api.server import create_app

    app = create_app()
    counts: Counter[str] = Counter()

    async def counting(scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            path = scope["path"]
            if path == COUNT_PATH:
                body = json.dumps(dict(counts)).encode()
                if scope.get("method") == "DELETE":
                    counts.clear()
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
            method = scope.get("method", "WS")
            counts[f"{method} {UUID_RE.sub('<id>', path)}"] += 1
        await app(scope, receive, send)

    uvicorn.run(counting, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(base: str, server: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Until the Prefect server at ``base`` answers its health check; exits with its log's tail if it dies first
    or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            raise SystemExit(f"the Prefect server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)


def one_pass(args: list[str], env: dict[str, str], base: str) -> tuple[float, Counter[str]]:
    httpx.delete(base + COUNT_PATH, timeout=30)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "helmflow.cli", *args], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"helmflow {' '.join(args)} failed ({out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    time.sleep(1.0)  # events the run's last moments sent
    return wall, Counter(httpx.get(base + COUNT_PATH, timeout=30).json())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="demo")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-instances", type=int, default=None)
    ap.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.serve:
        serve(opts.serve)
        return 0
    work = Path(tempfile.mkdtemp(prefix="flow-overhead-"))
    port = free_port()
    env = dict(os.environ, PREFECT_HOME=str(work / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], env=env,
                              stdout=(work / "server.log").open("w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(base, server, work / "server.log", 180)
        run_env = dict(env, PREFECT_API_URL=f"{base}/api")
        results: dict[str, list[tuple[float, Counter[str]]]] = {"cold": [], "warm": []}
        for i in range(opts.repeat):
            store = work / f"store-{i}"
            args = ["run", opts.board, "--storage", str(store)]
            if opts.max_instances:
                args += ["--max-instances", str(opts.max_instances)]
            results["cold"].append(one_pass(args, run_env, base))
            results["warm"].append(one_pass([*args, "--force-flow"], run_env, base))
        for kind, passes in results.items():
            walls = [w for w, _ in passes]
            totals = [sum(c.values()) for _, c in passes]
            print(f"{opts.board} {kind}: wall median {statistics.median(walls):.2f} s "
                  f"({', '.join(f'{w:.2f}' for w in walls)}), API requests median {statistics.median(totals):.0f} "
                  f"({', '.join(str(t) for t in totals)})")
            for endpoint, n in passes[-1][1].most_common(8):
                print(f"    {n:5d}  {endpoint}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
