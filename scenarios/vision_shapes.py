"""Vision shapes: an offline, generated vision-language scenario (no download), with exact answers.

Each image is drawn with Pillow from a seeded ``random.Random``: 96x96 pixels, white background,
one to five shapes (square, circle, triangle), each a different solid colour, each in its own cell
of a 3x3 grid (so positions have names: ``top left`` ... ``center`` ... ``bottom right``). Drawing
is not anti-aliased, so every shape pixel has its exact colour. Questions ask for the number of
shapes, a shape's colour, a colour's shape or a shape's position; answers are one or two words.

``format``:
- ``generation``: the image, then the question; the answer is free text.
- ``multiple_choice``: the same with four lettered text options.
- ``image_choice``: "Which image shows a <colour> <shape>?" with four *image-valued* options.

Train instances (their own seed) serve as in-context examples, images included.
"""

from __future__ import annotations

import io
import random
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, ContentPart, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario

SIZE = 96
CELL = SIZE // 3
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 70, 220),
    "yellow": (240, 200, 20),
    "purple": (140, 50, 180),
    "orange": (250, 130, 20),
}
SHAPES = ("square", "circle", "triangle")
POSITIONS = ("top left", "top", "top right", "left", "center", "right", "bottom left", "bottom", "bottom right")
KINDS = ("count", "color", "shape", "position")


class Shape(BaseModel):
    kind: Literal["square", "circle", "triangle"]
    color: str
    cell: int  # 0..8, row-major


class VisionShapesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["generation", "multiple_choice", "image_choice"] = "generation"
    num_test: int = Field(60, ge=1, le=5000)
    num_train: int = Field(5, ge=0, le=100)
    seed: int = 0


def draw(shapes: list[Shape]) -> bytes:
    """A PNG of ``shapes`` (deterministic bytes for the same shapes)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (SIZE, SIZE), "white")
    pen = ImageDraw.Draw(img)
    for s in shapes:
        row, col = divmod(s.cell, 3)
        x0, y0 = col * CELL + 6, row * CELL + 6
        x1, y1 = x0 + CELL - 12, y0 + CELL - 12
        fill = COLORS[s.color]
        if s.kind == "square":
            pen.rectangle([x0, y0, x1, y1], fill=fill)
        elif s.kind == "circle":
            pen.ellipse([x0, y0, x1, y1], fill=fill)
        else:
            pen.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=fill)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def random_shapes(rng: random.Random, count: int | None = None) -> list[Shape]:
    n = count if count is not None else rng.randint(1, 5)
    colors = rng.sample(sorted(COLORS), n)
    cells = rng.sample(range(9), n)
    return [Shape(kind=rng.choice(SHAPES), color=c, cell=cell) for c, cell in zip(colors, cells, strict=True)]


def question(rng: random.Random, shapes: list[Shape]) -> tuple[str, str, list[str]]:
    """(question, answer, distractor pool) for one image."""
    kind = rng.choice(KINDS)
    if kind == "count":
        n = len(shapes)
        return "How many shapes are in the image?", str(n), [str(k) for k in range(1, 7) if k != n]
    target = rng.choice(shapes)
    unique_kind = sum(s.kind == target.kind for s in shapes) == 1
    if kind == "color" and unique_kind:
        return f"What color is the {target.kind}?", target.color, [c for c in COLORS if c != target.color]
    if kind == "shape":
        return f"What shape is the {target.color} object?", target.kind, [k for k in SHAPES if k != target.kind]
    return (f"Where is the {target.color} {target.kind}?", POSITIONS[target.cell],
            [p for p in POSITIONS if p != POSITIONS[target.cell]])


@scenario("vision_shapes")
class VisionShapes(Scenario[VisionShapesParams]):
    VERSION = "1"
    Params = VisionShapesParams
    description = "Seeded synthetic images (shapes, colours, counts, positions) with exact answers; offline."
    main_metric = "quasi_exact_match"
    metrics: ClassVar[list[str]] = ["exact_match", "quasi_exact_match", "quasi_prefix_exact_match", "efficiency"]

    @property
    def default_adapter(self) -> AdapterSpec:
        mc = self.params.format != "generation"
        return AdapterSpec(
            method="multiple_choice_joint" if mc else "generation",
            instructions="Answer with only the letter." if mc else "Answer with a single word, number or position.",
            input_prefix="",
            input_suffix="\n",
            output_prefix="Answer: ",
            max_train_instances=0,
            generation=GenerationParams(max_tokens=1 if mc else 3, temperature=0.0),
        )

    def load(self, files: dict[str, str]) -> list[Instance]:
        p = self.params
        out = [self._instance(random.Random(f"{p.seed}-test-{i}"), f"id{i}", "test", i)
               for i in range(p.num_test)]
        out += [self._instance(random.Random(f"{p.seed}-train-{i}"), f"train{i}", "train", i)
                for i in range(p.num_train)]
        return out

    def _image(self, shapes: list[Shape], where: str) -> ContentPart:
        return self.image(draw(shapes), where)

    def _instance(self, rng: random.Random, iid: str, split: Literal["train", "test"], index: int) -> Instance:
        fmt = self.params.format
        where = f"generated {split} instance {index}"
        if fmt == "image_choice":
            target = Shape(kind=rng.choice(SHAPES), color=rng.choice(sorted(COLORS)), cell=rng.randrange(9))
            options = [target]
            while len(options) < 4:
                other = Shape(kind=rng.choice(SHAPES), color=rng.choice(sorted(COLORS)), cell=rng.randrange(9))
                if all((other.kind, other.color) != (o.kind, o.color) for o in options):
                    options.append(other)
            rng.shuffle(options)
            refs = [Reference(text=f"<image {k + 1}>", correct=o == target,
                              image=self._image([o], f"{where}, option {k + 1}"))
                    for k, o in enumerate(options)]
            text = f"Which image shows a {target.color} {target.kind}?"
            return Instance(id=iid, split=split, input=Input(parts=[ContentPart(type="text", text=text)]),
                            references=refs)
        shapes = random_shapes(rng)
        q, answer, pool = question(rng, shapes)
        parts = [self._image(shapes, where), ContentPart(type="text", text=q)]
        if fmt == "multiple_choice":
            choices = [answer, *rng.sample(pool, min(3, len(pool)))]
            rng.shuffle(choices)
            refs = [Reference(text=c, correct=c == answer) for c in choices]
        else:
            refs = [Reference(text=answer, correct=True)]
        return Instance(id=iid, split=split, input=Input(parts=parts), references=refs,
                        extra={"shapes": [s.model_dump() for s in shapes]})
