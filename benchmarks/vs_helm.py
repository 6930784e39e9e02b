"""helmflow and HELM side by side on the same workloads against the same OpenAI-wire server.

    python benchmarks/vs_helm.py [--latency-ms 50] [--concurrency 32] [--workloads dyck,sr]
    python benchmarks/vs_helm.py --install-helm      # first creates .bench/helm-venv with crfm-helm 0.5.16

Workloads (issue 22's table): Dyck with 3 bracket pairs, 500 requests; synthetic reasoning
(pattern match), 5,000 requests. Each runs cold (fresh storage, empty HELM cache) and warm (again:
everything cached) through
  helmflow  `helmflow eval <scenario> --models bench/dev` (the real CLI, its Prefect flow; warm
            twice: the CLI's published-release check, and `--force-flow` through Prefect), and
  HELM      `helm-run` from the separate venv, with a prod_env whose model deployment is HELM's
            OpenAIClient pointed at the same dev server, `-n <concurrency>`.
The dev server runs in its own process. Without the HELM venv the script runs the helmflow half
and prints its times next to the server's ceiling (requests ÷ (latency × concurrency)).
Printed: seconds, peak RSS of the measured process, helmflow ÷ HELM. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HELM_VENV = REPO / ".bench" / "helm-venv"
HELM_VERSION = "0.5.16"
WORKLOADS = {  # name: (helmflow scenario spec, HELM run entry, requests)
    "dyck": ("dyck_language:num_parenthesis_pairs=3", "dyck_language:num_parenthesis_pairs=3", 500),
    "sr": ("synthetic_reasoning:mode=pattern_match", "synthetic_reasoning:mode=pattern_match", 5000),
}


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "helmflow.cli", "dev-server", "--port", "0", "--latency-ms",
                             str(latency_ms)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"dev server did not start: {line!r}")
    return proc, found.group(0)


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(seconds, peak RSS MB of the command's process); raises with its output when it fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(args[:6])} … failed:\n{out[-3000:]}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


# --------------------------------------------------------------------------- helmflow
def helmflow_runs(url: str, workload: str, concurrency: int, work: Path) -> dict[str, tuple[float, float]]:
    spec, _, n = WORKLOADS[workload]
    models = work / "models.yaml"
    models.write_text("deployments:\n  - {name: bench/dev, client: openai-compatible, model: bench, "
                      f"base_url: '{url}/v1', max_concurrency: {concurrency}, context_window: 8192}}\n")
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", OPENAI_API_KEY="x")
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    base = [sys.executable, "-m", "helmflow.cli", "eval", spec, "--models", "bench/dev", "--models-file", str(models),
            "--max-instances", str(n), "--storage", str(work / "store")]
    return {"cold": timed(base, env, REPO), "warm": timed(base, env, REPO),
            "warm --force-flow": timed(base + ["--force-flow"], env, REPO)}


# --------------------------------------------------------------------------- HELM
def install_helm() -> None:
    subprocess.run([sys.executable, "-m", "venv", str(HELM_VENV)], check=True)
    subprocess.run([str(HELM_VENV / "bin" / "pip"), "install", f"crfm-helm=={HELM_VERSION}"], check=True)


def helm_prod_env(path: Path, url: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "credentials.conf").write_text('openaiApiKey: "x"\n')
    (path / "model_metadata.yaml").write_text(
        "models:\n  - name: bench/dev\n    display_name: dev server\n    description: helmflow dev server\n"
        "    creator_organization_name: bench\n    access: open\n    release_date: 2026-01-01\n"
        "    tags: [TEXT_MODEL_TAG, FULL_FUNCTIONALITY_TEXT_MODEL_TAG, CHATML_MODEL_TAG]\n")
    (path / "model_deployments.yaml").write_text(
        "model_deployments:\n  - name: bench/dev\n    model_name: bench/dev\n    tokenizer_name: simple/tokenizer1\n"
        "    max_sequence_length: 8192\n    client_spec:\n      class_name: helm.clients.openai_client.OpenAIClient\n"
        f"      args:\n        openai_model_name: bench\n        base_url: {url}/v1\n")


def helm_runs(url: str, workload: str, concurrency: int, work: Path) -> dict[str, tuple[float, float]]:
    _, entry, n = WORKLOADS[workload]
    prod_env = work / "prod_env"
    helm_prod_env(prod_env, url)
    args = [str(HELM_VENV / "bin" / "helm-run"), "--run-entries", f"{entry},model=bench/dev", "--suite", "bench",
            "-m", str(n), "-n", str(concurrency), "--local-path", str(prod_env), "-o", str(work / "out")]
    cold = timed(args, dict(os.environ), work)
    return {"cold": cold, "warm": timed(args, dict(os.environ), work)}  # the SQLite cache answers everything


# --------------------------------------------------------------------------- main
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
    proc, url = start_server(opts.latency_ms)
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f}; dev server {url}, {opts.latency_ms:g} ms latency, concurrency {opts.concurrency}"
          + ("" if have_helm else f"; HELM not installed (--install-helm creates {HELM_VENV})"))
    print("| workload | pass | HELM s | HELM MB | helmflow s | helmflow MB | ratio | server ceiling s |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for workload in opts.workloads.split(","):
            n = WORKLOADS[workload][2]
            ceiling = n * opts.latency_ms / 1000 / opts.concurrency
            work = Path(tempfile.mkdtemp(prefix=f"helmflow-vs-helm-{workload}-"))
            ours = helmflow_runs(url, workload, opts.concurrency, work / "helmflow")
            theirs = helm_runs(url, workload, opts.concurrency, work / "helm") if have_helm else {}
            for name, (seconds, rss) in ours.items():
                h = theirs.get(name.split()[0]) if name != "warm" or "warm" in theirs else None
                hs, hm = (f"{h[0]:.1f}", f"{h[1]:.0f}") if h else ("—", "—")
                ratio = f"{seconds / h[0]:.2f}×" if h else "—"
                print(f"| {workload} {n} | {name} | {hs} | {hm} | {seconds:.1f} | {rss:.0f} | {ratio} | {ceiling:.1f} |",
                      flush=True)
            shutil.rmtree(work, ignore_errors=True)
    finally:
        proc.terminate()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
