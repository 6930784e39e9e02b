"""Image2Struct (HELM ``scenarios/vision_language/image2struct/``): show a model an image and ask for
the LaTeX, web page or LilyPond source that draws it; the answer is rendered (helmflow.render) and
compared with the image (metrics/image2struct.py).

As HELM's ``Image2StructureScenario`` with ``recompile_prompt=False`` (what its run specs pass): the
dataset's own image is the prompt's image and the reference image; a row is kept when its quoted
``category`` names the subset and, unless ``difficulty`` is ``all``, its ``difficulty`` matches; the
reference text is the row's ``text`` (the wild subsets have none, so no edit similarity). HELM valid =
the Hub's ``validation`` split. HELM pins none of the datasets, so they run from a mirror only.

Web pages (HELM ``WebpageScenario.preprocess_row``): a row's ``structure`` is a base64 ``tar.gz`` of the
page's repository; its images (HELM's ``ASSETS_EXTENSIONS``, outside ``_site`` and dot folders) are the
page's assets, named in the prompt ("You have access to the following assets") and kept with the
instance (``extra["assets"]``: name, media key, sha256), to be written into the page's folder when an
answer is rendered. HELM drops the row's ``assets`` column; so does helmflow. An asset the media store
cannot hold as a raster image (SVG, ICO, BMP, TIFF) is left out and counted in ``extra["assets_left_out"]``.
"""

from __future__ import annotations

import base64
import io
import posixpath
import tarfile
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.scenarios import DataSource, ScenarioError, scenario
from helmflow.scenarios.base import read_parquet_source
from helmflow.scenarios.vision_language import UNPINNED, HubVisionScenario, generation_spec

INSTRUCTIONS = "Just give a short answer without answering in a complete sentence."
LATEX_PROMPT = ("Please provide the LaTeX code used to generate this image. Only generate the code relevant to what "
                "you see. Your code will be surrounded by all the imports necessary as well as the begin and end "
                "document delimiters.")
WEBPAGE_PROMPT = (
    "Please generate the source code to generate a webpage that looks like this image as much as feasibly possible.\n"
    "You should output a json object associating each file name with its content.\n\n"
    "Here is a simple example of the expected structure (that does not correspond to the image)."
    " In this example, 3 files are created: index.html, style.css and script.js.\n"
    "[\n"
    "  {\n"
    '    "filename": "index.html",\n'
    '    "content": "<!DOCTYPE html>\\n<html>\\n<head>\\n<title>Title of the document</title>\\n</head>\\n<body>'
    '\\n\\n<p>Content of the document......</p>\\n\\n</body>\\n</html>"\n'
    "  },\n"
    "  {\n"
    '    "filename": "style.css",\n'
    '    "content": "body {\\n  background-color: lightblue;\\n}\\nh1 {\\n  color: white;\\n  text-align: center;'
    '\\n}"\n'
    "  },\n"
    "  {\n"
    '    "filename": "script.js",\n'
    '    "content": "document.getElementById(\\"demo\\").innerHTML = \\"Hello JavaScript!\\";"\n'
    "  }\n"
    "]\n"
    "You do not have to create files with the same names. Create as many files as you need, you can even use "
    "directories if necessary,"
    " they will be created for you automatically. Try to write some realistic code keeping in mind that it should"
    " look like the image as much as feasibly possible."
)
MUSIC_PROMPT = ("Please generate the Lilypond code to generate a music sheet that looks like this image as much as "
                "feasibly possible.\n"
                "This music sheet was created by me, and I would like to recreate it using Lilypond.")
ASSETS_INTRO = "\nYou have access to the following assets:\n"
ASSETS_EXTENSIONS = ("png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "bmp", "tiff")  # HELM's
MAX_ARCHIVE = 64 << 20  # bytes a row's decoded repository may hold
COLUMNS = {"uuid": "string", "image": "image", "text": "string", "difficulty": "string", "category": "string"}


class Image2StructParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: str
    difficulty: Literal["all", "easy", "medium", "hard"] = "all"


class Image2Struct(HubVisionScenario[Image2StructParams]):
    VERSION = "1"
    HUB_REVISION = UNPINNED  # HELM loads the datasets unpinned: runs from a mirror only
    Params = Image2StructParams
    main_metric = "earth_mover_similarity"
    default_adapter = generation_spec(INSTRUCTIONS, max_tokens=2000)
    SUBSETS: ClassVar[tuple[str, ...]] = ()
    PROMPT: ClassVar[str] = ""

    def file(self) -> str:
        if self.params.subset not in self.SUBSETS:
            raise ScenarioError(f"scenario {self.name!r}: subset {self.params.subset!r} is not one of "
                                f"{', '.join(self.SUBSETS)}")
        return f"{self.params.subset}/validation-00000-of-00001.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.file(), url=self.hub_url(self.file()))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        name = self.file()
        columns = {**COLUMNS, "structure": "string"} if self.ASSETS else COLUMNS
        if self.NO_TEXT:
            columns = {k: v for k, v in columns.items() if k != "text"}
        table = read_parquet_source(self.name, files[name], columns)
        wild = self.params.subset.startswith("wild")
        out = []
        for i, row in enumerate(table.to_pylist()):
            if row["category"][1:-1] != self.params.subset:  # HELM: the category is stored quoted
                continue
            if self.params.difficulty != "all" and row["difficulty"] != self.params.difficulty:
                continue
            extra: dict[str, Any] = {"difficulty": row["difficulty"], "wild": wild}
            prompt = self.PROMPT
            if self.ASSETS and not wild:
                assets, left_out = self.assets(row.get("structure"), self.where(name, i))
                extra["assets"] = assets
                if left_out:
                    extra["assets_left_out"] = left_out
                names = [a["name"] for a in assets] + left_out
                if names:  # HELM lists every asset it found, in the order it walked the repository
                    prompt += ASSETS_INTRO + "".join(f"- {n}\n" for n in names)
            parts = [ContentPart(type="text", text=prompt), self.image(row["image"], self.where(name, i))]
            out.append(Instance(
                id=str(row["uuid"]).replace('"', ""), split="valid", input=Input(parts=parts),
                references=[Reference(text=row.get("text") or "", correct=True)], extra=extra,
            ))
        return out

    ASSETS: ClassVar[bool] = False
    NO_TEXT: ClassVar[bool] = False  # the dataset has no source text (music sheets): the column is not required

    def assets(self, structure: Any, where: str) -> tuple[list[dict[str, str]], list[str]]:
        """HELM ``extract_repo`` + ``list_assets``: the images in the row's base64 ``tar.gz`` repository,
        read in memory (nothing is extracted to disk, no member can name a path outside the page), in
        sorted order (HELM's follows ``os.walk``, the file system's order)."""
        if not structure:
            return [], []
        try:
            archive = base64.b64decode(structure, validate=False)
            if len(archive) > MAX_ARCHIVE:
                raise ScenarioError(f"scenario {self.name!r}: {where}: repository archive over {MAX_ARCHIVE} bytes")
            tar = tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz")
            members = [m for m in tar.getmembers() if m.isfile()]
        except (ValueError, tarfile.TarError, OSError, EOFError) as e:
            raise ScenarioError(f"scenario {self.name!r}: {where}: the structure is not a base64 tar.gz "
                                f"({e})") from None
        assets: list[dict[str, str]] = []
        left_out: list[str] = []
        with tar:
            for member in sorted(members, key=lambda m: posixpath.normpath(m.name)):
                rel = posixpath.normpath(member.name)
                folder = posixpath.dirname(rel)
                if (rel.startswith(("/", "..")) or rel.split(".")[-1].lower() not in ASSETS_EXTENSIONS
                        or folder.split("/")[0] == "_site" or any(p.startswith(".") for p in folder.split("/") if p)):
                    continue
                data = tar.extractfile(member)
                blob = data.read() if data is not None else b""
                if rel.split(".")[-1].lower() in ("svg", "ico", "bmp", "tiff"):
                    left_out.append(rel)
                    continue
                try:
                    part = self.image(blob, f"{where} asset {rel}")
                except ScenarioError:
                    left_out.append(rel)
                    continue
                assets.append({"name": rel, "uri": part.uri or "", "sha256": part.sha256 or "",
                               "mime": part.mime or ""})
        return assets, left_out


@scenario("image2latex")
class Image2Latex(Image2Struct):
    HUB_REPO = "stanford-crfm/i2s-latex"
    SUBSETS = ("equation", "table", "plot", "algorithm", "wild", "wild_legacy")
    PROMPT = LATEX_PROMPT
    metrics = ["image2struct_latex"]
    description = "Image2LaTeX: write the LaTeX that draws an equation, table, plot or algorithm."


@scenario("image2webpage")
class Image2Webpage(Image2Struct):
    HUB_REPO = "stanford-crfm/i2s-webpage"
    SUBSETS = ("css", "html", "javascript", "wild", "wild_legacy")
    PROMPT = WEBPAGE_PROMPT
    VERSION = "2"  # the repository's images are the page's assets, named in the prompt
    metrics = ["image2struct_webpage"]
    ASSETS = True
    description = "Image2Webpage: write the HTML, CSS and JavaScript of a page from its screenshot."



class MusicParams(Image2StructParams):
    subset: str = "music"  # HELM's run spec passes the only subset itself


@scenario("image2musicsheet")
class Image2Musicsheet(Image2Struct):
    HUB_REPO = "stanford-crfm/i2s-musicsheet"
    SUBSETS = ("music",)
    PROMPT = MUSIC_PROMPT
    Params = MusicParams
    metrics = ["image2struct_musicsheet"]
    NO_TEXT = True  # HELM: "no ground truth for music sheets", so no edit similarity
    description = "Image2Musicsheet: write the LilyPond that engraves a music sheet."
