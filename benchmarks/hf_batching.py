"""Requests/s of the ``huggingface`` client on CPU, batched vs one request per ``generate`` call.

    python benchmarks/hf_batching.py [--requests 64] [--max-tokens 16] [--batch-sizes 1,4,8,16] [--rounds 3]

Builds the tests' tiny random GPT-2 (2 layers, 32 dims; no download) in a temporary folder, loads it
once, then sends the same greedy requests through the real query path (``run_queries``: journal,
limiter, the client's batching queue, generation in its worker thread) into a fresh store for each
batch size. After a warm-up, the batch sizes take turns for ``--rounds`` rounds and the best round
of each counts (the machine may be shared). Prints requests/s per batch size and the ratio to the
first; also checks that every batch size produced the same texts. A benchmark, not a test: numbers
depend on the machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support

from helmflow.query import run_queries  # noqa: E402
from helmflow.records import Deployment, Request, RequestBody  # noqa: E402
from helmflow.storage import Store  # noqa: E402
from helmflow.versions import request_hash  # noqa: E402
from tests.support.tiny_hf import POSITIONS, build_tiny_model  # noqa: E402


def requests_for(model: str, n: int, max_tokens: int) -> list[Request]:
    out = []
    for i in range(n):
        body = RequestBody(model=model, prompt=f"What is {i} + {2 * i}?" + " cat dog" * (i % 7), max_tokens=max_tokens,
                           temperature=0.0)
        out.append(Request(request_hash=request_hash(body, 0), instance_id=str(i), split="test", body=body))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--batch-sizes", default="1,4,8,16")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_tiny_model(Path(tmp) / "tiny-gpt2")
        reqs = requests_for(str(folder), args.requests, args.max_tokens)
        texts: dict[int, list[str]] = {}
        rates: dict[int, float] = {}
        deps = {
            size: Deployment(
                name=f"tiny-b{size}", client="huggingface", model=str(folder), tokenizer=f"hf:{folder}",
                context_window=POSITIONS, max_concurrency=max(size, 16),
                options={"device": "cpu", "max_batch_size": size, "batch_wait_ms": 5},
            )
            for size in sizes
        }
        run_queries(Store(str(Path(tmp) / "warm-up")), deps[sizes[-1]], reqs[:8])  # model load, lazy imports
        for r in range(args.rounds):
            for size in sizes:
                started = time.perf_counter()
                result = run_queries(Store(str(Path(tmp) / f"store-{size}-{r}")), deps[size], reqs)
                elapsed = time.perf_counter() - started
                assert result.errors == 0, result.error_messages
                texts[size] = [c.text for c in result.completions]
                rates[size] = max(rates.get(size, 0.0), len(reqs) / elapsed)
        for size in sizes:
            print(f"max_batch_size {size:3d}: {rates[size]:7.1f} requests/s "
                  f"(best of {args.rounds} rounds of {len(reqs)})")
        base = rates[sizes[0]]
        for size in sizes[1:]:
            print(f"batched {size} / batch size {sizes[0]}: {rates[size] / base:.2f}x")
        same = all(texts[s] == texts[sizes[0]] for s in sizes)
        print(f"identical greedy outputs across batch sizes: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
