"""Each public module works alone: imported first thing in a fresh interpreter, its main entry called
on tiny input. A module that uses a submodule it never imports (``pa.compute`` without
``import pyarrow.compute``) works only when something else imported it first; here nothing has."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

import helmflow

# one tiny instance, scored: what the entries below call their modules on
TINY = """
from helmflow.records import (AdapterSpec, Completion, GenerationParams, Input, Instance, Reference, Request,
                              RequestBody, Stat)
instance = Instance(id="i1", split="test", input=Input(text="Where is Paris?"),
                    references=[Reference(text="France", correct=True)])
body = RequestBody(model="m", prompt="Where is Paris?", max_tokens=5, temperature=0)
requests = [Request(request_hash="h1", instance_id="i1", split="test", sample_index=0, body=body)]
completions = [Completion(request_hash="h1", text="France")]
adapter = AdapterSpec(generation=GenerationParams(num_outputs=1))
"""

# module -> code calling its main entry on tiny input (run with nothing imported before it)
ENTRIES: dict[str, str] = {
    "helmflow.scoring": """
        from helmflow.scoring import score_instances, summarize
        stats = score_instances([instance], requests, completions, adapter, ["exact_match"])
        # a ratio, a pooled number and a counted number each order instances by id (pyarrow.compute)
        stats += [Stat(instance_id=i, split="test", name=n, value=v) for i in ("i1", "i2")
                  for n, v in (("ifeval_instructions_followed_strict", 1.0), ("ifeval_num_instructions", 2.0))]
        rows = {(r.name, r.split): r for r in summarize(stats)}
        assert rows[("exact_match", "test")].mean == 1.0, rows
        assert rows[("ifeval_instruction_strict_accuracy", "test")].mean == 0.5, rows
    """,
    "helmflow.stats": """
        from helmflow.stats import counted_ci, mean_ci, pooled_ci, ratio_ci, win_rates
        import numpy as np
        assert mean_ci([1.0, 0.0])[0] == 0.5
        assert ratio_ci([1.0, 1.0], [2.0, 2.0])[0] == 0.5
        assert pooled_ci({"a": [1.0, 3.0]}, lambda s, n: s["a"] / n)[0] == 2.0
        assert counted_ci(np.array([[1.0], [3.0]]), lambda s: float(s[0]))[0] == 4.0
        assert win_rates({"a": {"x": 1.0}, "b": {"x": 0.0}}) == {"a": 1.0, "b": 0.0}
    """,
    "helmflow.metrics": """
        from helmflow.metrics import METRICS, MetricInput
        x = MetricInput(instance, requests, completions, adapter)
        assert METRICS.get("exact_match").fn(x) == {"exact_match": 1.0}
        assert METRICS.get("quasi_exact_match").fn(x) == {"quasi_exact_match": 1.0}
    """,
    "helmflow.perturbations": """
        from helmflow.perturbations import PERTURBATIONS, resolve
        assert [p.name for p in resolve(["lowercase"])] == ["lowercase"]
        out = PERTURBATIONS.get("lowercase").apply(instance)
        assert out.input.text == "where is paris?", out
    """,
    "helmflow.storage": """
        import tempfile
        import pyarrow as pa
        from helmflow.storage import Store
        store = Store(tempfile.mkdtemp())
        store.write_parquet("t/a.parquet", pa.table({"x": [1, 2]}))
        assert store.read_parquet("t/a.parquet")["x"].to_pylist() == [1, 2]
        store.write_json("t/b.json", {"k": 1})
        assert store.read_json("t/b.json") == {"k": 1} and store.exists("t/b.json")
    """,
    "helmflow.chunks": """
        import pyarrow as pa
        from helmflow.chunks import instance_chunks
        chunks = [c.tolist() for c in instance_chunks(pa.array(["a", "a", "b", "c"]), size=2)]
        assert sum(len(c) for c in chunks) == 4, chunks
    """,
    "helmflow.versions": """
        from helmflow.versions import request_hash, stable_hash
        assert stable_hash({"b": 1, "a": 2}) == stable_hash({"a": 2, "b": 1})
        assert request_hash(body, 0) != request_hash(body, 1)
    """,
    "helmflow.request_builder": """
        from helmflow.request_builder import cost_usd, prompt_text
        assert prompt_text(body) == "Where is Paris?"
    """,
    "helmflow.tokenizers": """
        from helmflow.tokenizers import get_tokenizer
        assert get_tokenizer("whitespace").count("a b c") == 3
    """,
    "helmflow.integrity": """
        from helmflow.integrity import sha256_hex
        assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    """,
    "helmflow.cli": """
        import contextlib, io
        from helmflow.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["list", "scenarios"]) == 0
        assert "mmlu" in out.getvalue(), out.getvalue()[:500]
    """,
}


def public_modules() -> list[str]:
    """Every module of the package, except private ones (a ``_`` name) and the test servers."""
    found = pkgutil.walk_packages(helmflow.__path__, "helmflow.")
    return sorted(m.name for m in found if not any(part.startswith("_") for part in m.name.split(".")[1:]))


def run_fresh(module: str) -> subprocess.CompletedProcess:
    """Import ``module`` first thing in a new interpreter, then call its entry (if it has one)."""
    code = f"import {module}\n" + (TINY + textwrap.dedent(ENTRIES[module]) if module in ENTRIES else "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module", sorted(ENTRIES))
def test_entry_works_in_a_fresh_interpreter(module):
    out = run_fresh(module)
    assert out.returncode == 0, out.stderr[-3000:]


def test_entries_name_real_modules():
    assert set(ENTRIES) <= set(public_modules()) | {"helmflow.metrics"}


@pytest.mark.slow
def test_every_public_module_imports_alone():
    """Each public module imported first thing in a new interpreter; those with an entry above are imported
    so (and then called) by ``test_entry_works_in_a_fresh_interpreter``."""
    modules = [m for m in public_modules() if m not in ENTRIES]
    assert len(modules) > 50
    with ThreadPoolExecutor(4) as pool:
        results = dict(zip(modules, pool.map(run_fresh, modules), strict=True))
    broken = {m: out.stderr[-800:] for m, out in results.items() if out.returncode}
    assert not broken, broken
