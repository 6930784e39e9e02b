"""Requests for a deployment: prompts fitted to its context window, request bodies, and their price.

Deterministic and offline (no client, no journal): the query stage builds what it will send here,
and the dry run builds the very same requests to count and price them.
"""

from __future__ import annotations

from helmflow.adapters import MEDIA_MARK, Prompt
from helmflow.media import ImageOptions, MediaStore, image_options, prepare_image
from helmflow.records import AdapterSpec, ChatMessage, ContentPart, Deployment, ImageRequest, Request, RequestBody
from helmflow.storage import Store
from helmflow.tokenizers import get_tokenizer
from helmflow.versions import request_hash


def fit_prompt(prompt: Prompt, deployment: Deployment, max_tokens: int,
               tokens_per_image: int = 0) -> tuple[str, int, bool]:
    """Drop in-context examples from the end, then truncate, until prompt + output fit the window.

    Each image (a ``MEDIA_MARK`` in the text) counts ``tokens_per_image`` on top of the text's tokens.
    """
    tok = get_tokenizer(deployment.tokenizer)
    budget = deployment.context_window - max_tokens

    def size(text: str) -> int:
        return tok.count(text) + tokens_per_image * text.count(MEDIA_MARK)

    n = len(prompt.examples)
    while n > 0 and size(prompt.text(n)) > budget:
        n -= 1
    text = prompt.text(n)
    if size(text) > budget:
        # room for every image the text holds: a cut keeps at most those
        return tok.truncate(text, max(budget - tokens_per_image * text.count(MEDIA_MARK), 0)), n, True
    return text, n, n < len(prompt.examples)


def kept_media(prompt: Prompt, n_examples: int) -> list[ContentPart]:
    """The images of the head, the first ``n_examples`` examples and the query, in prompt order."""
    counts = [prompt.head.count(MEDIA_MARK), *(e.count(MEDIA_MARK) for e in prompt.examples),
              prompt.query.count(MEDIA_MARK)]
    if sum(counts) != len(prompt.media):
        raise ValueError(f"instance {prompt.instance_id!r}: the prompt has {sum(counts)} image marks but "
                         f"{len(prompt.media)} images")
    keep = counts[0] + sum(counts[1 : 1 + n_examples])
    dropped = sum(counts[1 + n_examples : -1])
    return prompt.media[:keep] + prompt.media[keep + dropped :]


def content_parts(
    text: str, media: list[ContentPart], opts: ImageOptions, store: MediaStore | None, where: str
) -> tuple[list[ContentPart], list[str]]:
    """Fitted text split at its image marks into ordered text and image parts (a truncation keeps the
    first images); each image prepared for the deployment's limits, with a note per change."""
    pieces = text.split(MEDIA_MARK)
    parts: list[ContentPart] = []
    notes: list[str] = []
    for i, piece in enumerate(pieces):
        if piece:
            parts.append(ContentPart(type="text", text=piece))
        if i < len(pieces) - 1:
            image = media[i]
            if store is not None:
                image, note = prepare_image(store, image, opts, where)
                if note:
                    notes.append(note)
            parts.append(image.model_copy())
    return parts, notes


def fit_messages(
    messages: list[ChatMessage], deployment: Deployment, max_tokens: int
) -> tuple[list[ChatMessage], bool]:
    """Chat prompts: drop the oldest turns after the system message (examples, then history), then
    cut the last turn, until the messages' tokens plus the output fit the window."""
    tok = get_tokenizer(deployment.tokenizer)
    budget = deployment.context_window - max_tokens
    system = [m for m in messages[:1] if m.role == "system"]
    turns = messages[len(system):]

    def size(ms: list) -> int:
        return sum(tok.count(m.content) for m in ms)

    fitted = list(turns)
    while len(fitted) > 1 and size(system + fitted) > budget:
        fitted.pop(0)
        while len(fitted) > 1 and fitted[0].role == "assistant":  # a conversation restarts on a user turn
            fitted.pop(0)
    if size(system + fitted) > budget:
        room = max(budget - size(system + fitted[:-1]), 0)
        fitted[-1] = fitted[-1].model_copy(update={"content": tok.truncate(fitted[-1].content, room)})
        return system + fitted, True
    return system + fitted, len(fitted) < len(turns)


def build_requests(
    prompts: list[Prompt], adapter: AdapterSpec, deployment: Deployment, store: Store | None = None
) -> list[Request]:
    """Requests for ``prompts`` fitted to the deployment. Prompts with images become content parts;
    with a ``store`` each image is also brought within the deployment's limits (``options.images``),
    without one (dry runs) images are counted but not read."""
    from helmflow.clients import CLIENTS

    gen = adapter.generation
    max_tokens = deployment.output_budget(gen.max_tokens)
    kind = CLIENTS.get(deployment.client) if deployment.reasoning is not None else None
    opts = image_options(deployment) if any(p.media for p in prompts) else ImageOptions()
    media = MediaStore(store) if store is not None else None
    requests: list[Request] = []
    images = (ImageRequest(**adapter.image_generation.model_dump(), n=gen.num_outputs)
              if adapter.image_generation is not None else None)
    for prompt in prompts:
        if prompt.continuations:
            requests += continuation_requests(prompt, deployment)
            continue
        if prompt.variants:
            requests += variant_requests(prompt, adapter, deployment, max_tokens)
            continue
        if prompt.document:
            requests += document_requests(prompt, deployment)
            continue
        notes: list[str] = []
        messages, parts = prompt.messages, None
        if messages is not None:
            text, n_train = None, 0
            messages, truncated = fit_messages(messages, deployment, max_tokens)
        else:
            text, n_train, truncated = fit_prompt(prompt, deployment, max_tokens,
                                                  opts.tokens_per_image if prompt.media else 0)
            if prompt.media:
                where = f"instance {prompt.instance_id!r} for deployment {deployment.name!r}"
                parts, notes = content_parts(text, kept_media(prompt, n_train), opts, media, where)
                text = None
        body = RequestBody(
            model=deployment.model,
            prompt=text,
            messages=messages,
            parts=parts,
            max_tokens=max_tokens,
            temperature=gen.temperature,
            stop=gen.stop,
            logprobs=deployment.logprobs,
            image_detail=opts.detail if parts else None,
            reasoning=deployment.reasoning,
            image_generation=images,
        )
        dropped = kind.reasoning_notes(body) if kind is not None else []
        # an image request asks for all ``num_outputs`` images at once: one completion carries them
        for k in range(adapter.requests_per_prompt):
            sample = prompt.trial * adapter.requests_per_prompt + k
            requests.append(
                Request(
                    request_hash=request_hash(body, sample),
                    instance_id=prompt.instance_id,
                    split=prompt.split,
                    sample_index=sample,
                    body=body,
                    num_train_instances=n_train,
                    prompt_truncated=truncated,
                    output_mapping=prompt.output_mapping,
                    media_transforms=notes,
                    notes=dropped,
                )
            )
    return requests


def continuation_requests(prompt: Prompt, deployment: Deployment) -> list[Request]:
    """Log-likelihood multiple choice: one request per option, the prompt (fitted with room for the
    longest option) followed by the option, echoed with logprobs and nothing generated (``max_tokens``
    0, as vLLM and OpenAI's completions endpoint allow with ``echo``)."""
    tok = get_tokenizer(deployment.tokenizer)
    room = max(tok.count(c) for c in prompt.continuations)
    text, n_train, truncated = fit_prompt(prompt, deployment, room)
    out = []
    for option in prompt.continuations:
        # each option after the prompt; with a calibration prompt, also after that (HELM's order: the
        # original, then the calibration request, option by option)
        for before, mode in ((text, None), *(((prompt.calibration, "calibration"),) if prompt.calibration else ())):
            body = RequestBody(model=deployment.model, prompt=before + option, max_tokens=0, temperature=0.0,
                               logprobs=True, echo=True)
            out.append(Request(request_hash=request_hash(body, prompt.trial), instance_id=prompt.instance_id,
                               split=prompt.split, sample_index=prompt.trial, body=body,
                               num_train_instances=n_train if mode is None else 0,
                               prompt_truncated=truncated and mode is None, continuation=option, request_mode=mode))
    return out


def variant_requests(prompt: Prompt, adapter: AdapterSpec, deployment: Deployment, max_tokens: int) -> list[Request]:
    """Binary ranking: one generation request per reference, the shared head and examples followed by
    that reference's query block, each fitted on its own (as HELM fits each of its prompts); the output
    tokens' logprobs are always asked for, since they order the references."""
    gen = adapter.generation
    out = []
    for index, query in enumerate(prompt.variants):
        text, n_train, truncated = fit_prompt(prompt.model_copy(update={"query": query}), deployment, max_tokens)
        body = RequestBody(model=deployment.model, prompt=text, max_tokens=max_tokens, temperature=gen.temperature,
                           stop=gen.stop, logprobs=True, reasoning=deployment.reasoning)
        for k in range(gen.num_outputs):
            sample = prompt.trial * gen.num_outputs + k
            out.append(Request(request_hash=request_hash(body, sample), instance_id=prompt.instance_id,
                               split=prompt.split, sample_index=sample, body=body, num_train_instances=n_train,
                               prompt_truncated=truncated, reference_index=index))
    return out


def document_windows(tokens: list[str], prefix: list[str], window: int, pieces) -> list[tuple[str, int]]:
    """HELM's ``LanguageModelingAdapter`` windows over a document's tokens: (echoed prompt text, conditioning
    tokens). The first window is the prefix and the first ``window`` tokens, the prefix conditioning (its
    count is 1 when there is one, as HELM counts it); each next window scores the next at most ``window - 1``
    tokens after the tokens before them that fill the window. A window longer than ``window`` after
    re-tokenising (``pieces``) loses tokens from its end until it fits, as HELM's
    ``fits_tokens_within_context_window`` (the first window's lost tokens are never scored: HELM's count moves on)."""
    def fit(conditioning: list[str], predicted: list[str]) -> str:
        text = "".join(conditioning + predicted)
        while len(pieces(text)) > window:
            predicted = predicted[: -(len(pieces(text)) - window)]
            if not predicted:
                raise ValueError("no document token fits in the window after its conditioning tokens")
            text = "".join(conditioning + predicted)
        return text

    first = min(window, len(tokens))
    out = [(fit(prefix, tokens[:first]), 1 if prefix else 0)]
    done = first
    while done < len(tokens):
        size = min(len(tokens) - done, window - 1)
        end = done + size
        conditioning = tokens[end - window:done]  # HELM's slice, negative start included
        out.append((fit(conditioning, tokens[done:end]), len(conditioning)))
        done += size
    return out


def document_requests(prompt: Prompt, deployment: Deployment) -> list[Request]:
    """Language modeling: the document echoed with logprobs in windows of the deployment's context window
    (its tokenizer's tokens), nothing generated; each request says how many of its first tokens condition."""
    tok = get_tokenizer(deployment.tokenizer)
    pieces = getattr(tok, "pieces", None)
    if pieces is None:
        raise ValueError(f"deployment {deployment.name!r}: tokenizer {deployment.tokenizer!r} cannot split a text "
                         "into its tokens, which language modeling windows need (use a whitespace or hf: tokenizer)")
    out = []
    for text, conditioning in document_windows(pieces(prompt.document), pieces(prompt.head) if prompt.head else [],
                                               deployment.context_window, pieces):
        body = RequestBody(model=deployment.model, prompt=text, max_tokens=0, temperature=0.0, logprobs=True, echo=True)
        out.append(Request(request_hash=request_hash(body, prompt.trial), instance_id=prompt.instance_id,
                           split=prompt.split, sample_index=prompt.trial, body=body,
                           num_conditioning_tokens=conditioning))
    return out


# --------------------------------------------------------------------------- price
def prompt_text(body: RequestBody) -> str:
    """The text a request's prompt tokens are counted on (text parts of a multimodal prompt joined)."""
    if body.parts is not None:
        return "".join(p.text or "" for p in body.parts)
    return body.prompt if body.prompt is not None else "\n".join(m.content for m in body.messages or [])


def cost_usd(deployment: Deployment, prompt_tokens: int, output_tokens: int, cached_tokens: int = 0,
             batch: bool = False, cache_write_tokens: int = 0, images: int = 0) -> float:
    """USD of one request; ``output_tokens`` includes any reasoning tokens (billed as output), and the
    ``cached_tokens`` of ``prompt_tokens`` cost the cached price when the deployment declares one (the
    ``cache_write_tokens`` the cache-write price), each of ``images`` generated images the price per
    image; a ``batch`` request costs the deployment's batch discount of it."""
    cached_price = deployment.price_cached_input_per_mtok
    if cached_price is None or not cached_tokens:
        cached_price, cached_tokens = deployment.price_input_per_mtok, 0
    write_price = deployment.price_cache_write_per_mtok
    if write_price is None or not cache_write_tokens:
        write_price, cache_write_tokens = deployment.price_input_per_mtok, 0
    uncached = prompt_tokens - cached_tokens - cache_write_tokens
    usd = (uncached * deployment.price_input_per_mtok + cached_tokens * cached_price
           + cache_write_tokens * write_price + output_tokens * deployment.price_output_per_mtok) / 1e6
    usd += images * deployment.price_per_image  # generated images, at the deployment's price per image
    return usd * deployment.batch_discount if batch else usd
