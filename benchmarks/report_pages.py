"""How fast the web report opens a run's first page, for a run of 100 and one of 100,000 instances.

    python benchmarks/report_pages.py [--sizes 100,100000] [--repeat 5]

Synthesizes published runs (the real Parquet schemas and row groups, written with Store) and a
release holding them, then times the live app (in process, through Starlette's test client) and the
static export, and then in Chromium (navigation until the first page of instances is shown) for the
live app and the static export opened from disk. "cold" is a fresh app (nothing cached: the run's
footers, stats and references are read); "warm" is the same page again. Prints one line per
measurement with the large/small ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from helmflow.aggregate import leaderboard_schema
from helmflow.manifests import LatestPointer, ReleaseManifest, RunManifest
from helmflow.pipeline import RUN_ROW_GROUP_ROWS
from helmflow.publish import RUNS_SCHEMA
from helmflow.records import COMPLETION_SCHEMA, INSTANCE_SCHEMA, REQUEST_SCHEMA, STAT_SCHEMA, SUMMARY_SCHEMA
from helmflow.storage import Store, safe_key

BOARD = "bench"


def synthesize_run(store: Store, run_id: str, scenario: str, deployment: str, n: int, text: str = "") -> dict:
    """A published run of ``n`` instances (every third one wrong); ``text`` is put in every prompt,
    reference and completion (tests put hostile text there). Returns its runs.parquet row."""
    ids = [f"id-{i:07d}" for i in range(n)]
    prompts = [f"{text}Question {i}: what is {i} + {i}?\nAnswer:" for i in range(n)]
    answers = [str(2 * i) if i % 3 else str(2 * i + 1) for i in range(n)]
    scenario_version = f"sv-{run_id}"
    store.write_parquet(
        f"instances/{safe_key(scenario)}/{scenario_version}.parquet",
        pa.table(
            {
                "id": ids,
                "split": ["test"] * n,
                "sub_split": [None] * n,
                "input_text": prompts,
                "input_messages": [None] * n,
                "input_parts": [None] * n,
                "references": [[{"text": f"{text}{2 * i}", "correct": True}] for i in range(n)],
                "extra_json": ["{}"] * n,
            },
            schema=INSTANCE_SCHEMA,
        ),
    )
    prefix = f"runs/{run_id}"
    bodies = [json.dumps({"model": deployment, "prompt": p, "max_tokens": 8, "temperature": 0.0}) for p in prompts]
    store.write_parquet(
        f"{prefix}/requests.parquet",
        pa.table(
            {
                "request_hash": [f"h{i:07d}" for i in range(n)],
                "instance_id": ids,
                "split": ["test"] * n,
                "sample_index": [0] * n,
                "body_json": bodies,
                "prompt": prompts,
                "num_train_instances": [0] * n,
                "prompt_truncated": [i % 50 == 7 for i in range(n)],
                "output_mapping_json": ["{}"] * n,
                "media_transforms": [[]] * n,
                "continuation": [None] * n,
                "notes": [[]] * n,
                "request_mode": [None] * n,
                "reference_index": [None] * n,
                "num_conditioning_tokens": [0] * n,
            },
            schema=REQUEST_SCHEMA,
        ),
        row_group_size=RUN_ROW_GROUP_ROWS,
    )
    errors = [("provider said 500" if i % 97 == 5 else None) for i in range(n)]
    store.write_parquet(
        f"{prefix}/completions.parquet",
        pa.table(
            {
                "request_hash": [f"h{i:07d}" for i in range(n)],
                "instance_id": ids,
                "sample_index": [0] * n,
                "text": [f"{text}{a}" if e is None else "" for a, e in zip(answers, errors)],
                "finish_reason": ["stop"] * n,
                "prompt_tokens": [12] * n,
                "output_tokens": [1] * n,
                "latency_s": [0.01] * n,
                "cost_usd": [1e-5] * n,
                "tokens": [[a] for a in answers],
                "logprobs": [[-0.1] for _ in range(n)],
                "text_offsets": [None] * n,
                "error": errors,
                "attempts": [1] * n,
                "created_at": ["2026-01-01T00:00:00+00:00"] * n,
                "invalid_chars": [0] * n,
                # every other instance reasoned first (the text again, so tests can attack the folded block)
                "reasoning": [f"{text}thinking about {i}" if i % 2 == 0 else "" for i in range(n)],
                "reasoning_tokens": [3 if i % 2 == 0 else 0 for i in range(n)],
                "cached_tokens": [0] * n,
                "truncated_in_reasoning": [i % 11 == 3 for i in range(n)],
                "images": [[]] * n,
            },
            schema=COMPLETION_SCHEMA,
        ),
        row_group_size=RUN_ROW_GROUP_ROWS,
    )
    ok = [i for i in range(n) if errors[i] is None]
    em = [float(i % 3 != 0) for i in ok]
    store.write_parquet(
        f"{prefix}/stats.parquet",
        pa.table(
            {
                "instance_id": [ids[i] for i in ok] * 2,
                "split": ["test"] * (2 * len(ok)),
                "name": ["exact_match"] * len(ok) + ["latency_s"] * len(ok),
                "value": em + [0.01] * len(ok),
            },
            schema=STAT_SCHEMA,
        ),
    )
    score = sum(em) / len(em)
    store.write_parquet(
        f"{prefix}/summary.parquet",
        pa.table(
            {
                "name": ["exact_match"],
                "split": ["test"],
                "count": [len(em)],
                "mean": [score],
                "ci_low": [score - 0.01],
                "ci_high": [score + 0.01],
            },
            schema=SUMMARY_SCHEMA,
        ),
    )
    status = "errors" if any(errors) else "complete"
    store.write_json(
        f"{prefix}/run.json",
        RunManifest.model_validate({
            "run_id": run_id,
            "status": status,
            "scenario": {"name": scenario, "label": scenario, "params": {}},
            "deployment": {
                "name": deployment,
                "client": "offline",
                "model": deployment,
                "revision": "",
                "tokenizer": "whitespace",
                "context_window": 8192,
            },
            "adapter": {"method": "generation"},
            "metrics": {"exact_match": "1"},
            "main_metric": "exact_match",
            "score": score,
            "ci": [score - 0.01, score + 0.01],
            "counts": {"requests": n, "sent": n, "reused": 0, "errors": sum(e is not None for e in errors)},
            "error_rate": sum(e is not None for e in errors) / n,
            "cost_usd": n * 1e-5,
            "tokens": {"prompt": 12 * n, "output": n},
            "versions": {
                "scenario_version": scenario_version,
                "prompt_version": "pv",
                "model_version": "mv",
                "metric_version": "xv",
                "run_id": run_id,
            },
            "dataset": {"revision": "synthetic", "checksums": {}},
            "lineage": {
                "helmflow_version": "bench",
                "query_key": "bench-query",
                "score_key": "bench-score",
                "published_at": datetime.now(UTC).isoformat(),
                "flow_run_id": "9f0e0c6e-0000-4000-8000-000000000000",
            },
            "files": [
                f"{prefix}/{f}" for f in ("requests.parquet", "completions.parquet", "stats.parquet", "summary.parquet")
            ],
        }).to_json(),
    )
    return {
        "deployment": deployment,
        "scenario": scenario,
        "run_id": run_id,
        "status": status,
        "main_metric": "exact_match",
        "score": score,
        "ci_low": score - 0.01,
        "ci_high": score + 0.01,
        "error_rate": sum(e is not None for e in errors) / n,
        "cost_usd": n * 1e-5,
        "prompt_tokens": 12 * n,
        "output_tokens": n,
        "error": None,
        "uri": store.url(prefix),
    }


def synthesize_release(store: Store, board: str, runs: list[dict], release_id: str = "2026-01-01-0000bench") -> str:
    """A release over already-synthesized runs (one scenario label per run's scenario)."""
    labels = list(dict.fromkeys(r["scenario"] for r in runs))
    models = list(dict.fromkeys(r["deployment"] for r in runs))
    rows = []
    for m in models:
        row = {"deployment": m, "cost_usd": 0.0, "prompt_tokens": 0, "output_tokens": 0, "missing": 0}
        mine = {r["scenario"]: r for r in runs if r["deployment"] == m}
        for lab in labels:
            cell = mine.get(lab)
            row[lab], row[f"{lab} ci_low"], row[f"{lab} ci_high"] = (
                (cell["score"], cell["ci_low"], cell["ci_high"]) if cell else (None, None, None)
            )
            row["missing"] += cell is None
            for k in ("cost_usd", "prompt_tokens", "output_tokens"):
                row[k] += cell[k] if cell else 0
        scores = [row[lab] for lab in labels if row[lab] is not None]
        row["mean_score"] = sum(scores) / len(scores) if scores else None
        row["mean_win_rate"] = None
        rows.append(row)
    prefix = f"leaderboards/{board}/{release_id}"
    store.write_parquet(f"{prefix}/leaderboard.parquet", pa.Table.from_pylist(rows, schema=leaderboard_schema(labels)))
    store.write_parquet(f"{prefix}/runs.parquet", pa.Table.from_pylist(runs, schema=RUNS_SCHEMA))
    created = datetime.now(UTC).isoformat()
    store.write_json(
        f"{prefix}/release.json",
        ReleaseManifest.model_validate({
            "board": board,
            "board_version": "bench-version",
            "release_id": release_id,
            "created_at": created,
            "status": "complete",
            "scenarios": labels,
            "models": models,
            "run_ids": sorted(r["run_id"] for r in runs),
            "failed": [],
            "helmflow_version": "bench",
        }).to_json(),
    )
    store.write_json(
        f"leaderboards/{board}/latest.json",
        LatestPointer(release_id=release_id, status="complete", created_at=created, uri=store.url(prefix)).to_json(),
    )
    return release_id


def _time(fn, repeat: int) -> float:
    """Median milliseconds of ``repeat`` calls."""
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def measure(root: str, release_id: str, run_id: str, repeat: int) -> dict[str, float]:
    from starlette.testclient import TestClient

    from helmflow.web.app import create_app

    base = f"/boards/{BOARD}/{release_id}/runs/{run_id}/"

    def first_page(client: TestClient) -> None:
        for path in (base, f"{base}chunk-0.js"):  # what the browser needs to show page 1
            assert client.get(path).status_code == 200

    def cold() -> None:
        first_page(TestClient(create_app(root)))

    warm_client = TestClient(create_app(root))
    first_page(warm_client)
    last = -(-len(Store(root).read_parquet(f"runs/{run_id}/requests.parquet", columns=["instance_id"])) // 100) - 1
    return {
        "first page, cold (run page + chunk 0)": _time(cold, repeat),
        "first page, warm": _time(lambda: first_page(warm_client), repeat),
        "last page chunk, warm": _time(lambda: warm_client.get(f"{base}chunk-{last}.js"), repeat),
        "filter index (index.js), cold": _time(lambda: TestClient(create_app(root)).get(f"{base}index.js"), repeat),
    }


class _Server:
    """``helmflow serve``'s app under uvicorn in a thread, for the browser measurements."""

    def __init__(self, root: str):
        import socket
        import threading

        import uvicorn

        from helmflow.web.app import create_app

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(create_app(root), port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join()


def browser_times(root: str, release_id: str, run_id: str, repeat: int) -> dict[str, float]:
    """Milliseconds from navigation to the first page of instances shown, in Chromium."""
    from playwright.sync_api import sync_playwright

    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    static = Path(root) / "leaderboards" / BOARD / release_id / "report" / "runs" / run_id / "index.html"

    def open_first_page(browser, url: str) -> float:
        context = browser.new_context()  # nothing cached in the browser
        page = context.new_page()
        t = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("#viewer[data-state=ready]")
        elapsed = (time.perf_counter() - t) * 1000
        context.close()
        return elapsed

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=args)
        cold, warm = [], []
        for _ in range(repeat):
            server = _Server(root)  # a fresh process state: nothing read yet
            url = f"http://127.0.0.1:{server.port}/boards/{BOARD}/{release_id}/runs/{run_id}/"
            cold.append(open_first_page(browser, url))
            warm.append(open_first_page(browser, url))
            server.stop()
        out = {
            "browser: live app, cold": statistics.median(cold),
            "browser: live app, warm": statistics.median(warm),
            "browser: static export from disk": statistics.median(
                [open_first_page(browser, static.as_uri()) for _ in range(repeat)]
            ),
        }
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,100000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-browser", action="store_true", help="skip the Chromium measurements")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "store"))
        runs = [synthesize_run(store, f"bench{n}", f"synthetic-{n}", "offline/bench", n) for n in sizes]
        release_id = synthesize_release(store, BOARD, runs)
        results = {n: measure(store.root, release_id, f"bench{n}", args.repeat) for n in sizes}
        from helmflow.web.export import export_report

        t = time.perf_counter()
        out = export_report(store, BOARD, release_id)
        export_s = time.perf_counter() - t
        if not args.no_browser:
            for n in sizes:
                results[n].update(browser_times(store.root, release_id, f"bench{n}", args.repeat))
        sizes_on_disk = {
            n: (Path(tmp) / "store" / "runs" / f"bench{n}").stat()
            and sum(f.stat().st_size for f in (Path(tmp) / "store" / "runs" / f"bench{n}").iterdir())
            for n in sizes
        }
    small, large = sizes[0], sizes[-1]
    print(f"{'measurement (median ms)':40} {small:>10,} {large:>10,}   ratio")
    for name in results[small]:
        a, b = results[small][name], results[large][name]
        print(f"{name:40} {a:10.1f} {b:10.1f}   {b / a:5.2f}x")
    print(f"{'run Parquet on disk (MB)':40} {sizes_on_disk[small] / 1e6:10.2f} {sizes_on_disk[large] / 1e6:10.2f}")
    print(f"static export of both runs: {out.files} files in {export_s:.1f} s")


if __name__ == "__main__":
    main()
