"""Fixture mirrors for the Image2Struct board: Parquet in the datasets' row shape (``uuid``, PNG
``image`` as a Hugging Face Image struct, ``structure``, ``text``, ``difficulty``, ``category`` quoted
as HELM reads it, ``assets``), holding items written here and drawn by helmflow's own renderer, never
real rows. ``SOURCES`` doubles as the answers a perfect model gives (``answer_for``)."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow import render
from helmflow.scenarios import get_scenario

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
# (uuid, subset, difficulty, LaTeX source): one per board cell, each small (a few 8x8 blocks, so
# HELM's block EMD, quadratic in blocks, stays quick)
SOURCES = [
    ("eq-1", "equation", "easy", "$$x^2$$"),
    ("eq-2", "equation", "medium", "$$a+b$$"),
    ("eq-3", "equation", "hard", "$$\\sqrt{y}$$"),
    ("tab-1", "table", "easy", "\\begin{tabular}{|c|}\\hline a \\\\ \\hline\\end{tabular}"),
    ("tab-2", "table", "medium", "\\begin{tabular}{c|c} 1 & 2 \\end{tabular}"),
    ("tab-3", "table", "hard", "\\begin{tabular}{cc} p & q \\end{tabular}"),
    ("plot-1", "plot", "easy", "\\rule{8mm}{1mm}"),
    ("plot-2", "plot", "medium", "\\rule{1mm}{8mm}"),
    ("plot-3", "plot", "hard", "\\rule{4mm}{4mm}"),
    ("alg-1", "algorithm", "easy", "if $a$"),
    ("alg-2", "algorithm", "medium", "do $b$"),
    ("alg-3", "algorithm", "hard", "end"),
    ("wild-1", "wild", "easy", "$$z$$"),  # HELM's wild rows have no reference text
]


def png(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def latex_rows(subset: str) -> pa.Table:
    rows = []
    for uuid, sub, difficulty, source in SOURCES:
        out = render.render_latex(source)
        assert out.image is not None, out.error
        rows.append({"uuid": f'"{uuid}"', "image": {"bytes": png(out.image), "path": f"{uuid}.png"},
                     "structure": source, "text": None if sub == "wild" else out.text, "difficulty": difficulty,
                     "category": f'"{sub}"',
                     "assets": []})
    schema = pa.schema([("uuid", pa.string()), ("image", IMAGE), ("structure", pa.string()), ("text", pa.string()),
                        ("difficulty", pa.string()), ("category", pa.string()), ("assets", pa.list_(pa.string()))])
    return pa.Table.from_pylist(rows, schema=schema)


# Web pages: (uuid, subset, difficulty, blocks as (left, top, width, height, colour), text, with the asset).
# Solid blocks at pixel positions and text drawn in a transparent colour, so PIL draws exactly what
# Chromium screenshots; the reference images are that drawing at THUMB, HELM's metric resizing the
# 1920x1080 render to it (HELM's block EMD is quadratic in blocks: a thumbnail keeps the board's test quick).
PAGES = [
    ("css-1", "css", "easy", [(0, 0, 960, 540, (31, 78, 154))], "Prices", False),
    ("css-2", "css", "medium", [(960, 0, 960, 540, (200, 30, 30))], "About us", False),
    ("css-3", "css", "hard", [(0, 540, 960, 540, (20, 140, 60))], "Contact", True),
    ("html-1", "html", "easy", [(480, 270, 960, 540, (0, 0, 0))], "Home", False),
    ("html-2", "html", "medium", [(0, 0, 1920, 360, (240, 200, 0))], "News", False),
    ("html-3", "html", "hard", [(0, 720, 1920, 360, (90, 0, 120))], "Archive", False),
    ("js-1", "javascript", "easy", [(0, 0, 480, 1080, (0, 120, 120))], "Menu", False),
    ("js-2", "javascript", "medium", [(1440, 0, 480, 1080, (120, 60, 0))], "Cart", False),
    ("js-3", "javascript", "hard", [(0, 0, 960, 540, (0, 0, 0)), (960, 540, 960, 540, (0, 0, 0))], "Grid", False),
    ("web-wild-1", "wild", "easy", [(240, 135, 1440, 810, (50, 50, 50))], "Wild", False),
]
THUMB = (32, 18)
ASSET = "img/logo.png"
ASSET_AT = (1200, 120)
BROKEN_PAGE = "js-2"  # answered with bare HTML, not HELM's JSON list of files: a failed compile


def asset_png() -> bytes:
    from PIL import Image

    return png(Image.new("RGB", (480, 270), (250, 120, 0)))


def page_html(uuid: str) -> str:
    _, _, _, blocks, text, asset = next(p for p in PAGES if p[0] == uuid)
    divs = "".join(f'<div style="position:absolute;left:{x}px;top:{y}px;width:{w}px;height:{h}px;'
                   f'background:rgb{c};color:transparent">{text if k == 0 else ""}</div>'
                   for k, (x, y, w, h, c) in enumerate(blocks))
    img = f'<img src="{ASSET}" style="position:absolute;left:{ASSET_AT[0]}px;top:{ASSET_AT[1]}px">' if asset else ""
    return f'<html><head><link rel="stylesheet" href="style.css"></head><body>{divs}{img}</body></html>'


PAGE_CSS = "body { margin: 0; background: rgb(255, 255, 255); }"


def page_image(uuid: str):
    """What the page looks like, drawn with PIL (the screenshot Chromium takes of it), at THUMB."""
    from PIL import Image, ImageDraw

    _, _, _, blocks, _, asset = next(p for p in PAGES if p[0] == uuid)
    img = Image.new("RGB", render.RESOLUTION, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for x, y, w, h, c in blocks:
        draw.rectangle([x, y, x + w - 1, y + h - 1], fill=c)
    if asset:
        with Image.open(io.BytesIO(asset_png())) as logo:
            img.paste(logo.convert("RGB"), ASSET_AT)
    return img.resize(THUMB)


def repository(uuid: str, asset: bool) -> str:
    """HELM's ``structure`` for a web page: the page's repository as a base64 tar.gz."""
    import base64
    import tarfile

    files = {"index.html": page_html(uuid).encode(), "style.css": PAGE_CSS.encode()}
    if asset:
        files[ASSET] = asset_png()
        files["_site/" + ASSET] = asset_png()  # Jekyll's output folder: not an asset (HELM skips it)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buf.getvalue()).decode()


def webpage_rows() -> pa.Table:
    rows = []
    for uuid, sub, difficulty, _, _, asset in PAGES:
        rows.append({"uuid": f'"{uuid}"', "image": {"bytes": png(page_image(uuid)), "path": f"{uuid}.png"},
                     "structure": None if sub == "wild" else repository(uuid, asset),
                     "text": None if sub == "wild" else render.html_text(page_html(uuid)),
                     "difficulty": difficulty, "category": f'"{sub}"', "assets": []})
    schema = pa.schema([("uuid", pa.string()), ("image", IMAGE), ("structure", pa.string()), ("text", pa.string()),
                        ("difficulty", pa.string()), ("category", pa.string()), ("assets", pa.list_(pa.string()))])
    return pa.Table.from_pylist(rows, schema=schema)


def page_answer(uuid: str) -> str:
    """What a perfect model answers for a page fixture: HELM's JSON list of files in a ```json block
    (the asset named too, with text for content, as models do: the dataset's file is kept)."""
    import json

    files = [{"filename": "index.html", "content": page_html(uuid)}, {"filename": "style.css", "content": PAGE_CSS}]
    if next(p for p in PAGES if p[0] == uuid)[5]:
        files.append({"filename": ASSET, "content": "a binary image cannot be shown as text"})
    return f"Here are the files:\n```json\n{json.dumps(files, indent=1)}\n```"


# Music sheets: (uuid, difficulty, LilyPond source). HELM's music rows have no reference source; the hard
# one's image is drawn here and answered without a \version, which HELM's convert-ly step refuses. A
# 5-point staff keeps each sheet to a few 8x8 blocks (HELM's block EMD is quadratic in blocks).
MUSIC = [
    ("music-1", "easy", '\\version "2.24.0"\n#(set-global-staff-size 5)\n{ c\'4 e\'4 }'),
    ("music-2", "medium", '\\version "2.24.0"\n#(set-global-staff-size 5)\n{ g\'2 }'),
    ("music-3", "hard", None),
]
BROKEN_MUSIC = "{ c'4 }"  # no \version: convert-ly fails, a failed compile as in HELM


def music_rows() -> pa.Table:
    from PIL import Image, ImageDraw

    rows = []
    for uuid, difficulty, source in MUSIC:
        if source is None:
            image = Image.new("RGB", (64, 24), (255, 255, 255))
            ImageDraw.Draw(image).line([(0, 12), (63, 12)], fill=(0, 0, 0))
        else:
            out = render.render_lilypond(source)
            assert out.image is not None, out.error
            image = out.image
        rows.append({"uuid": f'"{uuid}"', "image": {"bytes": png(image), "path": f"{uuid}.png"}, "structure": None,
                     "text": None, "difficulty": difficulty, "category": '"music"', "assets": []})
    schema = pa.schema([("uuid", pa.string()), ("image", IMAGE), ("structure", pa.string()), ("text", pa.string()),
                        ("difficulty", pa.string()), ("category", pa.string()), ("assets", pa.list_(pa.string()))])
    return pa.Table.from_pylist(rows, schema=schema)


def music_answer(uuid: str) -> str:
    source = next(s for u, _, s in MUSIC if u == uuid)
    return source if source is not None else BROKEN_MUSIC  # HELM engraves the answer as it is (no code block)


def write_mirror(root: Path, music: bool = True) -> Path:
    """Every LaTeX, web page and music sheet subset file (each holds all rows, as HELM filters on ``category``)."""
    boards = [("image2latex", latex_rows(""), ("equation", "table", "plot", "algorithm", "wild")),
              ("image2webpage", webpage_rows(), ("css", "html", "javascript", "wild"))]
    if music:
        boards.append(("image2musicsheet", music_rows(), ("music",)))
    for name, table, subsets in boards:
        for subset in subsets:
            s = get_scenario(name, {"subset": subset})
            path = root / name / s.dataset_revision() / s.file()
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path)
    return root


def answer_for(uuid: str) -> str:
    """What a perfect model answers for a fixture: its source in a ```latex block."""
    source = next(s for u, _, _, s in SOURCES if u == uuid)
    return f"Here is the code:\n```latex\n{source}\n```"


BROKEN = "tab-1"  # the fixture the policy answers with LaTeX that does not compile
ANSWERS = "image2struct-answers.json"


def write_answers(root: Path) -> Path:
    """{image sha256: answer} for :func:`policy`: the fixture's own source (a ```latex block), except
    :data:`BROKEN`, answered with an unclosed environment."""
    import hashlib
    import json

    table = pq.read_table(next((root / "image2latex").rglob("*.parquet"))).to_pylist()
    answers = {hashlib.sha256(row["image"]["bytes"]).hexdigest():
               ("\\begin{tabular}{c" if row["uuid"] == f'"{BROKEN}"' else answer_for(row["uuid"].strip('"')))
               for row in table}
    for row in pq.read_table(next((root / "image2webpage").rglob("*.parquet"))).to_pylist():
        uuid = row["uuid"].strip('"')
        answers[hashlib.sha256(row["image"]["bytes"]).hexdigest()] = (
            page_html(uuid) if uuid == BROKEN_PAGE else page_answer(uuid))
    for music in (root / "image2musicsheet").rglob("*.parquet"):
        for row in pq.read_table(music).to_pylist():
            answers[hashlib.sha256(row["image"]["bytes"]).hexdigest()] = music_answer(row["uuid"].strip('"'))
    path = root / ANSWERS
    path.write_text(json.dumps(answers))
    return path


def policy(prompt: str, payload: dict) -> str:
    """A dev-server policy answering from the image: the source that drew it ($IMAGE2STRUCT_ANSWERS)."""
    import json
    import os

    answers = json.loads(Path(os.environ["IMAGE2STRUCT_ANSWERS"]).read_text())
    for part in payload.get("_parts", []):
        if isinstance(part, dict) and part.get("type") == "image":
            return answers.get(part["sha256"], "no idea")
    return "no image"
