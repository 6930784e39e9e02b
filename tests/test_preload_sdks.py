"""The CLI imports the provider SDKs on a side thread while it waits for Prefect, not on the I/O loop.

Run in fresh interpreters: the test process has imported the SDKs long before.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from helmflow.clients import CLIENTS, preload_sdks
from helmflow.records import Deployment

kinds = {kinds!r}
CLIENTS.get("openai").sdk_modules = {openai_modules!r}
before = {{m: m in sys.modules for m in ("openai", "anthropic")}}

thread = preload_sdks(Deployment(name=f"d{{i}}", client=k, model="m", base_url="http://127.0.0.1:1/v1")
                      for i, k in enumerate(kinds))
if thread is not None:
    thread.join(60)
print(json.dumps({{"before": before, "thread": thread.name if thread else None,
                   "after": {{m: m in sys.modules for m in ("openai", "anthropic")}}}}))
"""


def _probe(kinds: list[str], openai_modules: tuple[str, ...] = ("httpx2", "openai")) -> dict:
    script = PROBE.format(kinds=kinds, openai_modules=openai_modules)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_boards_sdks_are_imported_on_a_side_thread():
    seen = _probe(["openai-compatible", "anthropic", "offline"])
    assert seen["before"] == {"openai": False, "anthropic": False}  # helmflow.clients alone imports neither
    assert seen["thread"] == "helmflow-preload"
    assert seen["after"] == {"openai": True, "anthropic": True}


@pytest.mark.slow
def test_only_the_sdks_of_the_boards_clients_and_none_for_offline_boards():
    assert _probe(["openai"])["after"] == {"openai": True, "anthropic": False}
    offline = _probe(["offline"])
    assert offline["thread"] is None and offline["after"] == {"openai": False, "anthropic": False}


@pytest.mark.slow
def test_a_module_that_does_not_import_is_left_to_the_client():
    seen = _probe(["openai"], openai_modules=("helmflow_no_such_sdk", "openai"))
    assert seen["thread"] == "helmflow-preload" and seen["after"]["openai"]  # the rest still loaded
