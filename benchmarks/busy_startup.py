"""`helmflow run demo` on a busy machine: fresh storage, Prefect's temporary server, N CPU burners.

    python benchmarks/busy_startup.py [--burners 2] [--max-instances N]

Starts ``--burners`` processes that spin (``while True: pass``), then runs
`helmflow run demo` (the README's first command) with a
fresh storage root and no ``PREFECT_API_URL`` (so Prefect starts its temporary server under the
start-up timeout helmflow sets), and prints the exit code, the seconds, the load average before and
after, and the last lines of the output when it failed. It must complete; if the
temporary server still cannot start, the error is one line with the fix.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--burners", type=int, default=2)
    ap.add_argument("--max-instances", type=int, help="passed to `helmflow run demo` (default: the board's own)")
    opts = ap.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(opts.burners)]
    try:
        time.sleep(2)
        before = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="helmflow-busy-") as tmp:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
            env.update(PREFECT_HOME=str(Path(tmp) / "prefect-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                       HELMFLOW_EPHEMERAL="1")
            args = [sys.executable, "-m", "helmflow.cli", "run", "demo", "--storage", str(Path(tmp) / "store")]
            if opts.max_instances:
                args += ["--max-instances", str(opts.max_instances)]
            started = time.perf_counter()
            proc = subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True)
            seconds = time.perf_counter() - started
    finally:
        for b in burners:
            b.kill()
            b.wait()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, {opts.burners} burners; "
          f"load average {before:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print(f"helmflow run demo (fresh storage, temporary Prefect server): exit {proc.returncode} in {seconds:.1f} s")
    if proc.returncode:
        print("--- last lines of stderr:\n" + "\n".join(proc.stderr.strip().splitlines()[-5:]))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
