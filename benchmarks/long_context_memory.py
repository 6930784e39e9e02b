"""Peak RSS of one long-context run: N instances of about 128k tokens, downloaded, adapted, queried against the
dev server, scored and published, in a process of its own.

    python benchmarks/long_context_memory.py [--instances 10,100] [--words 127500] [--chunk-mb 16] [--at-once]

The data is InfiniteBench En.Sum's raw shape (``longbook_sum_eng.jsonl``: one novel of ``--words`` words a line,
written here from seeded words, ~128k whitespace tokens each) in a mirror folder; the deployment is the dev server
behind the openai-compatible client, with a 200,000-token window and the whitespace tokenizer (so the prompts are
~128k tokens). Each size runs in a fresh child process that does nothing else (the board's stages as plain
functions, no Prefect); printed per size: the child's peak RSS (``ru_maxrss``), its RSS after imports, the
requests the server counted and the seconds taken. ``--at-once`` sets the chunk budget to 1 TB, which makes every
stage hold the whole run, as before streaming (the comparison). A benchmark, not a test: figures depend on the
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def write_fixture(mirror: Path, instances: int, words: int) -> None:
    from helmflow.scenarios.infinite_bench import REVISION
    from tests.support.long_context_fixtures import infinite_bench_rows

    folder = mirror / "infinite_bench_en_sum" / REVISION
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "longbook_sum_eng.jsonl", "wb") as fh:
        for i in range(instances):  # a row at a time: the fixture is never held whole either
            fh.write(infinite_bench_rows("sum", 1, words, seed=i).replace(b'"id": 0', f'"id": {i}'.encode()))


def child(args: argparse.Namespace) -> None:
    """One run in this process; prints a JSON line of figures."""
    import helmflow.chunks as chunks

    if args.at_once:
        chunks.CHUNK_BYTES = 1 << 40
    else:
        chunks.CHUNK_BYTES = args.chunk_mb << 20
    from helmflow import pipeline
    from helmflow.plan.compile import plan_board
    from helmflow.plan.spec import load_board
    from helmflow.records import Deployment
    from helmflow.storage import Store

    after_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    dev = Deployment(name="dev/long", client="openai-compatible", model="dev-model", base_url=args.url,
                     context_window=200_000, max_concurrency=8)
    spec = {"name": "long-memory", "version": "1", "models": [dev.name], "context_overflow": "refuse",
            "scenarios": [{"name": "infinite_bench_en_sum", "label": "infinite_bench_en_sum",
                           "metrics": ["rouge_l", "exact_match", "efficiency"]}]}
    started = time.perf_counter()
    (plan,) = plan_board(load_board(spec), {dev.name: dev}).runs
    store = Store(args.store)
    stages = {}

    def mark(stage: str) -> None:
        stages[stage] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)

    mark("plan")
    data = pipeline.download_scenario(store, plan.scenario)
    mark("download")
    prompts = pipeline.adapt_scenario(store, plan.scenario, data)
    mark("adapt")
    query = pipeline.query_pair(store, plan, prompts)
    mark("query")
    score = pipeline.score_pair(store, plan, data, query)
    mark("score")
    pipeline.publish_run(store, plan, query, score)
    mark("publish")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_mb": peak / 1024, "after_imports_mb": after_imports / 1024, "prompts": prompts.num_prompts,
                      "sent": query.sent, "seconds": time.perf_counter() - started, "stages": stages}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default="10,100")
    parser.add_argument("--words", type=int, default=127_500)
    parser.add_argument("--chunk-mb", type=int, default=8)
    parser.add_argument("--at-once", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from helmflow.devserver import start_dev_server

    mode = "at once (chunk budget 1 TB)" if args.at_once else f"streamed (chunk budget {args.chunk_mb} MB)"
    print(f"long-context run, {args.words:,} words a prompt, {mode}; machine load {os.getloadavg()[0]:.1f}")
    with start_dev_server() as server:
        for n in (int(x) for x in args.instances.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                mirror = Path(tmp) / "mirror"
                write_fixture(mirror, n, args.words)
                scoped = server.scoped(f"n{n}")
                cmd = [sys.executable, __file__, "--child", "--url", scoped.openai_url, "--store",
                       str(Path(tmp) / "store"), "--chunk-mb", str(args.chunk_mb), *(["--at-once"] * args.at_once)]
                out = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                     env=dict(os.environ, HELMFLOW_MIRROR=str(mirror)))
                if out.returncode:
                    sys.exit(f"{n} instances: the run failed:\n{out.stderr[-3000:]}")
                figures = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"{n:>5} instances: peak RSS {figures['peak_mb']:7.1f} MB (after imports "
                      f"{figures['after_imports_mb']:.1f} MB), {figures['prompts']} prompts, {scoped.requests} "
                      f"requests at the server, {figures['seconds']:.1f} s")
                print("       peak RSS after each stage (MB): "
                      + ", ".join(f"{k} {v:.0f}" for k, v in figures["stages"].items()))


if __name__ == "__main__":
    main()
