"""Images as data: a content-addressed media store, validation at load, and per-deployment resizing.

Image bytes are stored once under ``media/<sha256>.<ext>`` (written atomically, never rewritten: the
name is the content). Records point at them with a :class:`ContentPart` whose ``uri`` is that key,
relative to the storage root, so moving a store changes nothing; request hashes leave ``uri`` out
and cover the ``sha256`` (see :func:`helmflow.journal.request_hash`). HELM hashes local paths, so a
moved cache changes its keys; ours cannot.

Every image is decoded once with Pillow when it enters the store: an unreadable or truncated file,
a decompression bomb (Pillow's ``MAX_IMAGE_PIXELS``) or a format outside :data:`FORMATS` is one
:class:`MediaError` naming where it came from (the dataset row). SVG is never an image here: it is
not raster and can carry script.

A deployment declares what its endpoint accepts in ``options.images`` (:class:`ImageOptions`):
maximum side, pixels and bytes, what to do with a larger image (``resize: fit`` keeps the aspect
ratio, ``error`` refuses), an optional ``reencode: jpeg`` (HELM's behaviour) and the token cost of
one image for window fitting. A resized or re-encoded image is a new stored image with its own
sha256; the request records the change (``Request.media_transforms``).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.layout import MEDIA_PREFIX, media_key
from helmflow.records import ContentPart, Deployment
from helmflow.storage import Store

#: Pillow format -> (MIME type, file extension): the raster formats every vision API takes.
FORMATS: dict[str, tuple[str, str]] = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
}
MIME_EXT = {mime: ext for mime, ext in FORMATS.values()}
EXT_MIME = {ext: mime for mime, ext in FORMATS.values()}
_MEDIA_KEY = re.compile(r"^media/([0-9a-f]{64})\.(png|jpg|gif|webp)$")


class MediaError(ValueError):
    """An image that cannot be used; the message names where it came from."""


def parse_media_key(key: str) -> tuple[str, str] | None:
    """(sha256, ext) of a well-formed media key; None for anything else (no path can climb out)."""
    found = _MEDIA_KEY.match(key)
    return (found.group(1), found.group(2)) if found else None


@dataclass(frozen=True)
class ImageInfo:
    sha256: str
    mime: str
    ext: str
    width: int
    height: int
    size: int


def inspect_image(data: bytes, where: str) -> ImageInfo:
    """Decode ``data`` fully (so a truncated file fails here, not at a provider) and describe it."""
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise MediaError(f"{where}: the image is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)  # over the limit is an error, not a warning
            with Image.open(io.BytesIO(data)) as img:
                fmt = img.format or ""
                if fmt not in FORMATS:
                    raise MediaError(f"{where}: unsupported image format {fmt or 'unknown'!r}; supported: "
                                     f"{', '.join(sorted(FORMATS))}")
                img.load()
                width, height = img.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise MediaError(f"{where}: refused as a decompression bomb ({exc})") from None
    except UnidentifiedImageError:
        raise MediaError(f"{where}: not a readable image (Pillow cannot identify it; {len(data)} bytes)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, MediaError):
            raise
        raise MediaError(f"{where}: unreadable or truncated image ({type(exc).__name__}: {exc})") from None
    mime, ext = FORMATS[fmt]
    return ImageInfo(hashlib.sha256(data).hexdigest(), mime, ext, width, height, len(data))


def image_bytes_from_hf(value: Any, where: str) -> bytes:
    """The bytes of a Hugging Face ``Image`` feature cell (a struct of ``bytes`` and ``path``).

    Only embedded bytes are used: a cell with a path alone points outside the pinned file, and
    helmflow never follows a path it read from data.
    """
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if not isinstance(value, dict):
        raise MediaError(f"{where}: expected an image (a struct of bytes and path), got {type(value).__name__}")
    data = value.get("bytes")
    if not data:
        path = value.get("path")
        raise MediaError(f"{where}: the image has no embedded bytes"
                         + (f" (only a path, {path!r}, which is not followed)" if path else ""))
    return bytes(data)


class MediaStore:
    """Puts validated images under ``media/`` of a store and reads them back, checked."""

    def __init__(self, store: Store | None):
        self.store = store  # None: validate only (``helmflow mirror`` checks images without a store)

    def put(self, data: bytes, where: str) -> ContentPart:
        info = inspect_image(data, where)
        key = media_key(info.sha256, info.ext)
        if self.store is not None and not self.store.exists(key):
            self.store.write_bytes(key, data)  # atomic; the same content always lands at the same key
        return ContentPart(type="image", uri=key, sha256=info.sha256, mime=info.mime)

    def read(self, part: ContentPart) -> bytes:
        """The bytes of an image part, refused if its key is not a media key or the bytes do not match."""
        if self.store is None:
            raise MediaError("no storage root to read images from")
        parsed = parse_media_key(part.uri or "")
        if parsed is None or parsed[0] != part.sha256:
            raise MediaError(f"image uri {part.uri!r} is not media/<its sha256>.<ext>; refusing to read it")
        data = self.store.read_bytes(part.uri or "")
        if hashlib.sha256(data).hexdigest() != part.sha256:
            raise MediaError(f"{self.store.url(part.uri or '')} does not match its sha256 (corrupted store?)")
        return data


_SCORING: contextvars.ContextVar[MediaStore | None] = contextvars.ContextVar("scoring_media", default=None)


@contextlib.contextmanager
def scoring_media(store: Store) -> Iterator[MediaStore]:
    """Within the block, :func:`scoring_store` is the media store of the run being scored (a metric that
    compares images reads the instance's images through it)."""
    media = MediaStore(store)
    token = _SCORING.set(media)
    try:
        yield media
    finally:
        _SCORING.reset(token)


def scoring_store() -> MediaStore:
    """The media store of the run being scored; :class:`MediaError` outside scoring."""
    media = _SCORING.get()
    if media is None:
        raise MediaError("no run is being scored: images can only be read while scoring")
    return media


def servable_image(store: Store, name: str) -> tuple[bytes, str]:
    """``(bytes, MIME)`` of ``media/<name>`` for a browser, or :class:`MediaError`.

    Only a well-formed content key is read (through the store, which refuses symlinks out of the
    root); the bytes must match their sha256 and decode as the raster format the name says. An SVG,
    HTML or any other file planted under ``media/`` is never served, whatever its name.
    """
    key = f"{MEDIA_PREFIX}/{name}"
    parsed = parse_media_key(key)
    if parsed is None:
        raise MediaError(f"{name!r} is not <sha256>.<png|jpg|gif|webp>")
    mime = EXT_MIME[parsed[1]]
    data = MediaStore(store).read(ContentPart(type="image", uri=key, sha256=parsed[0], mime=mime))
    if inspect_image(data, key).mime != mime:
        raise MediaError(f"{key}: the bytes are not {mime}")
    return data, mime


def media_names(parts: list[dict[str, Any]] | None) -> list[str]:
    """The ``<sha256>.<ext>`` names of the well-formed image parts in ``parts`` (other uris are ignored)."""
    names = []
    for part in parts or []:
        parsed = parse_media_key((part or {}).get("uri") or "")
        if parsed and parsed[0] == part.get("sha256"):
            names.append(f"{parsed[0]}.{parsed[1]}")
    return names


# --------------------------------------------------------------------------- per-deployment limits
class ImageOptions(BaseModel):
    """``options.images`` of a deployment: what its endpoint accepts and how images are sent."""

    model_config = ConfigDict(extra="forbid")
    max_side: int | None = Field(None, ge=1, description="the longest side in pixels the endpoint accepts")
    max_pixels: int | None = Field(None, ge=1, description="the most pixels per image")
    max_bytes: int | None = Field(None, ge=1, description="the largest encoded image in bytes")
    resize: Literal["fit", "error"] = Field("fit", description="`fit` shrinks a larger image (aspect kept) to a new "
                                                               "stored image; `error` refuses it")
    reencode: Literal["jpeg"] | None = Field(None, description="`jpeg` re-encodes every image first, as HELM does "
                                                               "(else images go in their original format)")
    detail: Literal["auto", "low", "high"] | None = Field(None, description="OpenAI's `image_url` detail")
    tokens_per_image: int = Field(0, ge=0, description="tokens one image takes in the window, counted when "
                                                       "fitting a prompt (e.g. 576 for LLaVA-1.5)")


#: Limits a client kind's provider enforces (used unless the deployment declares its own).
KIND_DEFAULTS: dict[str, dict[str, Any]] = {
    # Anthropic: at most 8000 px a side and 5 MB per image; about (w*h)/750 tokens, ~1,600 at 1.15 MP.
    "anthropic": {"max_side": 8000, "max_bytes": 5 * 1024 * 1024, "tokens_per_image": 1600},
    # OpenAI: a high-detail 1024x1024 image costs 85 + 4 * 170 = 765 tokens; 50 MB per request.
    "openai": {"tokens_per_image": 765, "max_bytes": 20 * 1024 * 1024},
    "openai-compatible": {"tokens_per_image": 765},
}


def image_options(deployment: Deployment) -> ImageOptions:
    declared = deployment.options.get("images") or {}
    if not isinstance(declared, dict):
        raise MediaError(f"deployment {deployment.name!r}: options.images must be a mapping")
    try:
        return ImageOptions.model_validate({**KIND_DEFAULTS.get(deployment.client, {}), **declared})
    except ValueError as exc:
        raise MediaError(f"deployment {deployment.name!r}: bad options.images: {exc}") from None


def _over(opts: ImageOptions, width: int, height: int, size: int) -> list[str]:
    why = []
    if opts.max_side and max(width, height) > opts.max_side:
        why.append(f"side {max(width, height)} > max_side {opts.max_side}")
    if opts.max_pixels and width * height > opts.max_pixels:
        why.append(f"{width * height} pixels > max_pixels {opts.max_pixels}")
    if opts.max_bytes and size > opts.max_bytes:
        why.append(f"{size} bytes > max_bytes {opts.max_bytes}")
    return why


def _encode(img, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "JPEG":
        img = img.convert("RGB") if img.mode not in ("RGB", "L") else img
        img.save(buf, format="JPEG")  # Pillow's default quality (75), as HELM's re-encode
    else:
        img.save(buf, format=fmt)
    return buf.getvalue()


def prepare_image(media: MediaStore, part: ContentPart, opts: ImageOptions,
                  where: str) -> tuple[ContentPart, str | None]:
    """The part a deployment is sent (re-encoded and/or shrunk to its limits) and a note of the change.

    Shrinking keeps the aspect ratio and steps down by 3/4 until every limit holds. Unchanged images
    come back as they are with no note (and without being read when no limit or re-encode applies).
    """
    if not (opts.max_side or opts.max_pixels or opts.max_bytes or opts.reencode):
        return part, None
    from PIL import Image

    data = media.read(part)
    with Image.open(io.BytesIO(data)) as img:
        img.load()
        fmt = "JPEG" if opts.reencode == "jpeg" else (img.format or "PNG")
        width, height = img.size
        why = _over(opts, width, height, len(data))
        if not why and not (opts.reencode and part.mime != "image/jpeg"):
            return part, None
        if why and opts.resize == "error":
            raise MediaError(f"{where}: image {(part.sha256 or '')[:12]} is over the deployment's limits "
                             f"({'; '.join(why)}) and options.images.resize is 'error'")
        scale = 1.0
        if opts.max_side:
            scale = min(scale, opts.max_side / max(width, height))
        if opts.max_pixels:
            scale = min(scale, (opts.max_pixels / (width * height)) ** 0.5)
        out = img.copy()
        while True:
            size = (max(1, int(width * scale)), max(1, int(height * scale)))
            resized = out.resize(size, Image.Resampling.LANCZOS) if size != (width, height) else out
            encoded = _encode(resized, fmt)
            if not _over(opts, size[0], size[1], len(encoded)) or size == (1, 1):
                break
            scale *= 0.75
    new = media.put(encoded, where)
    what = "re-encoded as JPEG" if fmt == "JPEG" and part.mime != "image/jpeg" else ""
    if size != (width, height):
        what = (what + ", " if what else "") + f"resized {width}x{height} -> {size[0]}x{size[1]}"
    note = f"{(part.sha256 or '')[:12]} ({len(data)} B) -> {(new.sha256 or '')[:12]} ({len(encoded)} B): {what}" + (
        f" ({'; '.join(why)})" if why else "")
    return new, note
