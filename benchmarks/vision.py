"""Images end to end: storage per 1,000 images, download-to-first-request, requests/s with images.

    python benchmarks/vision.py [--requests 600] [--concurrency 32] [--image-kb 60]

1. Storage: 1,000 dataset rows whose images repeat as real datasets' do (POPE asks several questions
   about each COCO image: here 1,000 rows over 400 distinct pictures) go through the real loader
   path (``MediaStore.put``: decode, sha256, one atomic write per distinct image); printed: bytes of
   ``media/`` and of ``instances.parquet`` per 1,000 rows, and what storing every row's copy would take.
2. Download-to-first-request: a POPE-shaped mirror (3 Parquet shards, images embedded) -> plan,
   mirror + checksum, unpack into ``media/``, adapt, build requests, first answer from the dev server.
3. Requests/s through the dev server (real ``openai`` SDK, ``run_queries``), the same prompts without
   and with one image each (``--image-kb`` of PNG), side by side in one run.

A benchmark, not a test: numbers depend on the machine and on whoever else is using it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from helmflow.devserver import start_dev_server  # noqa: E402


def noisy_png(seed: int, kb: int) -> bytes:
    """A PNG of about ``kb`` KiB that does not compress away (random pixels, seeded)."""
    from PIL import Image

    side = max(8, int((kb * 1024 / 3) ** 0.5))
    rng = random.Random(seed)
    img = Image.frombytes("RGB", (side, side), bytes(rng.getrandbits(8) for _ in range(side * side * 3)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def storage_per_1000(tmp: Path) -> dict:
    from helmflow.media import MediaStore
    from helmflow.records import INSTANCE_SCHEMA, ContentPart, Input, Instance, Reference, instance_to_row, to_table
    from helmflow.scenarios.vision_shapes import draw, random_shapes
    from helmflow.storage import Store

    store = Store(str(tmp / "storage"))
    media = MediaStore(store)
    pictures = [draw(random_shapes(random.Random(k))) for k in range(400)]
    rows, raw = [], 0
    started = time.perf_counter()
    for i in range(1000):
        data = pictures[(i * 7) % 400]
        raw += len(data)
        part = media.put(data, f"row {i}")
        rows.append(Instance(id=f"r{i}", input=Input(parts=[part, ContentPart(type="text", text=f"Question {i}?")]),
                             references=[Reference(text="yes", correct=True)]))
    seconds = time.perf_counter() - started
    store.write_parquet("instances/bench.parquet", to_table([instance_to_row(r) for r in rows], INSTANCE_SCHEMA))
    return {"rows": 1000, "distinct_images": len(store.find("media")), "media_bytes": du(tmp / "storage" / "media"),
            "instances_parquet_bytes": du(tmp / "storage" / "instances"), "without_dedup_bytes": raw,
            "put_ms_per_image": 1000 * seconds / 1000}


def first_request(tmp: Path, url: str, rows_per_shard: int, kb: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from helmflow.pipeline import adapt_scenario, download_scenario
    from helmflow.plan.compile import plan_board
    from helmflow.plan.spec import BoardSpec, ScenarioEntry
    from helmflow.query import run_queries
    from helmflow.records import Deployment, prompt_from_row
    from helmflow.request_builder import build_requests
    from helmflow.scenarios import get_scenario
    from helmflow.storage import Store

    revision = get_scenario("pope").dataset_revision()
    total = 0
    for shard in range(3):
        rows = [{"id": f"{shard}-{j}", "question_id": str(shard * 10_000 + j), "question": f"Is there a thing {j}?",
                 "answer": "yes" if j % 2 else "no", "image_source": "bench", "image": {"bytes": noisy_png(shard * 10_000 + j, kb), "path": "x.png"},
                 "category": "random"} for j in range(rows_per_shard)]
        path = tmp / "mirror" / "pope" / revision / f"data/test-0000{shard}-of-00003.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path)
        total += path.stat().st_size
    os.environ["HELMFLOW_MIRROR"] = str(tmp / "mirror")
    dep = Deployment(name="bench/vlm", client="openai-compatible", model="bench", base_url=f"{url}/v1", max_concurrency=8)
    store = Store(str(tmp / "store-first"))
    t0 = time.perf_counter()
    spec = BoardSpec(name="bench", version="1", models=[dep.name], scenarios=[ScenarioEntry(name="pope", label="pope")])
    plan = plan_board(spec, {dep.name: dep})
    t_plan = time.perf_counter()
    s = plan.scenarios[0]
    data = download_scenario(store, s)
    t_download = time.perf_counter()
    prompts = [prompt_from_row(r) for r in store.read_parquet(adapt_scenario(store, s, data).prompts_key).to_pylist()]
    requests = build_requests(prompts, s.adapter, dep, store)
    t_built = time.perf_counter()
    result = run_queries(store, dep, requests[:1])
    t_first = time.perf_counter()
    assert result.errors == 0
    return {"rows": 3 * rows_per_shard, "mirror_mb": total / 2**20, "plan_s": t_plan - t0,
            "download_unpack_s": t_download - t_plan, "adapt_build_s": t_built - t_download,
            "first_answer_s": t_first - t_built, "total_s": t_first - t0}


def throughput(tmp: Path, url: str, n: int, concurrency: int, kb: int) -> dict:
    from helmflow.media import MediaStore
    from helmflow.query import run_queries
    from helmflow.records import ContentPart, Deployment, Request, RequestBody
    from helmflow.storage import Store
    from helmflow.versions import request_hash

    out = {}
    for label, with_image in (("text only", False), ("one image", True)):
        store = Store(str(tmp / f"store-{label.replace(' ', '-')}"))
        media = MediaStore(store)
        dep = Deployment(name=f"bench/{label.replace(' ', '-')}", client="openai-compatible", model="bench",
                         base_url=f"{url}/v1", max_concurrency=concurrency)
        reqs = []
        for i in range(n):
            parts = [ContentPart(type="text", text=f"Question {i}?\nanswer {i} is here")]
            if with_image:
                parts.insert(0, media.put(noisy_png(i % 50, kb), "bench"))
            body = RequestBody(model="bench", parts=parts, max_tokens=4, temperature=0.0)
            reqs.append(Request(request_hash=request_hash(body, 0), instance_id=f"i{i}", split="test", body=body))
        started = time.perf_counter()
        result = run_queries(store, dep, reqs)
        seconds = time.perf_counter() - started
        assert result.errors == 0 and result.sent == n
        out[label] = n / seconds
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=600)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--image-kb", type=int, default=60)
    p.add_argument("--pope-rows", type=int, default=100, help="rows per shard of the download-to-first-request mirror")
    args = p.parse_args()
    with start_dev_server() as server, tempfile.TemporaryDirectory() as tmp_dir:
        tmp, url = Path(tmp_dir), server.url
        s = storage_per_1000(tmp)
        print(json.dumps({"storage_per_1000_rows": s}, indent=2))
        f = first_request(tmp, url, args.pope_rows, args.image_kb)
        print(json.dumps({"download_to_first_request": f}, indent=2))
        t = throughput(tmp, url, args.requests, args.concurrency, args.image_kb)
        print(json.dumps({"requests_per_s": t, "with_image_over_text": t["one image"] / t["text only"]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
