"""helmflow and HELM side by side on the same workloads against the same OpenAI-wire server.

    python benchmarks/vs_helm.py [--latency-ms 50] [--concurrency 32] [--workloads dyck,sr]
    python benchmarks/vs_helm.py --install-helm      # first creates .bench/helm-venv with crfm-helm 0.5.16

Workloads: Dyck with 3 bracket pairs, 500 requests; synthetic reasoning
(pattern match), 5,000 requests. Each runs cold (fresh storage, empty HELM cache) and warm (again:
everything cached) through
  helmflow  `helmflow eval <scenario> --models bench/dev` (the real CLI, its Prefect flow; warm
            twice: the CLI's published-release check, and `--force-flow` through Prefect), and
  HELM      `helm-run` from the separate venv, with a prod_env whose model deployment is HELM's
            OpenAIClient pointed at the same dev server, `-n <concurrency>` (warm: its SQLite cache
            answers every request; `--skip-completed-runs` is HELM's own skip, next to the CLI's).
The dev server runs in its own process; its request count is reset before every pass and printed
after it, so both sides are seen to send the same requests. Without the HELM venv the script runs
the helmflow half and prints its times next to the server's ceiling (requests ÷ concurrency ×
latency). Printed per pass: seconds, peak RSS of the measured process (``wait4``: the command's own
process, not Prefect's temporary server), requests the server counted, helmflow ÷ HELM; then the
bytes each side left on disk (helmflow: its storage root; HELM: its output folder and its cache).
helmflow runs on a Prefect database of its own (``PREFECT_HOME`` in the work folder), created before
the clock starts, once more cold against a long-lived ``prefect server start`` (production's
topology: no temporary server to start), and twice as a new user's machine runs it: the first command
on a fresh ``PREFECT_HOME`` (helmflow starts its managed server and Prefect migrates its database,
inside the clock), then a cold run that finds that server running. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helmflow.devserver import DevServerHandle, start_dev_server  # noqa: E402
from tests.support import prefect_server  # noqa: E402
from tests.support.processes import free_port  # noqa: E402

HELM_VENV = REPO / ".bench" / "helm-venv"
HELM_VERSION = "0.5.16"
# crfm-helm requires torch; unpinned, pip picks the newest CUDA build (GBs). The CPU build is enough:
# these workloads never load a model. torchvision follows torch's minor version.
HELM_PINS = ["torch==2.13.0", "torchvision==0.28.0"]
WORKLOADS = {  # name: (helmflow scenario spec, HELM run entry, requests, goal ratios cold / warm)
    "dyck": ("dyck_language:num_parenthesis_pairs=3", "dyck_language:num_parenthesis_pairs=3", 500, (0.5, 0.25)),
    "sr": ("synthetic_reasoning:mode=pattern_match", "synthetic_reasoning:mode=pattern_match", 5000, (0.35, 0.1)),
}
Pass = tuple[float, float, int]  # seconds, peak RSS MB, requests the server counted


def timed(server: DevServerHandle, args: list[str], env: dict[str, str], cwd: Path) -> Pass:
    """One command: (seconds, peak RSS MB of its process, requests the server saw); raises with its output."""
    server.reset()
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(args[:6])} … failed:\n{out[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, server.requests


def du(*paths: Path) -> int:
    return sum(f.stat().st_size for p in paths if p.exists() for f in p.rglob("*") if f.is_file())


# --------------------------------------------------------------------------- helmflow
def helmflow_runs(server: DevServerHandle, workload: str, concurrency: int, work: Path) -> tuple[dict[str, Pass], int]:
    spec, _, n, _ = WORKLOADS[workload]
    work.mkdir(parents=True)
    models = work / "models.yaml"
    models.write_text("deployments:\n  - {name: bench/dev, client: openai-compatible, model: bench, "
                      f"base_url: '{server.openai_url}', max_concurrency: {concurrency}, context_window: 8192}}\n")
    # Prefect's temporary server (HELMFLOW_EPHEMERAL): the cold passes pay for one server's start each
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", OPENAI_API_KEY="x", HELMFLOW_EPHEMERAL="1")
    env.pop("PREFECT_API_URL", None)
    # a Prefect database of its own, created before the clock starts: a user's first run on a
    # machine creates it once (its migrations took 10-16 s here), the cold runs compared are not that
    env["PREFECT_HOME"] = str(work / "prefect-home-temporary")
    subprocess.run([sys.executable, "-m", "prefect", "--no-prompt", "server", "database", "upgrade", "-y"],
                   env=env, check=True, capture_output=True)
    base = [sys.executable, "-m", "helmflow.cli", "eval", spec, "--models", "bench/dev", "--models-file", str(models),
            "--max-instances", str(n), "--storage", str(work / "store")]
    passes = {"cold": timed(server, base, env, REPO), "warm": timed(server, base, env, REPO),
              "warm through Prefect": timed(server, base + ["--force-flow"], env, REPO)}
    stored = du(work / "store")
    # the same cold run against a long-lived Prefect server (production's topology): no temporary
    # server to start, so this is helmflow's cost and the flow's API traffic alone
    with prefect_server.running(work / "prefect-home") as api_url:
        fresh = [*base[:-1], str(work / "store-server")]
        passes["cold, running server"] = timed(server, fresh, dict(env, PREFECT_API_URL=api_url), REPO)
    # a user's first command on a fresh machine: no PREFECT_API_URL and a PREFECT_HOME never used, so the
    # CLI starts helmflow's managed server (Prefect migrates its database once, inside the clock); the
    # next command finds that server running, as every later command on the machine does
    managed = {k: v for k, v in env.items() if k != "HELMFLOW_EPHEMERAL"}
    managed.update(PREFECT_HOME=str(work / "prefect-home-managed"), HELMFLOW_SERVER_PORT=str(free_port()))
    try:
        passes["first command"] = timed(server, [*base[:-1], str(work / "store-first")], managed, REPO)
        passes["cold, managed server"] = timed(server, [*base[:-1], str(work / "store-managed")], managed, REPO)
    finally:
        subprocess.run([sys.executable, "-m", "helmflow.cli", "server", "stop"], env=managed, capture_output=True,
                       check=False)
    return passes, stored


# --------------------------------------------------------------------------- HELM
def install_helm() -> None:
    subprocess.run([sys.executable, "-m", "venv", str(HELM_VENV)], check=True)
    subprocess.run([str(HELM_VENV / "bin" / "pip"), "install", *HELM_PINS, f"crfm-helm[openai]=={HELM_VERSION}"], check=True)


def helm_prod_env(path: Path, url: str) -> None:
    """A prod_env whose one model deployment is HELM's own OpenAIClient (chat completions, like
    helmflow's) at ``url``, with HELM's simple whitespace tokenizer (no download). Not tagged ChatML,
    so the prompt goes as one user message, as helmflow sends it."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "model_metadata.yaml").write_text(
        "models:\n  - name: bench/dev\n    display_name: dev server\n    description: helmflow dev server\n"
        "    creator_organization_name: bench\n    access: open\n    release_date: 2026-01-01\n"
        "    tags: [TEXT_MODEL_TAG, FULL_FUNCTIONALITY_TEXT_MODEL_TAG]\n")
    (path / "model_deployments.yaml").write_text(
        "model_deployments:\n  - name: bench/dev\n    model_name: bench/dev\n    tokenizer_name: simple/tokenizer1\n"
        "    max_sequence_length: 8192\n    client_spec:\n      class_name: helm.clients.openai_client.OpenAIClient\n"
        f"      args:\n        openai_model_name: bench\n        base_url: {url}\n        api_key: x\n")


def helm_runs(server: DevServerHandle, workload: str, concurrency: int, work: Path) -> tuple[dict[str, Pass], int]:
    _, entry, n, _ = WORKLOADS[workload]
    prod_env = work / "prod_env"
    helm_prod_env(prod_env, server.openai_url)
    args = [str(HELM_VENV / "bin" / "helm-run"), "--run-entries", f"{entry},model=bench/dev", "--suite", "bench",
            "-m", str(n), "-n", str(concurrency), "--local-path", str(prod_env), "-o", str(work / "out")]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    passes = {"cold": timed(server, args, env, work), "warm": timed(server, args, env, work)}  # cache answers all
    passes["skip completed"] = timed(server, args + ["--skip-completed-runs"], env, work)
    return passes, du(work / "out", prod_env / "cache")


# --------------------------------------------------------------------------- main
ROWS = [  # (label, helmflow pass, HELM pass, goal index)
    ("cold", "cold", "cold", 0),
    ("cold, helmflow against a running `prefect server start`", "cold, running server", "cold", 0),
    ("first command on a fresh machine (helmflow starts its managed server; Prefect migrates)", "first command",
     "cold", 0),
    ("cold, helmflow's managed server already running (every later command)", "cold, managed server", "cold", 0),
    ("warm (all cached)", "warm", "warm", 1),
    ("warm through Prefect / HELM's cache", "warm through Prefect", "warm", None),
    ("warm, both skip the finished run", "warm", "skip completed", None),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--workloads", default="dyck,sr")
    ap.add_argument("--install-helm", action="store_true", help=f"create {HELM_VENV} with crfm-helm {HELM_VERSION} first")
    opts = ap.parse_args()
    if opts.install_helm and not (HELM_VENV / "bin" / "helm-run").exists():
        install_helm()
    have_helm = (HELM_VENV / "bin" / "helm-run").exists()
    with start_dev_server("--latency-ms", str(opts.latency_ms)) as server:
        load = os.getloadavg()
        print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} CPUs, "
              f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; dev server {opts.latency_ms:g} ms latency, "
              f"concurrency {opts.concurrency}"
              + ("" if have_helm else f"; HELM not installed (--install-helm creates {HELM_VENV})"), flush=True)
        print("| workload | pass | HELM | helmflow | ratio | goal | requests HELM / helmflow | server ceiling | load |")
        print("|---|---|---|---|---|---|---|---|---|", flush=True)
        for workload in opts.workloads.split(","):
            _, _, n, goals = WORKLOADS[workload]
            ceiling = n * opts.latency_ms / 1000 / opts.concurrency
            work = Path(tempfile.mkdtemp(prefix=f"helmflow-vs-helm-{workload}-"))
            try:
                theirs, their_bytes = helm_runs(server, workload, opts.concurrency, work / "helm") if have_helm else ({}, 0)
                ours, our_bytes = helmflow_runs(server, workload, opts.concurrency, work / "helmflow")
            finally:
                shutil.rmtree(work, ignore_errors=True)
            for label, mine, helms, goal in ROWS:
                s, mb, req = ours[mine]
                h = theirs.get(helms)
                if h is None and helms != mine:
                    continue
                hs = f"{h[0]:.1f} s, {h[1]:.0f} MB" if h else "—"
                ratio = f"**{s / h[0]:.2f}×**" if h else "—"
                reqs = f"{h[2] if h else '—'} / {req}"
                print(f"| {workload} {n} | {label} | {hs} | {s:.1f} s, {mb:.0f} MB | {ratio} | "
                      f"{'≤ ' + str(goals[goal]) + '×' if goal is not None else ''} | {reqs} | {ceiling:.1f} s | "
                      f"{os.getloadavg()[0]:.1f} |", flush=True)
            if have_helm:
                print(f"| {workload} {n} | bytes on disk | {their_bytes / 1e6:.1f} MB | {our_bytes / 1e6:.1f} MB | "
                      f"{our_bytes / their_bytes:.2f}× | keep | | | |", flush=True)
            else:
                print(f"| {workload} {n} | bytes on disk | — | {our_bytes / 1e6:.1f} MB | — | | | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
