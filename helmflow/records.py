"""Typed records that cross a boundary (storage, tasks, clients), with their Parquet schemas.

Every record is a pydantic model; every Parquet file has an explicit pyarrow schema here, so the
shape of what is published is written down in one place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

Split = Literal["train", "valid", "test"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# --------------------------------------------------------------------------- instances
class ContentPart(Record):
    """One part of a multimodal input; media are referenced by URI and pinned by sha256."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    uri: str | None = None
    sha256: str | None = None
    mime: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ContentPart:
        if self.type == "text" and self.text is None:
            raise ValueError("a text part needs 'text'")
        if self.type != "text" and not (self.uri and self.sha256 and self.mime):
            raise ValueError(f"an {self.type} part needs 'uri', 'sha256' and 'mime'")
        return self


class ChatMessage(Record):
    role: Literal["system", "user", "assistant"]
    content: str


class Input(Record):
    """Exactly one of text, chat messages or content parts."""

    text: str | None = None
    messages: list[ChatMessage] | None = None
    parts: list[ContentPart] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Input:
        given = [k for k in ("text", "messages", "parts") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"an input has exactly one of text, messages, parts (got {given or 'none'})")
        return self


class Reference(Record):
    """An answer option; ``image`` makes it an image-valued choice (``text`` then names it, e.g. ``<image 2>``)."""

    text: str
    correct: bool = False
    image: ContentPart | None = None


class Instance(Record):
    id: str
    input: Input
    references: list[Reference] = Field(default_factory=list)
    split: Split = "test"
    sub_split: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def correct_references(self) -> list[Reference]:
        return [r for r in self.references if r.correct]


# --------------------------------------------------------------------------- prompts
class Prompt(Record):
    """A prompt in pieces, so window fitting can drop examples before truncating."""

    instance_id: str
    split: str
    trial: int = 0
    head: str = ""
    examples: list[str] = Field(default_factory=list)
    query: str = ""
    messages: list[ChatMessage] | None = None
    output_mapping: dict[str, str] = Field(default_factory=dict)
    # images, in order of their MEDIA_MARK placeholders in head + examples + query
    media: list[ContentPart] = Field(default_factory=list)
    # log-likelihood multiple choice: each option is scored as a continuation of the prompt (one
    # request per option, echoed with logprobs, nothing generated); empty for every other method
    continuations: list[str] = Field(default_factory=list)
    # ``multiple_choice_separate_calibrated``: the answer-free prompt each option is also scored after
    # (HELM's "Answer:" in place of the input, without examples); empty for every other method
    calibration: str = ""
    # ``ranking_binary``: the query block for each reference (one request per reference, each after the
    # same head and examples); empty for every other method
    variants: list[str] = Field(default_factory=list)
    # ``language_modeling``: the text scored whole, in windows of the deployment's tokens (after ``head``, the
    # conditioning prefix); empty for every other method
    document: str = ""

    def text(self, num_examples: int | None = None) -> str:
        examples = self.examples if num_examples is None else self.examples[:num_examples]
        return self.head + "".join(examples) + self.query


# --------------------------------------------------------------------------- adapter spec
class GenerationParams(Record):
    max_tokens: int = Field(100, ge=1, description="the most output tokens a request asks for")
    temperature: float = Field(0.0, ge=0.0, description="sampling temperature; 0 is greedy decoding")
    stop: list[str] = Field(default_factory=list, description="stop sequences, cut from the output as HELM does")
    num_outputs: int = Field(1, ge=1, description="completions asked for per request")


class ImageGenerationParams(Record):
    """How images are asked for (HELM's ``ImageGenerationParameters``): None leaves a value to the model's
    default. Each value set is sent, so it is part of the request hash; the count of images per prompt
    is the adapter's ``num_outputs``."""

    width: int | None = Field(None, ge=1, le=8192, description="the image's width in pixels")
    height: int | None = Field(None, ge=1, le=8192, description="the image's height in pixels")
    guidance_scale: float | None = Field(None, ge=0, description="classifier-free guidance scale (diffusion models)")
    steps: int | None = Field(None, ge=1, le=1000, description="denoising steps (diffusion models)")
    seed: int | None = Field(None, description="the seed a model draws with, when it takes one")

    @model_validator(mode="after")
    def _both_sides(self) -> ImageGenerationParams:
        if (self.width is None) != (self.height is None):
            raise ValueError("image_generation: give both width and height, or neither")
        return self

    @property
    def size(self) -> str | None:
        """``<width>x<height>`` (OpenAI's ``size``), None when left to the model."""
        return f"{self.width}x{self.height}" if self.width is not None else None


class ImageRequest(ImageGenerationParams):
    """What an image request asks for: the parameters and ``n``, the images wanted in one completion."""

    n: int = Field(1, ge=1, le=16, description="images generated for the prompt")


#: The splits HELM evaluates, pooled before sampling.
EVAL_SPLITS: tuple[Split, ...] = ("valid", "test")


class EvalSample(Record):
    """Which instances are evaluated: HELM's seeded, monotone sample of the eval splits (HELM pools valid + test)."""

    max_eval_instances: int | None = Field(
        None, ge=1, description="at most this many instances, HELM's seeded sample (a prefix of any larger one)")
    splits: list[Split] = Field(default_factory=lambda: list(EVAL_SPLITS),
                                description="the splits evaluated, pooled before sampling")
    seed: int = Field(0, description="the sample's seed")
    trials: int = Field(1, ge=1, description="times each instance is evaluated")


class AdapterSpec(Record):
    method: str = Field("generation", description=(
        "the adapter method: generation, chat, multiple_choice_joint, multiple_choice_joint_chain_of_thought, "
        "multiple_choice_separate_original (log-likelihood of each option), multiple_choice_separate_calibrated "
        "(the same, less each option's log-likelihood after `Answer:`), ranking_binary (a yes/no request per "
        "reference, ranked), language_modeling (the text echoed in windows, scored), or one a plugin registers"))
    global_prefix: str = Field("", description="text before everything else in the prompt")
    instructions: str = Field("", description="instructions before the in-context examples")
    input_prefix: str = Field("Input: ", description="text before each instance's input")
    input_suffix: str = Field("\n", description="text after each instance's input")
    reference_prefix: str = Field("A. ", description="text before the first option of a multiple-choice instance "
                                                      "(the letter advances per option)")
    reference_suffix: str = Field("\n", description="text after each option")
    reference_prefix_characters: list[str] | None = Field(None, min_length=1, description=(
        "the option labels in order, replacing the letter of `reference_prefix` (HELM's "
        "`reference_prefix_characters`, e.g. Arabic `[أ, ب, ج, د, هـ]`); unset: A, B, C…"))
    output_prefix: str = Field("Output: ", description="text before each output (the model continues after it)")
    output_suffix: str = Field("\n", description="text after each in-context example's output")
    output_mapping_pattern: str | None = Field(None, description=(
        "multiple choice: a regular expression searched for in the stripped answer before it is mapped to an "
        "option; its first group (else the whole match) is the label, no match picks no option (HELM's "
        "`output_mapping_pattern`)"))
    instance_prefix: str = Field("\n", description="text between in-context examples")
    global_suffix: str = Field("", description="text after everything else in the prompt")
    max_train_instances: int = Field(5, ge=0, description="in-context examples, drawn by HELM's seeded, "
                                                          "class-balanced draw")
    train_seed: int = Field(0, description="the in-context examples' seed")
    generation: GenerationParams = Field(default_factory=GenerationParams, description="decoding parameters")
    sample: EvalSample = Field(default_factory=EvalSample, description="which instances are evaluated")
    image_generation: ImageGenerationParams | None = Field(None, description=(
        "set: requests ask for images (text-to-image), `num_outputs` of them in one completion; the "
        "parameters are sent and hashed"))

    @property
    def requests_per_prompt(self) -> int:
        """Requests sent per prompt: ``num_outputs``, or 1 for images (one completion carries them all)."""
        return 1 if self.image_generation is not None else self.generation.num_outputs

    @field_validator("output_mapping_pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"output_mapping_pattern {value!r} is not a regular expression: {exc}") from None
        return value

    @model_serializer(mode="wrap")
    def _text_adapters_unchanged(self, handler: Any) -> Any:
        """Unset ``image_generation``, ``reference_prefix_characters`` and ``output_mapping_pattern`` are not
        written: every adapter without them keeps its prompt_version."""
        data = handler(self)
        for name in ("image_generation", "reference_prefix_characters", "output_mapping_pattern"):
            if isinstance(data, dict) and name in data and data[name] is None:
                del data[name]
        return data

    def override(self, **changes: Any) -> AdapterSpec:
        """A copy with dotted or nested overrides (``generation.max_tokens=5`` or ``max_tokens=5``)."""
        data = self.model_dump()
        for key, value in changes.items():
            target, leaf = data, key
            if "." in key:
                head, leaf = key.split(".", 1)
                if head == "image_generation" and data.get(head) is None:
                    data[head] = {}
                target = data[head]
            elif key in GenerationParams.model_fields:
                target = data["generation"]
            elif key in EvalSample.model_fields:
                target = data["sample"]
            elif key not in data:
                raise ValueError(f"unknown adapter field {key!r}")
            target[leaf] = value
        return AdapterSpec.model_validate(data)


# --------------------------------------------------------------------------- deployments
class RetrySettings(Record):
    # 30% transient faults over 10,000 requests lose none (0.3**16 * 1e4 < 1e-4)
    attempts: int = Field(16, ge=1, description="tries per request through transient errors (429, 408, 5xx, resets, "
                                                "timeouts, truncated bodies)")
    base_s: float = Field(0.5, ge=0, description="the first backoff, doubled per try, with jitter; Retry-After wins")
    cap_s: float = Field(30.0, ge=0, description="the longest backoff")
    timeout_s: float = Field(120.0, gt=0, description="seconds one attempt may take")


class ModelMetadata(Record):
    """What the board shows about the model behind a deployment, as HELM's model_metadata.yaml has it.
    Information only: none of it is sent or is part of model_version."""

    display_name: str = Field("", description="a readable name (HELM's display_name)")
    creator: str = Field("", description="who made the model (HELM's creator_organization_name)")
    parameters: int | None = Field(None, ge=0, description="the number of parameters (HELM's num_parameters)")
    release_date: str = Field("", pattern=r"^(\d{4}-\d{2}-\d{2})?$",
                              description="when the model was released, YYYY-MM-DD")
    access: Literal["", "open", "limited", "closed"] = Field("", description="open (weights available), limited "
                                                                           "(API) or closed, as HELM's access")
    link: str = Field("", pattern=r"^(https?://\S+)?$", description="a page about the model (http or https)")


#: OpenAI's ``reasoning_effort`` values (SDK 3.57); a client kind may accept fewer
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: what HELM's reasoning run entries add to every adapter's ``max_tokens`` (``increase_max_tokens=10000``)
REASONING_MAX_TOKENS_INCREASE = 10_000


class ReasoningOptions(Record):
    """How a reasoning model is asked to think and how its reasoning is read back. Each client kind maps
    these to its provider's fields and refuses, when the models file loads, what it cannot honour."""

    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = Field(
        None, description="how hard the model thinks: OpenAI `reasoning_effort`; Anthropic `output_config.effort` "
                          "(with `mode: adaptive`); sent as `reasoning_effort` to an openai-compatible server")
    budget_tokens: int | None = Field(None, ge=1, description="the most tokens spent thinking: Anthropic "
                                                              "`thinking.budget_tokens` (at least 1024, below "
                                                              "max_tokens); vLLM `thinking_token_budget`")
    mode: Literal["enabled", "adaptive"] | None = Field(
        None, description="Anthropic: `enabled` (a thinking budget) or `adaptive` (the model decides; Claude 4.7+ "
                          "accept only this)")
    parser: Literal["field", "think-tags"] | None = Field(
        None, description="where an open model's reasoning comes back: `field` (the message's `reasoning`, then "
                          "`reasoning_content`, as vLLM sends it) or `think-tags` (`<think>…</think>` in the text, "
                          "cut from the answer)")

    @model_validator(mode="after")
    def _coherent(self) -> ReasoningOptions:
        if not self.model_fields_set:
            raise ValueError("reasoning: give at least one of effort, budget_tokens, mode, parser")
        if self.mode == "adaptive" and self.budget_tokens is not None:
            raise ValueError("reasoning: mode adaptive takes no budget_tokens (the model sizes its own thinking); "
                             "use effort, or mode enabled with budget_tokens")
        if self.mode == "enabled" and self.budget_tokens is None:
            raise ValueError("reasoning: mode enabled needs budget_tokens")
        return self


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_s(value: Any, what: str) -> float:
    """Seconds in ``value``: a number of seconds, or a duration such as ``6h``, ``30m``, ``90s``, ``1h30m``
    or ``2d``; a ValueError naming ``what`` otherwise (zero and negative durations included)."""
    if isinstance(value, bool):
        raise ValueError(f"{what}: {value!r} is not a duration (e.g. 6h, 30m, 90s)")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (text := value.strip().lower()) and _DURATION.sub("", text) == "":
        seconds = sum(float(n) * _UNIT_S[unit] for n, unit in _DURATION.findall(text))
    else:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: {value!r} is not a duration (e.g. 6h, 30m, 90s)") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{what}: {value!r} must be a duration above zero (e.g. 6h, 30m, 90s)")
    return seconds


#: what ``batch: {...}`` may hold, and the deployment field each one sets
BATCH_OPTIONS = {"max_wait": "batch_max_wait_s"}


class Deployment(Record):
    """A concrete model endpoint. Holds the *name* of a credential, never its value."""

    name: str = Field(description="the deployment's name, as `--models` and board files give it (e.g. `openai/gpt-4o`)")
    client: str = Field(description="the client kind that talks to it (see the table of client kinds below)")
    model: str = Field(description="the provider's model name, or a checkpoint folder or Hub repo id (`huggingface`)")
    revision: str = Field("", description="what exactly is served (a commit, a tag, your label); part of "
                                          "model_version. A Hub repo id needs a commit here")
    base_url: str | None = Field(None, description="the endpoint (`openai-compatible`: e.g. http://localhost:8000/v1)")
    api_key_env: str | None = Field(None, description="the *name* of the environment variable holding the key "
                                                      "(`openai`, `anthropic` default to OPENAI_API_KEY, "
                                                      "ANTHROPIC_API_KEY)")
    api_key_secret: str | None = Field(None, description="the name of a Prefect Secret block holding the key")
    tokenizer: str = Field("whitespace", description="fits prompts to the window and counts tokens: `whitespace`, "
                                                     "`hf:<path-or-url>`, `tiktoken:<encoding>` or a plugin's kind; "
                                                     "part of model_version")
    context_window: int = Field(8192, ge=16, description="tokens of prompt plus output the model takes")
    max_output_tokens: int | None = Field(None, description="a cap on any request's output tokens")
    # ask the provider for each output token's logprob (OpenAI and compatible servers send them only
    # when asked): what calibration reads. Offline and local Hugging Face models always return them.
    logprobs: bool = Field(False, description="ask for each output token's logprob (what calibration reads); "
                                              "part of model_version")
    price_input_per_mtok: float = Field(0.0, description="USD per million prompt tokens (costs, `--budget-usd`)")
    price_output_per_mtok: float = Field(0.0, description="USD per million output tokens (reasoning tokens "
                                                          "included)")
    price_per_image: float = Field(0.0, ge=0, description="USD per generated image (text-to-image deployments; "
                                                          "added to any token price)")
    price_cached_input_per_mtok: float | None = Field(None, ge=0, description=(
        "USD per million prompt tokens read from the provider's cache (default: the input price)"))
    price_cache_write_per_mtok: float | None = Field(None, ge=0, description=(
        "USD per million prompt tokens written to the provider's cache (Anthropic; default: the input price)"))
    batch: bool = Field(False, description="send requests through the provider's batch API (kinds `openai` and "
                                           "`anthropic`; `--batch` turns it on for a run): see Batch mode and "
                                           "caching. `batch: {max_wait: 6h}` turns it on with a deadline. Not "
                                           "part of model_version")
    batch_discount: float = Field(0.5, ge=0, le=1, description="what a batched request costs, as a share of its "
                                                               "real-time price")
    batch_poll_s: float = Field(15.0, gt=0, le=300, description="the first wait between polls of a batch; each "
                                                                "wait is 1.5 times the last, up to 300 s")
    batch_max_wait_s: float | None = Field(None, gt=0, description="the longest a batch may run (seconds, or a "
                                                                      "duration: 6h, 30m; also `batch: {max_wait: "
                                                                      "6h}`): then it is cancelled, its finished "
                                                                      "lines kept and the rest sent real-time, once")
    prompt_cache: bool = Field(False, description="anthropic: mark the prompt's shared prefix (the system text; the "
                                                  "leading lines an earlier prompt began with) with `cache_control`, "
                                                  "so it is read from Anthropic's cache. Not part of model_version")
    max_concurrency: int = Field(16, ge=1, description="requests in flight at once, per process")
    requests_per_minute: float | None = Field(None, description="a request-rate limit, per process")
    tokens_per_minute: float | None = Field(None, description="a token-rate limit, per process")
    max_error_rate: float = Field(0.5, ge=0, le=1, description="a run whose share of errored requests passes this "
                                                               "fails (the release is partial)")
    retry: RetrySettings = Field(default_factory=RetrySettings, description="retries of transient errors")
    options: dict[str, Any] = Field(default_factory=dict, description="the client kind's own options (below)")
    reasoning: ReasoningOptions | None = Field(None, description="a reasoning model's options (effort, "
                                                                 "budget_tokens, mode, parser: see Reasoning "
                                                                 "models); part of model_version")
    increase_max_tokens: int | None = Field(None, ge=0, description=(
        "tokens added to every request's max_tokens (HELM's `increase_max_tokens` run expander); default "
        f"{REASONING_MAX_TOKENS_INCREASE} with `reasoning`, 0 without. A board's or `eval`'s "
        "`increase_max_tokens` replaces it; part of model_version when not 0"))
    description: str = Field("", description="free text shown by `helmflow list models`")
    metadata: ModelMetadata = Field(default_factory=ModelMetadata, description="creator, size, release date, "
                                    "access and a link, shown on the board page (not part of model_version)")

    @model_validator(mode="before")
    @classmethod
    def _batch_options(cls, data: Any) -> Any:
        """``batch: {max_wait: 6h}`` turns batch mode on with its options; ``batch_max_wait_s`` takes a
        duration too."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        options = data.get("batch")
        if isinstance(options, dict):
            unknown = sorted(set(options) - set(BATCH_OPTIONS))
            if unknown:
                raise ValueError(f"batch: unknown option(s) {', '.join(map(str, unknown))}; known: "
                                 f"{', '.join(BATCH_OPTIONS)} (or batch: true)")
            for option, field in BATCH_OPTIONS.items():
                if option in options:
                    if data.get(field) is not None:
                        raise ValueError(f"batch.{option} and {field} both given: give one")
                    data[field] = options[option]
            data["batch"] = True
        if data.get("batch_max_wait_s") is not None:
            data["batch_max_wait_s"] = duration_s(data["batch_max_wait_s"], "batch.max_wait")
        return data

    @property
    def max_tokens_increase(self) -> int:
        """What is added to every request's ``max_tokens``: the declared value, else HELM's for reasoning models."""
        if self.increase_max_tokens is not None:
            return self.increase_max_tokens
        return REASONING_MAX_TOKENS_INCREASE if self.reasoning is not None else 0

    def output_budget(self, max_tokens: int) -> int:
        """An adapter's ``max_tokens`` for this deployment: raised by :attr:`max_tokens_increase`, then capped
        by ``max_output_tokens``."""
        wanted = max_tokens + self.max_tokens_increase
        return min(wanted, self.max_output_tokens or wanted)


# --------------------------------------------------------------------------- requests / completions
class RequestBody(Record):
    """Exactly what is sent to a provider (no headers, no keys): the journal hashes this."""

    model: str
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    parts: list[ContentPart] | None = None
    max_tokens: int
    temperature: float
    stop: list[str] = Field(default_factory=list)
    logprobs: bool = False
    image_detail: str | None = None  # OpenAI's image_url detail, when the deployment sets one
    # send the prompt back with its tokens' logprobs (OpenAI completions' ``echo``, vLLM): how the
    # log-likelihood of a continuation is read; None (not False) keeps older request hashes put
    echo: bool | None = None
    # a reasoning deployment's options (what its client maps to the provider's fields); None keeps the
    # request hashes of every other deployment put
    reasoning: ReasoningOptions | None = None
    # an image request (text-to-image): its parameters and the number of images; None for text requests
    image_generation: ImageRequest | None = None


class Request(Record):
    request_hash: str
    instance_id: str
    split: Split
    sample_index: int = 0
    body: RequestBody
    num_train_instances: int = 0
    prompt_truncated: bool = False
    output_mapping: dict[str, str] = Field(default_factory=dict)
    media_transforms: list[str] = Field(default_factory=list)  # images resized/re-encoded for this deployment
    continuation: str | None = None  # the option this echo request scores (log-likelihood multiple choice)
    # "calibration": the option scored after the answer-free prompt (``multiple_choice_separate_calibrated``);
    # None for every other request
    request_mode: str | None = None
    # the reference this request is about (``ranking_binary``: the passage it asks about); None otherwise
    reference_index: int | None = None
    # ``language_modeling``: how many of the echoed prompt's first tokens only condition (are not scored)
    num_conditioning_tokens: int = 0
    # what the client kind leaves out of the request for its reasoning options (e.g. temperature)
    notes: list[str] = Field(default_factory=list)


def scrub_text(text: str) -> tuple[str, int]:
    """``text`` with code points UTF-8 cannot hold (lone surrogates: a JSON ``"\\ud800"`` escape
    decodes to one) replaced by U+FFFD, and how many there were."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        chars = ["\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text]
        return "".join(chars), sum(1 for a, b in zip(chars, text, strict=True) if a != b)


class Completion(Record):
    """One answer as received. Text a provider sent that UTF-8 cannot store is replaced and counted
    (``invalid_chars``), so one odd answer never fails the pair or loses the others."""

    request_hash: str
    instance_id: str = ""
    sample_index: int = 0
    text: str = ""
    finish_reason: str = ""
    prompt_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    tokens: list[str] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    # where each token starts in the text it belongs to (for an echo: the prompt, then the output);
    # None when the provider sent none
    text_offsets: list[int] | None = None
    error: str | None = None
    attempts: int = 1
    created_at: str = ""
    invalid_chars: int = 0
    # a reasoning model's thinking, kept apart from ``text`` (the scored answer) and never scored
    reasoning: str = ""
    reasoning_tokens: int = 0  # of output_tokens (priced at the output price)
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache
    # the output budget ran out while the model was still reasoning: there is no answer to score
    truncated_in_reasoning: bool = False
    # generated images (an image request): each decoded and checked, stored once under media/ by its
    # sha256, referenced here in the order the model sent them
    images: list[ContentPart] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _scrub(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name in _COMPLETION_ADDED:  # a row stored before the column existed
            if name in data and data[name] is None:
                del data[name]
        if isinstance(data.get("reasoning"), str):
            data["reasoning"], _ = scrub_text(data["reasoning"])
        count = data.get("invalid_chars") or 0  # None: a row journaled before the field existed
        if isinstance(data.get("text"), str):
            data["text"], n = scrub_text(data["text"])
            count += n
        if isinstance(data.get("tokens"), list):
            scrubbed = [scrub_text(t) if isinstance(t, str) else (t, 0) for t in data["tokens"]]
            data["tokens"] = [t for t, _ in scrubbed]
            if not count:
                count = sum(n for _, n in scrubbed)
        data["invalid_chars"] = count
        return data

    @property
    def ok(self) -> bool:
        return self.error is None


#: completion columns added after the first stored runs: null (or absent) in older Parquet reads as the default
_COMPLETION_ADDED = ("reasoning", "reasoning_tokens", "cached_tokens", "truncated_in_reasoning", "images")


class Stat(Record):
    instance_id: str
    split: str
    name: str
    value: float


class Render(Record):
    """One completion drawn by a renderer (an Image2Struct-style metric: LaTeX, a web page, a music sheet):
    the image is a content-addressed media part (None when the answer did not compile), ``render_key`` the
    cache key of the drawing (the completion, the renderer and its version, the assets served to it), and
    ``reused`` says the image came from that cache rather than a run of the renderer."""

    instance_id: str
    sample_index: int = 0
    request_hash: str
    renderer: str
    renderer_version: str
    render_key: str
    compiled: bool
    error: str | None = None
    image: ContentPart | None = None
    seconds: float = 0.0  # the renderer's time when it drew the image (the first time)
    reused: bool = False


class MetricSummary(Record):
    name: str
    split: str
    count: int
    mean: float
    ci_low: float
    ci_high: float


class Annotation(Record):
    """A judge's verdict on one completion: who judged (deployment, template VERSION), what it said,
    what that parsed to, and what judging cost. ``score`` is None when the output did not parse or the
    judge request failed (``error`` says which); ``judge_request_hash`` is None when no call was made
    (an empty model output gets the template's fixed verdict)."""

    instance_id: str
    sample_index: int = 0
    request_hash: str  # the judged completion's request
    judge: str
    template: str
    template_version: str
    judge_request_hash: str | None = None
    prompt: str = ""
    raw_output: str = ""
    score: float | None = None
    details_json: str = "{}"
    error: str | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    # a reasoning judge's thinking behind the verdict (never parsed), and its tokens
    reasoning: str = ""
    reasoning_tokens: int = 0

    @model_validator(mode="before")
    @classmethod
    def _older_rows(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(data.get(k, 0) is None for k in ("reasoning", "reasoning_tokens")):
            data = {k: v for k, v in data.items() if not (k in ("reasoning", "reasoning_tokens") and v is None)}
        return data


# --------------------------------------------------------------------------- parquet schemas
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
_PART = pa.struct(
    [("type", pa.string()), ("text", pa.string()), ("uri", pa.string()), ("sha256", pa.string()), ("mime", pa.string())]
)

INSTANCE_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("split", pa.string()),
        ("sub_split", pa.string()),
        ("input_text", pa.string()),
        ("input_messages", pa.list_(_MESSAGE)),
        ("input_parts", pa.list_(_PART)),
        ("references", pa.list_(pa.struct([("text", pa.string()), ("correct", pa.bool_()), ("image", _PART)]))),
        ("extra_json", pa.string()),
    ]
)

REQUEST_SCHEMA = pa.schema(
    [
        ("request_hash", pa.string()),
        ("instance_id", pa.string()),
        ("split", pa.string()),
        ("sample_index", pa.int32()),
        ("body_json", pa.string()),
        ("prompt", pa.string()),
        ("num_train_instances", pa.int32()),
        ("prompt_truncated", pa.bool_()),
        ("output_mapping_json", pa.string()),
        ("media_transforms", pa.list_(pa.string())),
        ("continuation", pa.string()),
        ("notes", pa.list_(pa.string())),
        ("request_mode", pa.string()),
        ("reference_index", pa.int32()),
        ("num_conditioning_tokens", pa.int32()),
    ]
)

COMPLETION_SCHEMA = pa.schema(
    [
        ("request_hash", pa.string()),
        ("instance_id", pa.string()),
        ("sample_index", pa.int32()),
        ("text", pa.string()),
        ("finish_reason", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("cost_usd", pa.float64()),
        ("tokens", pa.list_(pa.string())),
        ("logprobs", pa.list_(pa.float64())),
        ("text_offsets", pa.list_(pa.int64())),
        ("error", pa.string()),
        ("attempts", pa.int32()),
        ("created_at", pa.string()),
        ("invalid_chars", pa.int32()),
        ("reasoning", pa.string()),
        ("reasoning_tokens", pa.int64()),
        ("cached_tokens", pa.int64()),
        ("truncated_in_reasoning", pa.bool_()),
        ("images", pa.list_(_PART)),
    ]
)

STAT_SCHEMA = pa.schema(
    [("instance_id", pa.string()), ("split", pa.string()), ("name", pa.string()), ("value", pa.float64())]
)

SUMMARY_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("split", pa.string()),
        ("count", pa.int64()),
        ("mean", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
    ]
)

ANNOTATION_SCHEMA = pa.schema(
    [
        ("instance_id", pa.string()),
        ("sample_index", pa.int32()),
        ("request_hash", pa.string()),
        ("judge", pa.string()),
        ("template", pa.string()),
        ("template_version", pa.string()),
        ("judge_request_hash", pa.string()),
        ("prompt", pa.string()),
        ("raw_output", pa.string()),
        ("score", pa.float64()),
        ("details_json", pa.string()),
        ("error", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("latency_s", pa.float64()),
        ("reasoning", pa.string()),
        ("reasoning_tokens", pa.int64()),
    ]
)

RENDER_SCHEMA = pa.schema(
    [
        ("instance_id", pa.string()),
        ("sample_index", pa.int32()),
        ("request_hash", pa.string()),
        ("renderer", pa.string()),
        ("renderer_version", pa.string()),
        ("render_key", pa.string()),
        ("compiled", pa.bool_()),
        ("error", pa.string()),
        ("image", _PART),
        ("seconds", pa.float64()),
        ("reused", pa.bool_()),
    ]
)

# Every file under runs/<run_id>/ starts with these columns, so files of many runs read as one table.
RUN_ID_FIELDS = [("run_id", pa.string()), ("model", pa.string()), ("scenario", pa.string())]

# runs/<run_id>/references.parquet: the gold answers of the run's instances, one row per reference
REFERENCE_SCHEMA = pa.schema(
    [
        *RUN_ID_FIELDS,
        ("instance_id", pa.string()),
        ("split", pa.string()),
        ("reference_index", pa.int32()),
        ("text", pa.string()),
        ("correct", pa.bool_()),
    ]
)

PROMPT_SCHEMA = pa.schema(
    [
        ("instance_id", pa.string()),
        ("split", pa.string()),
        ("trial", pa.int32()),
        ("head", pa.string()),
        ("examples", pa.list_(pa.string())),
        ("query", pa.string()),
        ("messages", pa.list_(_MESSAGE)),
        ("output_mapping_json", pa.string()),
        ("media", pa.list_(_PART)),
        ("continuations", pa.list_(pa.string())),
        ("calibration", pa.string()),
        ("variants", pa.list_(pa.string())),
        ("document", pa.string()),
    ]
)


# --------------------------------------------------------------------------- row conversion
def instance_to_row(inst: Instance) -> dict[str, Any]:
    return {
        "id": inst.id,
        "split": inst.split,
        "sub_split": inst.sub_split,
        "input_text": inst.input.text,
        "input_messages": [m.model_dump() for m in inst.input.messages] if inst.input.messages is not None else None,
        "input_parts": [p.model_dump() for p in inst.input.parts] if inst.input.parts is not None else None,
        "references": [r.model_dump() for r in inst.references],
        "extra_json": json.dumps(inst.extra, sort_keys=True, ensure_ascii=False),
    }


def instance_from_row(row: dict[str, Any]) -> Instance:
    return Instance(
        id=row["id"],
        split=row["split"],
        sub_split=row["sub_split"],
        input=Input(text=row["input_text"], messages=row["input_messages"], parts=row["input_parts"]),
        references=row["references"],
        extra=json.loads(row["extra_json"] or "{}"),
    )


def prompt_to_row(p: Prompt) -> dict[str, Any]:
    row = p.model_dump(exclude={"output_mapping"})
    row["output_mapping_json"] = json.dumps(p.output_mapping, sort_keys=True)
    return row


def prompt_from_row(row: dict[str, Any]) -> Prompt:
    row = dict(row)
    row["output_mapping"] = json.loads(row.pop("output_mapping_json") or "{}")
    row["media"] = row.get("media") or []
    row["continuations"] = row.get("continuations") or []
    row["calibration"] = row.get("calibration") or ""
    row["variants"] = row.get("variants") or []
    row["document"] = row.get("document") or ""
    return Prompt.model_validate(row)


def request_to_row(req: Request) -> dict[str, Any]:
    return {
        "request_hash": req.request_hash,
        "instance_id": req.instance_id,
        "split": req.split,
        "sample_index": req.sample_index,
        "body_json": req.body.model_dump_json(),
        "prompt": body_text(req.body),
        "num_train_instances": req.num_train_instances,
        "prompt_truncated": req.prompt_truncated,
        "output_mapping_json": json.dumps(req.output_mapping, sort_keys=True),
        "media_transforms": req.media_transforms,
        "continuation": req.continuation,
        "notes": req.notes,
        "request_mode": req.request_mode,
        "reference_index": req.reference_index,
        "num_conditioning_tokens": req.num_conditioning_tokens,
    }


def body_text(body: RequestBody) -> str:
    """A request's prompt as readable text (images as ``[image <sha256 prefix>]``)."""
    if body.prompt is not None:
        return body.prompt
    if body.parts is not None:
        return "".join(p.text or "" if p.type == "text" else f"[{p.type} {(p.sha256 or '')[:12]}]" for p in body.parts)
    return json.dumps([m.model_dump() for m in body.messages or []], ensure_ascii=False)


def request_from_row(row: dict[str, Any]) -> Request:
    return Request(
        request_hash=row["request_hash"],
        instance_id=row["instance_id"],
        split=row["split"],
        sample_index=row["sample_index"],
        body=RequestBody.model_validate_json(row["body_json"]),
        num_train_instances=row["num_train_instances"],
        prompt_truncated=row["prompt_truncated"],
        output_mapping=json.loads(row["output_mapping_json"] or "{}"),
        media_transforms=row.get("media_transforms") or [],
        continuation=row.get("continuation"),
        notes=row.get("notes") or [],
        request_mode=row.get("request_mode"),
        reference_index=row.get("reference_index"),
        num_conditioning_tokens=row.get("num_conditioning_tokens") or 0,
    )


def to_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def models_to_table(records: Sequence[BaseModel], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([r.model_dump() for r in records], schema=schema)
