"""Local Hugging Face checkpoints: transformers generation in this process (``helmflow[hf]`` + torch).

``model:`` is a local folder (``config.json``, weights, tokenizer files) or a Hub repo id, which
then needs a pinned ``revision:`` (read from the Hub, or from a mirror through ``HF_ENDPOINT``).
Options (``options:``): ``device`` (``auto``: CUDA, then MPS, then CPU), ``dtype`` (``float32``,
``bfloat16``, ``float16`` or ``auto``: the checkpoint's), ``max_batch_size``, ``batch_wait_ms``,
``seed``, ``trust_remote_code``.

How it runs: ``complete`` is async and called concurrently; calls are queued, and a runner on the
event loop takes up to ``max_batch_size`` of them (waiting ``batch_wait_ms`` for more) and
generates them together in one worker thread shared by every local model of the process, so the
loop never blocks and two boards never compete for one GPU. Each model is loaded once per process
and reused by every task (keyed by source, revision, device, dtype).

Generation: greedy when ``temperature == 0`` (batched: left padding gives the same tokens as one
by one); sampling otherwise (top-k and top-p off), one request at a time under a seed derived from
``seed``, the request and how many times this process has sampled it, so a fresh process reproduces
the same samples. (A request body carries no sample index: a sample re-sent alone after a failure
gets the first sample's seed again.) Stops at EOS, at a stop sequence (cut from the text, like
HELM) or after ``max_tokens`` (finish_reason ``length``). The generated tokens and their
log-probabilities under the model's unscaled distribution are always returned.

Echo requests (log-likelihood multiple choice: ``echo`` with ``max_tokens`` 0) run one forward pass
over the prompt and return its tokens (special tokens the tokenizer adds left out), their offsets in
the prompt, and each token's logprob given the tokens before it (the first token, with nothing
before it, gets 0).

Reasoning (``reasoning: {parser: think-tags}``): where the chat template has a thinking switch (its
text names ``enable_thinking``, as Qwen3's does) it is rendered with ``enable_thinking=True``; the
``<think>…</think>`` part of the output becomes the completion's reasoning and the rest its answer
(an output cut by ``max_tokens`` inside the tags is ``truncated_in_reasoning``). Stop sequences end the
answer, never the thinking: generation runs without them and the answer is cut after ``</think>``.

Vision-language models: a checkpoint whose config is one of transformers' image-text-to-text
models (LLaVA, Idefics, Qwen2-VL, Gemma 3, ...) is loaded with ``AutoProcessor`` and
``AutoModelForImageTextToText``. A request with image parts becomes one user turn of the
processor's chat template, text and images in the request's order (without a template: the text
parts joined with the processor's image token in each image's place); the images are the stored
bytes (checked against their sha256), decoded with Pillow and converted to RGB, as HELM's local VLM
client does; the processor then resizes and normalises them as the model was trained. Greedy image
rows are batched like text rows (rows with and without images are not mixed). ``options.images``
(limits, ``tokens_per_image`` for window fitting) applies as for every client kind.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.clients import client_kind
from helmflow.clients.base import (
    THINK_OPEN,
    Client,
    ClientResult,
    PermanentError,
    cut_at_stops,
    split_think_tags,
    think_tags,
)
from helmflow.media import ImageOptions, MediaError, MediaStore
from helmflow.records import Deployment, RequestBody

log = logging.getLogger("helmflow")

INSTALL_HINT = (
    "install PyTorch first (CPU: pip install torch==2.13.0; GPU: the build for your CUDA), "
    "then pip install 'helmflow[hf]'"
)


class HuggingFaceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    device: str = Field("auto", description="`auto` (CUDA, then MPS, then CPU) or a torch device")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "float32", description="the weights' dtype (`auto`: the checkpoint's)")
    max_batch_size: int = Field(8, ge=1, description="greedy requests generated together in one batch")
    batch_wait_ms: float = Field(10.0, ge=0, description="how long a batch waits for more requests")
    seed: int = Field(0, description="seeds sampling (temperature > 0) together with the request")
    trust_remote_code: bool = Field(False, description="let transformers run the checkpoint's own code")
    # read by the query step (limits, tokens_per_image); validated here
    images: ImageOptions | None = Field(None, description="image limits and tokens per image (vision checkpoints)")


# --------------------------------------------------------------------------- loading (once per process)
@dataclass
class LocalModel:
    model: Any
    tokenizer: Any
    device: str
    max_positions: int | None
    eos_ids: frozenset[int]
    processor: Any = None  # a vision-language model's processor (tokenizer + image processor); None: text only


_MODELS: dict[tuple, LocalModel] = {}
_LOAD_LOCK = threading.Lock()
#: every generation of the process runs here, one at a time
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="helmflow-hf")


def is_local(model: str) -> bool:
    return model.startswith(("/", ".", "~")) or Path(model).expanduser().is_dir()


def _pick_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def load_model(
    source: str, revision: str | None, device: str, dtype: str, trust_remote_code: bool = False
) -> LocalModel:
    """The model and tokenizer at ``source`` (a folder or a repo id at ``revision``), loaded once per key."""
    key = (source, revision, device, dtype, trust_remote_code)
    with _LOAD_LOCK:
        if key not in _MODELS:
            import torch
            from transformers import (
                AutoConfig,
                AutoModelForCausalLM,
                AutoModelForImageTextToText,
                AutoProcessor,
                AutoTokenizer,
            )
            from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # no bars in helmflow's own progress output
            where = {"revision": revision} if revision else {}
            code = {"trust_remote_code": trust_remote_code}
            processor = None
            auto_model: Any
            if type(AutoConfig.from_pretrained(source, **code, **where)) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING:
                processor = AutoProcessor.from_pretrained(source, **code, **where)
                tokenizer, auto_model = processor.tokenizer, AutoModelForImageTextToText
            else:
                tokenizer, auto_model = AutoTokenizer.from_pretrained(source, **code, **where), AutoModelForCausalLM
            tokenizer.padding_side = "left"  # generation continues each row from its last real token
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            model = auto_model.from_pretrained(
                source, dtype=dtype if dtype == "auto" else getattr(torch, dtype), **code, **where
            )
            resolved = _pick_device(device)
            model.to(resolved).eval()
            eos = model.generation_config.eos_token_id
            eos_ids = {eos} if isinstance(eos, int) else set(eos or [])
            if tokenizer.eos_token_id is not None:
                eos_ids.add(tokenizer.eos_token_id)
            positions = getattr(model.config.get_text_config(), "max_position_embeddings", None)
            _MODELS[key] = LocalModel(model, tokenizer, resolved, positions, frozenset(eos_ids), processor)
        return _MODELS[key]


# --------------------------------------------------------------------------- generation (worker thread)
THINKING_SWITCH = "enable_thinking"


def template_switches(templating: Any, body: RequestBody) -> dict[str, Any]:
    """The chat template's thinking switch, turned on for a reasoning deployment when the template has one."""
    template = templating.chat_template if isinstance(templating.chat_template, str) else ""
    if body.reasoning is not None and THINKING_SWITCH in template:
        return {THINKING_SWITCH: True}
    return {}


def prompt_of(lm: LocalModel, body: RequestBody) -> tuple[str, bool]:
    """The text to encode and whether the tokenizer should add its special tokens (a chat template has them).

    A vision-language model's template is its processor's, and its turns hold lists of typed parts
    (``{"type": "image"}`` where an image goes), which is what those templates iterate over.
    """
    templating = lm.processor if lm.processor is not None else lm.tokenizer
    if body.parts is not None:
        if lm.processor is None:
            if any(p.type != "text" for p in body.parts):
                raise PermanentError("the model is not a vision-language model (its config is not one of "
                                     "transformers' image-text-to-text models), so it cannot see the request's images")
            return "".join(p.text or "" for p in body.parts), True
        content = [{"type": "image"} if p.type == "image" else {"type": "text", "text": p.text} for p in body.parts]
        if templating.chat_template:
            turn = [{"role": "user", "content": content}]
            return templating.apply_chat_template(turn, add_generation_prompt=True, tokenize=False,
                                                  **template_switches(templating, body)), False
        token = getattr(lm.processor, "image_token", None)
        if not token:
            raise PermanentError("the model's processor has neither a chat template nor an image token: "
                                 "there is no way to place the images in the prompt")
        return "".join(token if c["type"] == "image" else (c["text"] or "") for c in content), True
    if body.messages is None:
        return body.prompt or "", True
    messages = [
        {"role": m.role, "content": m.content if lm.processor is None else [{"type": "text", "text": m.content}]}
        for m in body.messages
    ]
    if templating.chat_template:
        return templating.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                              **template_switches(templating, body)), False
    return "\n".join(m.content for m in body.messages), True


def images_of(media: MediaStore, body: RequestBody) -> list:
    """The request's images in order: stored bytes (sha256-checked), decoded, in RGB (what processors expect)."""
    from PIL import Image

    images = []
    for part in body.parts or []:
        if part.type == "image":
            with Image.open(io.BytesIO(media.read(part))) as img:
                images.append(img.convert("RGB"))
        elif part.type != "text":
            raise PermanentError(f"{part.type} parts are not supported")
    return images


@dataclass
class Row:
    """One request's model inputs: its text, whether special tokens are added, its images and token ids."""

    text: str
    specials: bool
    images: list
    ids: list[int]


def encode(lm: LocalModel, body: RequestBody, media: MediaStore) -> Row:
    text, specials = prompt_of(lm, body)
    images = images_of(media, body) if body.parts is not None else []
    if lm.processor is None:
        return Row(text, specials, images, lm.tokenizer(text, add_special_tokens=specials)["input_ids"])
    # the processor expands each image token into the model's image positions: count those
    one = lm.processor(text=[text], images=[images] if images else None, add_special_tokens=specials)
    return Row(text, specials, images, list(one["input_ids"][0]))


def _stop_criteria(lm: LocalModel, prompt_len: int, bodies: list[RequestBody]):
    """Per row: done after its own ``max_tokens``, or once its text holds one of its stop sequences."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    # A stop sequence shows up at the end of a row the step it is completed; a token holds at least
    # one byte, so the last 4 * len(stop) + 4 tokens always contain it: decode only those.
    tails = [4 * max((len(s) for s in b.stop), default=0) + 4 for b in bodies]

    class PerRow(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            new = input_ids[:, prompt_len:]
            done = []
            for row, body, tail in zip(new.tolist(), bodies, tails):
                stop = len(row) >= body.max_tokens
                if not stop and body.stop:
                    text = lm.tokenizer.decode(row[-tail:], skip_special_tokens=False)
                    stop = any(s and s in text for s in body.stop)
                done.append(stop)
            return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([PerRow()])


def _finish(
    lm: LocalModel, body: RequestBody, ids: list[int], logprobs: list[float], prompt_tokens: int
) -> ClientResult:
    """Cut one row at EOS, its first stop sequence, or ``max_tokens``; tokens kept are those wholly in the text."""
    decode = lm.tokenizer.decode
    ids, logprobs = ids[: body.max_tokens], logprobs[: body.max_tokens]
    finish = "length" if len(ids) == body.max_tokens else "stop"
    for t, token in enumerate(ids):
        if token in lm.eos_ids:
            ids, logprobs, finish = ids[:t], logprobs[:t], "stop"
            break
    text = decode(ids, skip_special_tokens=False)
    cuts = [text.index(s) for s in body.stop if s and s in text]
    if cuts:
        text, finish = text[: min(cuts)], "stop"
        keep = 0
        while keep < len(ids) and len(decode(ids[: keep + 1], skip_special_tokens=False)) <= len(text):
            keep += 1
        ids, logprobs = ids[:keep], logprobs[:keep]
    return ClientResult(
        text=text,
        finish_reason=finish,
        prompt_tokens=prompt_tokens,
        output_tokens=len(ids),
        tokens=[decode([t], skip_special_tokens=False) for t in ids],
        logprobs=logprobs,
    )


def generate(
    lm: LocalModel, bodies: list[RequestBody], seed: int | None = None, media: MediaStore | None = None
) -> list[ClientResult | Exception]:
    """Results for ``bodies`` (all greedy, or one sampled body under ``seed``), in order.

    Rows share one ``model.generate`` call while the longest prompt plus the largest ``max_tokens``
    fits the model's positions (every row is padded to the longest and runs the most steps), and
    while they all have images or all have none. ``media`` holds the images of image parts.
    """
    out: list[ClientResult | Exception | None] = [None] * len(bodies)
    kinds: dict[tuple[bool, bool], list[tuple[int, Row]]] = {}  # rows with images / without, apart
    limit = lm.max_positions
    for i, body in enumerate(bodies):
        if body.echo:
            out[i] = score_prompt(lm, body)
            continue
        try:
            row = encode(lm, body, media or MediaStore(None))
        except (PermanentError, MediaError, FileNotFoundError) as exc:
            out[i] = exc if isinstance(exc, PermanentError) else PermanentError(str(exc))
            continue
        if limit and len(row.ids) + body.max_tokens > limit:
            out[i] = PermanentError(
                f"prompt of {len(row.ids)} tokens + max_tokens {body.max_tokens} exceeds the model's "
                f"{limit} positions: set the deployment's context_window to at most {limit} "
                f"and its tokenizer to the model's own (hf:<model folder>)"
                + (" (each image takes image positions: declare them in options.images.tokens_per_image)"
                   if row.images else "")
            )
            continue
        kinds.setdefault((bool(row.images), row.specials), []).append((i, row))

    for rows in kinds.values():
        group: list[tuple[int, Row]] = []
        flushed: list[tuple[int, Row | None]] = [*rows, (-1, None)]
        for k, nxt in flushed:  # a sentinel flushes the last group
            if group and (
                nxt is None
                or (limit and max([len(nxt.ids)] + [len(r.ids) for _, r in group])
                    + max([bodies[k].max_tokens] + [bodies[j].max_tokens for j, _ in group]) > limit)
            ):
                done = _generate_rows(lm, [bodies[j] for j, _ in group], [r for _, r in group], seed)
                for (j, _), result in zip(group, done):
                    out[j] = result
                group = []
            if nxt is not None:
                group.append((k, nxt))
    return out  # type: ignore[return-value]


def score_prompt(lm: LocalModel, body: RequestBody) -> ClientResult | Exception:
    """The prompt's tokens, offsets and logprobs from one forward pass (nothing generated)."""
    import torch

    if body.max_tokens:
        return PermanentError("echo requests generate nothing: max_tokens must be 0")
    if any(p.type != "text" for p in body.parts or []):  # scoring the text alone would ignore the images
        return PermanentError("echo requests (log-likelihood scoring) with images are not supported")
    text, specials = prompt_of(lm, body)
    enc = lm.tokenizer(text, add_special_tokens=specials, return_offsets_mapping=True)
    ids, spans = enc["input_ids"], enc["offset_mapping"]
    if lm.max_positions and len(ids) > lm.max_positions:
        return PermanentError(f"prompt of {len(ids)} tokens exceeds the model's {lm.max_positions} positions")
    with torch.inference_mode():
        steps = lm.model(torch.tensor([ids], device=lm.device)).logits[0].float().log_softmax(-1)
    logprobs = [0.0] + [float(steps[i - 1, ids[i]]) for i in range(1, len(ids))]
    keep = [i for i, (start, end) in enumerate(spans) if end > start]
    decode = lm.tokenizer.decode
    return ClientResult(text="", finish_reason="length", prompt_tokens=len(ids), output_tokens=0,
                        tokens=[decode([ids[i]], skip_special_tokens=False) for i in keep],
                        logprobs=[logprobs[i] for i in keep], text_offsets=[spans[i][0] for i in keep])


def _generate_rows(lm: LocalModel, bodies: list[RequestBody], rows: list[Row], seed: int | None) -> list[ClientResult]:
    import torch

    tok = lm.tokenizer
    if rows[0].images:  # the processor pads the texts and turns the images into the model's pixel inputs
        enc = lm.processor(text=[r.text for r in rows], images=[r.images for r in rows], padding=True,
                           return_tensors="pt", add_special_tokens=rows[0].specials)
        enc = enc.to(lm.device, dtype=lm.model.dtype)  # pixels in the weights' dtype (ids stay integers)
    else:
        enc = tok.pad({"input_ids": [r.ids for r in rows]}, padding=True, return_tensors="pt").to(lm.device)
    prompt_len = enc["input_ids"].shape[1]
    temperature = bodies[0].temperature
    config = copy.deepcopy(lm.model.generation_config)
    config.update(
        max_new_tokens=max(b.max_tokens for b in bodies),
        do_sample=temperature > 0,
        temperature=temperature if temperature > 0 else 1.0,
        top_k=None,
        top_p=1.0,
        pad_token_id=tok.pad_token_id,
        eos_token_id=sorted(lm.eos_ids) or None,
        output_logits=True,
        return_dict_in_generate=True,
    )
    if seed is not None:
        torch.manual_seed(seed)
    with torch.inference_mode():
        stopping = _stop_criteria(lm, prompt_len, bodies)
        gen = lm.model.generate(**enc, generation_config=config, stopping_criteria=stopping)
    new = gen.sequences[:, prompt_len:]
    steps = torch.stack(gen.logits, dim=1).float().log_softmax(-1)  # (batch, steps, vocab), unscaled
    chosen = steps.gather(-1, new[:, : steps.shape[1]].unsqueeze(-1)).squeeze(-1)
    return [
        _finish(lm, body, new[i].tolist(), chosen[i].tolist(), int(enc["attention_mask"][i].sum()))
        for i, body in enumerate(bodies)
    ]


def sample_seed(seed: int, body: RequestBody, occurrence: int) -> int:
    """A seed per (deployment seed, request, n-th time this process samples it): reproducible in a fresh process."""
    digest = hashlib.sha256(f"{seed}|{body.model_dump_json()}|{occurrence}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


# --------------------------------------------------------------------------- the client
@dataclass(eq=False)  # queued calls are told apart by identity
class _Pending:
    body: RequestBody
    future: asyncio.Future
    seed: int | None = None


@client_kind("huggingface")
class HuggingFaceClient(Client):
    requires = ("transformers",)  # and PyTorch, which the user installs for their hardware (INSTALL_HINT)
    extra = "hf"
    reasoning_options = ("parser",)

    @classmethod
    def reasoning_problem(cls, deployment: Deployment) -> str | None:
        problem = super().reasoning_problem(deployment)
        if problem is None and deployment.reasoning is not None and deployment.reasoning.parser != "think-tags":
            return "huggingface: the reasoning of a local model is read from its text: reasoning.parser: think-tags"
        return problem

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self.options = self.validated_options(HuggingFaceOptions)
        self._queue: list[_Pending] = []
        self._runner: asyncio.Task | None = None
        self._sampled: dict[str, int] = {}
        self.batch_sizes: list[int] = []  # one entry per generate call: what batching achieved

    def local_model(self) -> LocalModel:
        """Load (once per process) with errors that name the deployment and the fix."""
        d, o = self.deployment, self.options
        local = is_local(d.model)
        if local and not (Path(d.model).expanduser() / "config.json").is_file():
            raise PermanentError(f"deployment {d.name!r}: {d.model} is not a model folder (no config.json in it)")
        if not local and not d.revision:
            raise PermanentError(
                f"deployment {d.name!r}: model {d.model!r} is a Hub repo id; pin it with revision: <commit sha or tag>"
            )
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            raise PermanentError(f"deployment {d.name!r} needs {exc.name}: {INSTALL_HINT}") from None
        source = str(Path(d.model).expanduser()) if local else d.model
        try:
            lm = load_model(source, None if local else d.revision, o.device, o.dtype, o.trust_remote_code)
        except Exception as exc:  # noqa: BLE001 - transformers raises OSError, ValueError, HTTP errors...
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise PermanentError(
                f"deployment {d.name!r}: could not load {d.model!r}: {type(exc).__name__}: {first}"
            ) from None
        if lm.max_positions and d.context_window > lm.max_positions:
            raise PermanentError(
                f"deployment {d.name!r}: context_window {d.context_window} exceeds the model's "
                f"{lm.max_positions} positions; set context_window: {lm.max_positions} or less"
            )
        return lm

    def check_credentials(self) -> None:
        """No key is needed; loading the model here fails fast, before any request is built or sent."""
        if self.deployment.tokenizer == "whitespace":
            log.warning(
                "deployment %r fits prompts by whitespace words; set tokenizer: hf:<model folder> to count "
                "the model's own tokens", self.deployment.name,
            )
        self.local_model()

    async def complete(self, body: RequestBody) -> ClientResult:
        seed = None
        if body.temperature > 0:
            key = body.model_dump_json()
            n = self._sampled.get(key, 0)
            self._sampled[key] = n + 1
            seed = sample_seed(self.options.seed, body, n)
        # think tags: the stop sequences end the answer after </think>, never the thinking
        sent = body.model_copy(update={"stop": []}) if think_tags(body) and body.stop else body
        pending = _Pending(sent, asyncio.get_running_loop().create_future(), seed)
        self._queue.append(pending)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        result: ClientResult = await pending.future
        if body.reasoning is not None:
            text = result.text
            # a template whose switch opens the tag in the prompt (as DeepSeek-R1's does): the output starts inside
            if prompt_of(self.local_model(), body)[0].rstrip().endswith(THINK_OPEN):
                text = THINK_OPEN + text
            result.text, result.reasoning, result.truncated_in_reasoning = split_think_tags(text, result.finish_reason)
            cut_at_stops(result, body.stop)
        return result

    def _take(self) -> list[_Pending]:
        """The next batch: one sampled request alone, or up to ``max_batch_size`` greedy ones."""
        self._queue = [p for p in self._queue if not p.future.done()]  # timed out or cancelled meanwhile
        if not self._queue:
            return []
        if self._queue[0].seed is not None:
            return [self._queue.pop(0)]
        batch = [p for p in self._queue if p.seed is None][: self.options.max_batch_size]
        self._queue = [p for p in self._queue if p not in batch]
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        batch: list[_Pending] = []
        try:
            lm = await loop.run_in_executor(_WORKER, self.local_model)
            while self._queue:
                if len(self._queue) < self.options.max_batch_size:
                    await asyncio.sleep(self.options.batch_wait_ms / 1000)  # let concurrent callers join
                batch = self._take()
                if not batch:
                    continue
                self.batch_sizes.append(len(batch))
                results = await loop.run_in_executor(
                    _WORKER, generate, lm, [p.body for p in batch], batch[0].seed, self.media
                )
                for p, result in zip(batch, results):
                    if p.future.done():
                        continue
                    if isinstance(result, Exception):
                        p.future.set_exception(PermanentError(f"deployment {self.deployment.name!r}: {result}"))
                    else:
                        p.future.set_result(result)
                batch = []
        except BaseException as exc:
            failure = exc if isinstance(exc, PermanentError) else PermanentError(
                f"deployment {self.deployment.name!r}: generation failed: {type(exc).__name__}: {exc}"
            )
            for p in batch + self._queue:
                if not p.future.done():
                    p.future.set_exception(failure)
            self._queue.clear()
            if isinstance(exc, asyncio.CancelledError):
                raise
