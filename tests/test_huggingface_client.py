"""The ``huggingface`` client on a tiny randomly initialised GPT-2 built here (no download).

The model (2 layers, 32 dims) and its byte-level BPE are created from a config and the
``tokenizers`` trainer, saved to a folder, and loaded by path exactly as a user's checkpoint is.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helmflow.clients import ClientResult, PermanentError, load_deployments, make_client
from helmflow.records import ChatMessage, Deployment, RequestBody
from tests.support.cli import REPO, run_cli
from tests.support.tiny_hf import POSITIONS, build_tiny_model

pytestmark = pytest.mark.slow  # its fixtures run a board through Prefect


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("hf") / "tiny-gpt2")


def deployment(model: Path | str, **options) -> Deployment:
    return Deployment(
        name="tiny", client="huggingface", model=str(model), tokenizer=f"hf:{model}", context_window=POSITIONS,
        options={"device": "cpu", **options},
    )


def body(prompt: str, max_tokens: int = 8, **kw) -> RequestBody:
    return RequestBody(model="tiny", prompt=prompt, max_tokens=max_tokens, temperature=kw.pop("temperature", 0.0), **kw)


def complete_all(client, bodies: list[RequestBody]) -> list[ClientResult]:
    """Concurrently, as run_queries sends them."""

    async def go():
        return await asyncio.gather(*(client.complete(b) for b in bodies))

    return asyncio.run(go())


PROMPTS = ["What is 12 + 30?", "cat", "dog dog", "Answer:", "What is 7 * 6? 42\nWhat is 1 + 1?", "42 42 cat"]


def test_greedy_output_has_max_tokens_and_length_finish(tiny_model: Path) -> None:
    client = make_client(deployment(tiny_model))
    client.check_credentials()
    results = complete_all(client, [body(p, max_tokens=n) for p, n in zip(PROMPTS, [1, 3, 5, 7, 9, 11])])
    for r, n in zip(results, [1, 3, 5, 7, 9, 11]):
        assert r.finish_reason == "length"
        assert r.output_tokens == len(r.tokens) == len(r.logprobs) == n
        assert "".join(r.tokens) == r.text
        assert all(lp <= 0 for lp in r.logprobs)
    assert results[0].prompt_tokens == len(client.local_model().tokenizer("What is 12 + 30?")["input_ids"])


def test_batched_and_unbatched_greedy_are_identical(tiny_model: Path) -> None:
    bodies = [body(p, max_tokens=10) for p in PROMPTS]
    batched = make_client(deployment(tiny_model, max_batch_size=8))
    one_by_one = make_client(deployment(tiny_model, max_batch_size=1))
    a, b = complete_all(batched, bodies), complete_all(one_by_one, bodies)
    assert batched.batch_sizes == [len(PROMPTS)] and one_by_one.batch_sizes == [1] * len(PROMPTS)
    assert [r.text for r in a] == [r.text for r in b]
    assert [r.tokens for r in a] == [r.tokens for r in b]
    for ra, rb in zip(a, b):
        assert ra.logprobs == pytest.approx(rb.logprobs, abs=1e-4)


def test_rows_that_cannot_share_the_positions_are_generated_apart(tiny_model: Path) -> None:
    """A long prompt with few new tokens and a short one with many: together they would pass 256 positions."""
    client = make_client(deployment(tiny_model))
    lm = client.local_model()
    long_prompt = "cat" + " dog" * 250
    assert len(lm.tokenizer(long_prompt)["input_ids"]) + 40 > POSITIONS
    bodies = [body(long_prompt, max_tokens=4), body("cat", max_tokens=40)]
    together = complete_all(client, bodies)
    assert client.batch_sizes == [2]
    alone = [complete_all(make_client(deployment(tiny_model)), [b])[0] for b in bodies]
    assert [(r.output_tokens, r.text) for r in together] == [(r.output_tokens, r.text) for r in alone]
    assert [r.output_tokens for r in together] == [4, 40]


def reference_greedy(lm, prompt: str, n: int) -> tuple[list[int], list[float]]:
    """Greedy decoding by hand: n full forward passes, argmax and its log-softmax at each step."""
    import torch

    ids = lm.tokenizer(prompt)["input_ids"]
    out, logprobs = [], []
    with torch.no_grad():
        for _ in range(n):
            step = lm.model(torch.tensor([ids + out])).logits[0, -1].log_softmax(-1)
            out.append(int(step.argmax()))
            logprobs.append(float(step[out[-1]]))
    return out, logprobs


def test_tokens_and_logprobs_match_a_hand_written_greedy_loop(tiny_model: Path) -> None:
    client = make_client(deployment(tiny_model))
    lm = client.local_model()
    results = complete_all(client, [body(p, max_tokens=6) for p in PROMPTS])
    for prompt, r in zip(PROMPTS, results):
        ids, logprobs = reference_greedy(lm, prompt, 6)
        assert r.tokens == [lm.tokenizer.decode([t]) for t in ids]
        assert r.logprobs == pytest.approx(logprobs, abs=1e-4)


def test_stop_sequence_cuts_text_and_tokens(tiny_model: Path) -> None:
    client = make_client(deployment(tiny_model))
    [free] = complete_all(client, [body("dog dog", max_tokens=8)])
    # the first generated token whose text has not appeared before it: a stop sequence met mid-output
    j = next(i for i in range(1, len(free.tokens)) if free.tokens[i] not in "".join(free.tokens[:i]))
    [cut] = complete_all(client, [body("dog dog", max_tokens=8, stop=["<never>", free.tokens[j]])])
    assert cut.finish_reason == "stop"
    assert cut.text == "".join(free.tokens[:j])
    assert cut.tokens == free.tokens[:j] and cut.output_tokens == j
    assert cut.logprobs == pytest.approx(free.logprobs[:j], abs=1e-5)


def test_stop_criteria_end_each_row_on_its_own_stop_or_length(tiny_model: Path) -> None:
    """What lets ``generate`` end early: a row is done at its stop sequence or its max_tokens."""
    import torch

    from helmflow.clients.huggingface import _stop_criteria

    lm = make_client(deployment(tiny_model)).local_model()
    rows = torch.tensor([lm.tokenizer(t)["input_ids"] for t in ("cat cat dog", "cat cat cat", "cat dog cat")])
    assert rows.shape == (3, 3)
    bodies = [body("x", max_tokens=50, stop=[" dog"]), body("x", max_tokens=3), body("x", max_tokens=2)]
    criteria = _stop_criteria(lm, 1, bodies)
    assert criteria(rows[:, :2], None).tolist() == [False, False, False]
    assert criteria(rows, None).tolist() == [True, False, True]  # " dog" completed; 2 of 3; 2 of 2


def test_eos_stops_generation(tiny_model: Path, tmp_path: Path) -> None:
    """A checkpoint whose EOS is a token the greedy output emits: generation ends right before it."""
    lm = make_client(deployment(tiny_model)).local_model()
    ids, _ = reference_greedy(lm, "What is 7 * 6?", 8)
    k = next((i for i in range(1, len(ids)) if ids[i] not in ids[:i]), 0)  # its first appearance
    eos_token = lm.tokenizer.convert_ids_to_tokens(ids[k])
    folder = build_tiny_model(tmp_path / "eos", eos_token=eos_token)  # same seed and corpus: the same weights
    [stopped] = complete_all(make_client(deployment(folder)), [body("What is 7 * 6?", max_tokens=8)])
    assert stopped.finish_reason == "stop"
    assert stopped.output_tokens == len(stopped.logprobs) == k
    assert stopped.text == lm.tokenizer.decode(ids[:k])


def test_sampling_is_seeded_and_differs_from_greedy(tiny_model: Path) -> None:
    bodies = [body("cat", max_tokens=12, temperature=1.0)] * 2
    first = complete_all(make_client(deployment(tiny_model, seed=1)), bodies)
    again = complete_all(make_client(deployment(tiny_model, seed=1)), bodies)
    other = complete_all(make_client(deployment(tiny_model, seed=2)), bodies)
    assert [r.text for r in first] == [r.text for r in again]  # a fresh client reproduces the samples
    assert first[0].text != first[1].text  # two samples of one request differ
    assert [r.text for r in first] != [r.text for r in other]
    assert all(len(r.logprobs) == r.output_tokens for r in first)


def test_chat_messages_without_a_template_are_joined(tiny_model: Path) -> None:
    client = make_client(deployment(tiny_model))
    messages = [ChatMessage(role="user", content="cat"), ChatMessage(role="user", content="dog")]
    chat = RequestBody(model="tiny", messages=messages, max_tokens=4, temperature=0.0)
    [a, b] = complete_all(client, [chat, body("cat\ndog", max_tokens=4)])
    assert a.text == b.text and a.prompt_tokens == b.prompt_tokens


def test_clear_errors_before_anything_is_generated(tiny_model: Path, tmp_path: Path) -> None:
    with pytest.raises(PermanentError, match="not a model folder"):
        make_client(deployment(tmp_path)).check_credentials()
    with pytest.raises(PermanentError, match="Hub repo id; pin it with revision"):
        make_client(deployment("someone/some-model")).check_credentials()
    with pytest.raises(PermanentError, match="bad options: dtype"):
        make_client(deployment(tiny_model, dtype="float8"))
    with pytest.raises(PermanentError, match="bad options: batch_size: Extra inputs"):
        make_client(deployment(tiny_model, batch_size=4))
    too_wide = deployment(tiny_model).model_copy(update={"context_window": 4096})
    with pytest.raises(PermanentError, match="context_window 4096 exceeds the model's 256 positions"):
        make_client(too_wide).check_credentials()
    client = make_client(deployment(tiny_model))
    with pytest.raises(PermanentError, match="exceeds the model's 256 positions"):
        complete_all(client, [body("cat " * 300, max_tokens=4)])


def test_missing_torch_names_the_install(tiny_model: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails as if it were not installed
    hint = r"needs torch: install PyTorch first .*pip install torch==2\.13\.0.*helmflow\[hf\]"
    with pytest.raises(PermanentError, match=hint):
        make_client(deployment(tiny_model)).check_credentials()


def test_loaded_once_per_process(tiny_model: Path) -> None:
    a = make_client(deployment(tiny_model, max_batch_size=2)).local_model()
    b = make_client(deployment(tiny_model, max_batch_size=3)).local_model()
    assert a is b
    assert make_client(deployment(tiny_model, dtype="bfloat16")).local_model() is not a


class ModelHub:
    """The three Hub endpoints ``from_pretrained`` reads for one model repo at one revision, on 127.0.0.1.

    ``GET|HEAD /<repo>/resolve/<rev>/<file>`` (404 ``EntryNotFound`` / ``RevisionNotFound``) and
    ``GET /api/models/<repo>/tree/<rev>[/<dir>]``; every request path is kept for assertions.
    """

    def __init__(self, folder: Path, repo: str, revision: str):
        import re
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        hub = self
        self.requests: list[str] = []
        resolve = re.compile(rf"^/{re.escape(repo)}/resolve/([^/]+)/(.+)$")
        tree = re.compile(rf"^/api/models/{re.escape(repo)}/tree/([^/]+)(?:/(.*))?$")

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                hub.requests.append(f"{self.command} {path}")
                found = resolve.match(path) or tree.match(path)
                if not found:
                    return self.reply(404, b"{}", {"X-Error-Code": "RepoNotFound"})
                if found.group(1) != revision:
                    return self.reply(404, b"{}", {"X-Error-Code": "RevisionNotFound"})
                target = folder / (found.group(2) or "")
                if found.re is tree and target.is_dir():
                    items = [{"type": "file", "path": f.name, "size": f.stat().st_size, "oid": "0" * 40}
                             for f in sorted(target.iterdir()) if f.is_file()]
                    return self.reply(200, json.dumps(items).encode(), {"Content-Type": "application/json"})
                if found.re is resolve and target.is_file():
                    data = target.read_bytes()
                    return self.reply(200, data, {"X-Repo-Commit": revision, "ETag": f'"{hash(data)}"'})
                return self.reply(404, b"{}", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": revision})

            do_HEAD = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ModelHub:
        import threading

        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.mark.slow  # a fresh interpreter: huggingface_hub reads HF_ENDPOINT at import
def test_repo_id_at_a_revision_through_hf_endpoint(tiny_model: Path, tmp_path: Path) -> None:
    """``model: owner/name`` + ``revision:`` downloads through huggingface_hub from ``$HF_ENDPOINT``."""
    rev = "c0ffee" + "0" * 34
    script = textwrap.dedent(f"""
        import asyncio
        from helmflow.clients import PermanentError, make_client
        from helmflow.records import Deployment, RequestBody
        def client(revision):
            return make_client(Deployment(name="hub", client="huggingface", model="someone/tiny", revision=revision,
                                          context_window=256, options={{"device": "cpu"}}))
        try:
            client("{"f" * 40}").check_credentials()
        except PermanentError as exc:
            print("ERR", exc)
        body = RequestBody(model="someone/tiny", prompt="cat", max_tokens=3, temperature=0)
        r = asyncio.run(client("{rev}").complete(body))
        print("OUT", r.output_tokens, r.finish_reason)
    """)
    with ModelHub(tiny_model, "someone/tiny", rev) as hub:
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(tmp_path / "cache"), HF_HUB_DISABLE_TELEMETRY="1")
        proc = subprocess.run(
            [sys.executable, "-c", script], check=False, env=env, capture_output=True, text=True, timeout=300, cwd=REPO
        )
    assert f"ERR deployment 'hub': could not load 'someone/tiny': OSError: {'f' * 40} is not a valid" in proc.stdout
    assert "OUT 3 length" in proc.stdout, proc.stderr[-2000:]
    assert f"GET /someone/tiny/resolve/{rev}/model.safetensors" in hub.requests


def test_models_file_lists_the_local_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    models = tmp_path / "models.yaml"
    models.write_text(
        f"deployments:\n  - name: local/tiny\n    client: huggingface\n    model: {tiny_model}\n"
        f"    tokenizer: hf:{tiny_model}\n    context_window: {POSITIONS}\n    options: {{device: cpu}}\n"
    )
    assert load_deployments(models)["local/tiny"].client == "huggingface"
    proc = run_cli("list", "models", "--models-file", str(models))
    assert proc.returncode == 0, proc.stderr
    assert "local/tiny" in proc.stdout


@pytest.mark.slow
def test_demo_board_through_a_local_checkpoint(tiny_model: Path, tmp_path: Path, prefect_server) -> None:
    import pyarrow.parquet as pq

    models = tmp_path / "models.yaml"
    models.write_text(
        f"deployments:\n  - name: local/tiny\n    client: huggingface\n    model: {tiny_model}\n"
        f"    tokenizer: hf:{tiny_model}\n    context_window: {POSITIONS}\n    max_output_tokens: 8\n"
        f"    options: {{device: cpu, max_batch_size: 8}}\n"
    )
    storage = tmp_path / "store"
    args = ("run", "demo", "--models-file", str(models), "--models", "local/tiny", "--max-instances", "5",
            "--storage", str(storage))
    proc = run_cli(*args, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    from tokenizers import Tokenizer

    from helmflow.plan.spec import load_board

    tokenizer = Tokenizer.from_file(str(tiny_model / "tokenizer.json"))
    runs = sorted((storage / "runs").iterdir())
    from helmflow.pipeline import preflight
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    # one per demo scenario and perturbed copy that changed a sampled instance (the robustness runs)
    plan = preflight(Store(str(storage)), prepare("demo", max_instances=5))
    assert len(runs) == len(plan.all_scenarios) > len(load_board("demo").scenarios)
    truncated = 0
    for run in runs:
        completions = pq.read_table(run / "completions.parquet").to_pylist()
        requests = pq.read_table(run / "requests.parquet").to_pylist()
        perturbed = "~" in json.loads((run / "run.json").read_text())["scenario"]["label"]
        # a perturbed copy holds only the instances its perturbation changed
        assert (len(completions) <= 5 if perturbed else len(completions) == 5) and len(completions) == len(requests)
        assert all(not c["error"] for c in completions)
        assert all(c["finish_reason"] in ("stop", "length") and c["output_tokens"] <= 8 for c in completions)
        assert all(len(c["logprobs"]) == c["output_tokens"] for c in completions)
        for r in requests:  # fitted to the window by the model's own tokenizer
            sent = json.loads(r["body_json"])
            assert sent["max_tokens"] <= 8
            if sent["prompt"] is not None:
                assert len(tokenizer.encode(sent["prompt"]).ids) + sent["max_tokens"] <= POSITIONS
        truncated += sum(r["prompt_truncated"] for r in requests)
    assert truncated > 0  # some demo prompts are longer than this model's window
    # A rerun is served by the cache: nothing is generated again.
    again = run_cli(*args, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted((storage / "runs").iterdir()) == runs


# --------------------------------------------------------------------------- reasoning (the thinking switch)
@pytest.fixture(scope="module")
def thinking_model(tmp_path_factory) -> Path:
    from tests.support.tiny_hf import THINKING_TEMPLATE

    return build_tiny_model(tmp_path_factory.mktemp("hf") / "tiny-thinking", chat_template=THINKING_TEMPLATE)


def test_the_templates_thinking_switch_is_on_for_a_reasoning_deployment_only(thinking_model: Path) -> None:
    from helmflow.clients.huggingface import prompt_of
    from helmflow.records import ReasoningOptions

    lm = make_client(deployment(thinking_model)).local_model()
    chat = [ChatMessage(role="user", content="What is 12 + 30?")]
    plain = RequestBody(model="tiny", messages=chat, max_tokens=8, temperature=0.0)
    thinking = plain.model_copy(update={"reasoning": ReasoningOptions(parser="think-tags")})
    assert prompt_of(lm, plain)[0] == "user: What is 12 + 30?\nassistant:"
    assert prompt_of(lm, thinking)[0] == "user: What is 12 + 30?\nassistant: <think>"
    reasoner = make_client(deployment(thinking_model).model_copy(
        update={"reasoning": ReasoningOptions(parser="think-tags")}))
    [r] = complete_all(reasoner, [thinking])
    [p] = complete_all(make_client(deployment(thinking_model)), [plain])
    # the random model never closes the tag: its 8 tokens are all reasoning, cut by max_tokens
    assert r.finish_reason == "length" and r.truncated_in_reasoning and r.text == ""
    assert r.reasoning and len(r.tokens) == 8 and "</think>" not in r.reasoning
    assert p.text and p.reasoning == "" and not p.truncated_in_reasoning


def test_a_template_without_a_switch_renders_as_before(tiny_model: Path) -> None:
    from helmflow.clients.huggingface import template_switches
    from helmflow.records import ReasoningOptions

    lm = make_client(deployment(tiny_model)).local_model()
    body = RequestBody(model="tiny", prompt="x", max_tokens=2, temperature=0.0,
                       reasoning=ReasoningOptions(parser="think-tags"))
    assert template_switches(lm.tokenizer, body) == {}
