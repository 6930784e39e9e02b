"""What the offline ``vision`` behaviour sees: solid-colour shapes found in the pixels of an image.

It answers ``vision_shapes`` questions from the image bytes alone (never from instance metadata):
connected regions of one non-white colour are shapes; the fill ratio of a region's bounding box
tells a square (~1), a circle (~pi/4) from a triangle (~1/2); the region's centre names its cell of
a 3x3 grid. Anything else it does not recognise (and says nothing).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from helmflow.scenarios.vision_shapes import COLORS, POSITIONS

_QUESTIONS = [
    (re.compile(r"How many shapes are in the image\?"), "count"),
    (re.compile(r"What color is the (\w+)\?"), "color"),
    (re.compile(r"What shape is the (\w+) object\?"), "shape"),
    (re.compile(r"Where is the (\w+) (\w+)\?"), "position"),
    (re.compile(r"Which image shows a (\w+) (\w+)\?"), "which"),
]


@dataclass(frozen=True)
class Seen:
    kind: str
    color: str
    position: str


def _nearest_color(rgb: tuple[int, ...]) -> str:
    return min(COLORS, key=lambda c: sum((a - b) ** 2 for a, b in zip(COLORS[c], rgb, strict=True)))


def see(data: bytes) -> list[Seen]:
    """The shapes in an image, in reading order of their top-left pixel."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        rgb = img.convert("RGB")
        width, height = rgb.size
        raw = rgb.tobytes()
        pixels = [tuple(raw[i:i + 3]) for i in range(0, len(raw), 3)]
    seen_at = [False] * (width * height)
    found: list[Seen] = []
    for start, color in enumerate(pixels):
        if seen_at[start] or min(color) > 235:
            continue
        stack, region = [start], []
        seen_at[start] = True
        while stack:  # flood fill over 4-neighbours of the same colour
            at = stack.pop()
            region.append(at)
            y, x = divmod(at, width)
            for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                if 0 <= ny < height and 0 <= nx < width:
                    k = ny * width + nx
                    if not seen_at[k] and pixels[k] == color:
                        seen_at[k] = True
                        stack.append(k)
        if len(region) < 12:
            continue  # specks are not shapes
        ys = [a // width for a in region]
        xs = [a % width for a in region]
        box = (max(xs) - min(xs) + 1) * (max(ys) - min(ys) + 1)
        fill = len(region) / box
        kind = "square" if fill > 0.93 else "circle" if fill > 0.65 else "triangle"
        cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
        cell = min(int(cy * 3 / height), 2) * 3 + min(int(cx * 3 / width), 2)
        found.append(Seen(kind, _nearest_color(color), POSITIONS[cell]))
    return found


def answer(question_text: str, images: list[bytes], options: dict[str, int] | None = None) -> str | None:
    """The answer to the last shapes question in ``question_text`` about ``images``.

    ``options`` maps an option letter to the index of its image (image-valued choices); otherwise
    the last image is the question's own (in-context examples' images come before it).
    """
    last: tuple[re.Match, str] | None = None
    for pattern, kind in _QUESTIONS:
        for m in pattern.finditer(question_text):
            if last is None or m.start() > last[0].start():
                last = (m, kind)
    if last is None or not images:
        return None
    m, kind = last
    if kind == "which":
        for letter, index in (options or {}).items():
            shapes = see(images[index])
            if any(s.color == m.group(1) and s.kind == m.group(2) for s in shapes):
                return letter
        return None
    shapes = see(images[-1])
    if kind == "count":
        return str(len(shapes))
    if kind == "color":
        return next((s.color for s in shapes if s.kind == m.group(1)), None)
    if kind == "shape":
        return next((s.kind for s in shapes if s.color == m.group(1)), None)
    return next((s.position for s in shapes if s.color == m.group(1) and s.kind == m.group(2)), None)
