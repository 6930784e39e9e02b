"""Rendered answers as stored artifacts: what a renderer (:mod:`helmflow.render`) drew for a completion is
kept once, keyed on the completion and the renderer's version, and every run that renders lists its renders.

The image goes to the media store (``media/<sha256>.png``, content-addressed and decode-checked like every
input image); a small record under ``renders/`` (:func:`helmflow.layout.render_record`) says what the
renderer made of the completion: the image's part, or the error of a failed compile, the structure's text
and the renderer's time. The key (:func:`render_key`) covers the renderer, its declared version, the
completion and the sha256 of each asset served to it, so scoring the same answer again (another model that
gave it, a rescoring after a metric change) reads the record instead of compiling: a renderer change bumps
its version in :data:`helmflow.render.VERSIONS`, and with it every key.

While a run is scored (:func:`collecting`), each render is noted as a :class:`helmflow.records.Render`; the
run publishes them as ``runs/<run_id>/renders.parquet`` (the lineage of each rendered image) and counts them
in ``run.json``. A renderer this machine cannot run raises (``RendererMissing``) and leaves no record."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import json
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from helmflow import layout, render
from helmflow.media import MediaError, MediaStore
from helmflow.records import ContentPart, Render


class StoredRender(BaseModel):
    """The record under ``renders/``: what the renderer drew for one key, written once."""

    model_config = ConfigDict(extra="forbid")
    renderer: str
    renderer_version: str
    render_key: str
    compiled: bool
    error: str | None = None
    image: ContentPart | None = None
    text: str | None = None
    seconds: float = 0.0


def render_key(renderer: str, completion: str, assets: dict[str, bytes] | None = None) -> str:
    """sha256 of the renderer, its version, the completion and the assets (by name and sha256)."""
    payload = {"renderer": renderer, "version": render.VERSIONS[renderer], "completion": completion,
               "assets": {name: hashlib.sha256(data).hexdigest() for name, data in sorted((assets or {}).items())}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


_RUN: contextvars.ContextVar[list[Render] | None] = contextvars.ContextVar("renders", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[Render]]:
    """Within the block every :func:`cached_render` is noted in the yielded list (a run's renders)."""
    noted: list[Render] = []
    token = _RUN.set(noted)
    try:
        yield noted
    finally:
        _RUN.reset(token)


def _png(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _stored(media: MediaStore, key: str) -> tuple[StoredRender, Any] | None:
    """The record of ``key`` and its image (None without one, or when it or its image does not check out)."""
    from PIL import Image

    store = media.store
    if store is None or not store.exists(key):
        return None
    try:
        record = StoredRender.model_validate(store.read_json(key))
        if record.image is None:
            return record, None
        with Image.open(io.BytesIO(media.read(record.image))) as img:
            return record, img.convert("RGB")
    except (MediaError, ValidationError, ValueError, OSError):  # a damaged record or image: render again
        return None


def cached_render(media: MediaStore, renderer: str, completion: str, draw: Callable[[], render.Rendered], *,
                  instance_id: str, request_hash: str, sample_index: int = 0,
                  assets: dict[str, bytes] | None = None) -> render.Rendered:
    """What ``renderer`` draws for ``completion``: the stored render when there is one, else ``draw()``,
    its image put in the media store and its record written (the run in :func:`collecting` notes it)."""
    version = render.VERSIONS[renderer]
    key = render_key(renderer, completion, assets)
    record_key = layout.render_record(renderer, version, key)
    found = _stored(media, record_key)
    reused = found is not None
    if found is not None:
        record, image = found
        out = render.Rendered(image, record.text, record.error, record.seconds)
    else:
        out = draw()
        part = media.put(_png(out.image), f"the {renderer} render of request {request_hash}") if out.image else None
        record = StoredRender(renderer=renderer, renderer_version=version, render_key=key, compiled=part is not None,
                              error=out.error, image=part, text=out.text, seconds=out.seconds)
        if media.store is not None:
            media.store.write_json(record_key, record.model_dump(mode="json"))
    noted = _RUN.get()
    if noted is not None:
        noted.append(Render(instance_id=instance_id, sample_index=sample_index, request_hash=request_hash,
                            renderer=renderer, renderer_version=version, render_key=key, compiled=record.compiled,
                            error=record.error, image=record.image, seconds=record.seconds, reused=reused))
    return out
