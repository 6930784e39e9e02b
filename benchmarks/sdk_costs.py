"""Where the ``openai`` SDK's CPU per request goes, stage by stage, next to raw aiohttp.

    python benchmarks/sdk_costs.py [--requests 3000] [--concurrency 100] [--latency-ms 50] [--rounds 3]

Each variant runs in a fresh process against the dev server (its own process), after a warm-up
request, and reports the CPU of that process per request (a cpuacct cgroup of its own where the
machine has one, else its process time). The stages without a network are timed in a loop on the
SDK's own objects with an in-memory transport (``httpx2.MockTransport``, a canned answer), so the
difference between the rows is what each layer adds:

- ``raw``: aiohttp alone (the throughput ceiling's generator);
- ``transport``: the SDK's aiohttp HTTP client (``DefaultAioHttpClient``) sending a prepared
  ``httpx2.Request``, with no SDK around it;
- ``post``, ``post-content``: ``AsyncOpenAI.post`` with ``cast_to=httpx2.Response`` and the body as a
  dict (the SDK serialises it) or as bytes already serialised (``content=``); ``post-url*``: the same
  with the endpoint's absolute URL as the path (the SDK then does not merge it with its base URL);
  ``post-url-options``: that, with ``params`` and ``security`` given in ``options`` (its mutable
  defaults are then not deep-copied per request);
- ``create``, ``raw-response``: ``chat.completions.create`` (typed ``ChatCompletion``) and
  ``chat.completions.with_raw_response.create`` read as JSON;
- ``post-httpx``: ``post`` on the SDK's default httpx transport;
- ``mock-*``: no network: ``FinalRequestOptions`` made and copied as ``request`` does, the SDK's
  ``_build_request`` (headers, URL, JSON, ``httpx2.Request``), httpx2's ``send`` on the in-memory
  transport, and the whole ``post`` on it.

``--rounds`` repeats every variant, interleaved; medians are printed. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from throughput import cpu_clock, new_cgroup  # this folder's: the same cgroup per measured process

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Question?\nanswer is here"}], "max_tokens": 6,
        "temperature": 0.0}
CANNED = (b'{"id":"x","object":"chat.completion","created":1,"model":"bench","choices":[{"index":0,'
          b'"message":{"role":"assistant","content":"answer"},"finish_reason":"stop"}],'
          b'"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}')
NETWORK = ["raw", "transport", "post", "post-content", "post-url", "post-url-content", "post-url-options",
           "raw-response", "create", "post-httpx"]
OFFLINE = ["mock-options", "mock-build", "mock-send", "mock-post"]


# --------------------------------------------------------------------------- network variants
def _sdk(url: str, concurrency: int, transport: str = "aiohttp") -> Any:
    import httpx2
    import openai

    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    http = (openai.DefaultAioHttpClient(limits=limits, timeout=30) if transport == "aiohttp"
            else openai.DefaultAsyncHttpxClient(limits=limits, timeout=30))
    return openai.AsyncOpenAI(api_key="x", base_url=f"{url}/v1", max_retries=0, timeout=30, http_client=http)


async def _network(variant: str, url: str, n: int, concurrency: int, clock: Callable[[], float]) -> float:
    import httpx2
    import orjson

    payload = json.dumps(BODY).encode()
    session = sdk = http = None
    if variant == "raw":
        import aiohttp

        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
        headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}

        async def one() -> None:
            async with session.post(f"{url}/v1/chat/completions", data=payload, headers=headers) as r:
                await r.read()
                assert r.status == 200
    elif variant == "transport":
        import openai

        http = openai.DefaultAioHttpClient(limits=httpx2.Limits(max_connections=concurrency,
                                                                max_keepalive_connections=concurrency), timeout=30)
        target = f"{url}/v1/chat/completions"
        headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}

        async def one() -> None:
            r = await http.send(httpx2.Request("POST", target, content=payload, headers=headers))
            assert r.status_code == 200 and r.content
    else:
        sdk = _sdk(url, concurrency, "httpx" if variant == "post-httpx" else "aiohttp")
        if variant in ("post", "post-httpx"):
            async def one() -> None:
                r = await sdk.post("/chat/completions", body=BODY, cast_to=httpx2.Response)
                orjson.loads(r.content)
        elif variant == "post-content":
            async def one() -> None:
                r = await sdk.post("/chat/completions", content=orjson.dumps(BODY), cast_to=httpx2.Response)
                orjson.loads(r.content)
        elif variant in ("post-url", "post-url-content"):
            target = f"{url}/v1/chat/completions"  # absolute: the SDK skips merging it with its base URL
            if variant == "post-url":
                async def one() -> None:
                    r = await sdk.post(target, body=BODY, cast_to=httpx2.Response)
                    orjson.loads(r.content)
            else:
                async def one() -> None:
                    r = await sdk.post(target, content=orjson.dumps(BODY), cast_to=httpx2.Response)
                    orjson.loads(r.content)
        elif variant == "post-url-options":
            from openai._models import FinalRequestOptions

            target = f"{url}/v1/chat/completions"
            security = FinalRequestOptions.model_fields["security"].default

            async def one() -> None:  # every mutable option given: the SDK deep-copies no defaults
                r = await sdk.post(target, body=BODY, cast_to=httpx2.Response,
                                   options={"params": {}, "security": dict(security)})
                orjson.loads(r.content)
        elif variant == "raw-response":
            async def one() -> None:
                r = await sdk.chat.completions.with_raw_response.create(**BODY)
                orjson.loads(r.content)
        elif variant == "create":
            async def one() -> None:
                r = await sdk.chat.completions.create(**BODY)
                assert r.choices[0].message.content is not None
        else:
            raise ValueError(variant)
    await one()  # warm-up: imports, the first connection
    left = iter(range(n))

    async def worker() -> None:
        for _ in left:
            await one()

    cpu = clock()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu = clock() - cpu
    if session is not None:
        await session.close()
    if http is not None:
        await http.aclose()
    if sdk is not None:
        await sdk.close()
    return cpu


# --------------------------------------------------------------------------- offline stages
async def _offline(variant: str, n: int, clock: Callable[[], float]) -> float:
    import httpx2
    import openai
    from openai._compat import model_copy
    from openai._models import FinalRequestOptions

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=CANNED, headers={"content-type": "application/json"})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=30,
                             http_client=http)
    await sdk.post("/chat/completions", body=BODY, cast_to=httpx2.Response)  # warm-up (platform, imports)
    opts = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data=BODY)
    prepared = sdk._build_request(opts)
    cpu = clock()
    if variant == "mock-options":
        for _ in range(n):
            o = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data=BODY)
            model_copy(model_copy(o))
    elif variant == "mock-build":
        for _ in range(n):
            sdk._build_request(opts)
    elif variant == "mock-send":
        for _ in range(n):
            r = await http.send(prepared)
            r.content  # noqa: B018 - read, as post does
    elif variant == "mock-post":
        for _ in range(n):
            await sdk.post("/chat/completions", body=BODY, cast_to=httpx2.Response)
    else:
        raise ValueError(variant)
    cpu = clock() - cpu
    await sdk.close()
    return cpu


def child(variant: str, url: str, n: int, concurrency: int, cgroup: str | None) -> None:
    clock = cpu_clock(cgroup)
    if variant in OFFLINE:
        cpu = asyncio.run(_offline(variant, n, clock))
    else:
        cpu = asyncio.run(_network(variant, url, n, concurrency, clock))
    print(json.dumps({"cpu_ms": cpu / n * 1000}))


def run_child(variant: str, url: str, n: int, concurrency: int) -> float:
    cgroup = new_cgroup()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", variant, "--url", url, "--requests", str(n), "--concurrency",
             str(concurrency)] + (["--cgroup", cgroup] if cgroup else []),
            capture_output=True, text=True, check=True, env=dict(os.environ, HELMFLOW_SPOOL=tempfile.mkdtemp()),
        )
    finally:
        if cgroup:
            os.rmdir(cgroup)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["cpu_ms"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--latency-ms", type=float, default=50.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default=",".join(NETWORK + OFFLINE))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--cgroup", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.url, args.requests, args.concurrency, args.cgroup)
        return
    from helmflow.devserver import start_dev_server

    variants = args.variants.split(",")
    probe = new_cgroup()
    if probe:
        os.rmdir(probe)
    with start_dev_server("--latency-ms", str(args.latency_ms)) as server:
        print(f"dev server at {server.url}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start, "
              f"CPU from {'cpuacct cgroups' if probe else 'process time'}", flush=True)
        found: dict[str, list[float]] = {v: [] for v in variants}
        for r in range(args.rounds):
            for v in variants:
                found[v].append(run_child(v, server.url, args.requests, args.concurrency))
                print(f"round {r + 1} {v:>13} {found[v][-1]:7.3f} ms/request  load {os.getloadavg()[0]:.1f}", flush=True)
        print(f"\n{'variant':>13} {'median ms/request':>18}  (all rounds)")
        for v in variants:
            print(f"{v:>13} {statistics.median(found[v]):18.3f}  {' '.join(f'{x:.3f}' for x in found[v])}")
        print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
