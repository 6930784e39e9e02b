"""What the offline ``draw`` behaviour paints: a deterministic PNG from the words of a prompt.

A text-to-image stand-in that needs no weights, so a text-to-image board runs from a clean install.
Colours (:data:`COLORS`) and shapes (:data:`SHAPES`) named in the prompt are drawn, each shape in
the colour named nearest before it (else a seeded one), on a light background seeded by the prompt;
a person word (``man``, ``woman``, ``boy``, ...) draws a figure whose face has one of the ten Monk
skin tones, seeded. A prompt naming nothing it knows gets three seeded shapes. Every shape has a
black outline. The ``seed`` (``image_generation.seed``) and the image's index among the ``n`` asked
for move the shapes, so the images of one prompt differ and the same request always gets the same
bytes (Pillow's PNG encoder, no timestamps).
"""

from __future__ import annotations

import hashlib
import io
import random
import re

from helmflow.scenarios.vision_shapes import COLORS as SHAPE_COLORS

#: the colour words the model knows, and the RGB it paints them in: the vision-shapes scenario's six, then five more
COLORS: dict[str, tuple[int, int, int]] = {
    **SHAPE_COLORS,
    "pink": (240, 120, 170),
    "brown": (120, 70, 30),
    "black": (20, 20, 20),
    "gray": (128, 128, 128),
    "white": (250, 250, 250),
}
#: the shape words it knows (plural forms too), and what it draws for each
SHAPES: dict[str, str] = {
    "circle": "circle", "circles": "circle", "ball": "circle", "sun": "circle", "apple": "circle",
    "square": "square", "squares": "square", "box": "square", "rectangle": "square",
    "triangle": "triangle", "triangles": "triangle", "tree": "triangle", "mountain": "triangle",
}
PEOPLE = {"man", "woman", "boy", "girl", "person", "people", "lady", "mother", "father", "child", "men", "women",
          "doctor", "nurse", "teacher", "ceo", "scientist", "he", "she", "her", "him"}
#: the Monk Skin Tone scale (skintone.google), as HELM's skin tone metric lists it
MONK_TONES: tuple[tuple[int, int, int], ...] = (
    (246, 237, 228), (243, 231, 219), (247, 234, 208), (234, 218, 186), (215, 189, 150),
    (160, 126, 86), (130, 92, 67), (96, 65, 52), (58, 49, 42), (41, 36, 32),
)
DEFAULT_SIDE = 128
_WORD = re.compile(r"[a-z]+")


def _rng(*parts: object) -> random.Random:
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


def plan(prompt: str) -> list[tuple[str, tuple[int, int, int] | None]]:
    """The (kind, colour) of each thing the prompt names, in order: kinds ``circle``, ``square``,
    ``triangle``, ``person``; colour None = seeded at drawing time."""
    things: list[tuple[str, tuple[int, int, int] | None]] = []
    colour: tuple[int, int, int] | None = None
    named_colours: list[tuple[int, int, int]] = []
    for word in _WORD.findall(prompt.lower()):
        if word in COLORS:
            colour = COLORS[word]
            named_colours.append(colour)
        elif word in SHAPES:
            things.append((SHAPES[word], colour))
            colour = None
        elif word in PEOPLE and not any(kind == "person" for kind, _ in things):
            things.append(("person", None))
    if not any(kind != "person" for kind, _ in things):  # colours without shapes: a square of each
        things += [("square", c) for c in named_colours]
    return things[:6]


def draw(prompt: str, index: int = 0, width: int | None = None, height: int | None = None,
         seed: int | None = None) -> bytes:
    """The PNG for image ``index`` of ``prompt``."""
    from PIL import Image, ImageDraw

    w, h = width or DEFAULT_SIDE, height or DEFAULT_SIDE
    rng = _rng(prompt, seed, index)
    back = _rng(prompt, "background")
    img = Image.new("RGB", (w, h), tuple(back.randint(200, 245) for _ in range(3)))
    pen = ImageDraw.Draw(img)
    things = plan(prompt) or [(rng.choice(("circle", "square", "triangle")), None) for _ in range(3)]
    for kind, colour in things:
        side = max(4, min(w, h) * rng.randint(20, 40) // 100)
        x0, y0 = rng.randrange(0, max(1, w - side)), rng.randrange(0, max(1, h - side))
        x1, y1 = x0 + side, y0 + side
        fill = colour or tuple(rng.randint(20, 230) for _ in range(3))
        if kind == "circle":
            pen.ellipse([x0, y0, x1, y1], fill=fill, outline=(0, 0, 0))
        elif kind == "square":
            pen.rectangle([x0, y0, x1, y1], fill=fill, outline=(0, 0, 0))
        elif kind == "triangle":
            pen.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=fill, outline=(0, 0, 0))
        else:  # a figure: a face of a seeded Monk tone over a seeded shirt
            tone = MONK_TONES[rng.randrange(len(MONK_TONES))]
            head = side // 2
            pen.rectangle([x0, y0 + head, x1, y1 + head // 2], fill=fill, outline=(0, 0, 0))
            pen.ellipse([x0 + head // 2, y0, x0 + head // 2 + head, y0 + head], fill=tone)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()
