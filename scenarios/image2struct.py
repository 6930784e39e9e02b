"""Image2Struct (HELM ``scenarios/vision_language/image2struct/``): show a model an image and ask for
the LaTeX, web page or LilyPond source that draws it; the answer is rendered (helmflow.render) and
compared with the image (metrics/image2struct.py).

As HELM's ``Image2StructureScenario`` with ``recompile_prompt=False`` (what its run specs pass): the
dataset's own image is the prompt's image and the reference image; a row is kept when its quoted
``category`` names the subset and, unless ``difficulty`` is ``all``, its ``difficulty`` matches; the
reference text is the row's ``text`` (the wild subsets have none, so no edit similarity). HELM valid =
the Hub's ``validation`` split. HELM pins none of the datasets, so they run from a mirror only. The music
sheets (LilyPond) are not here: helmflow has no LilyPond renderer yet.
"""

from __future__ import annotations

from typing import ClassVar, Literal

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
        table = read_parquet_source(self.name, files[name], COLUMNS)
        wild = self.params.subset.startswith("wild")
        out = []
        for i, row in enumerate(table.to_pylist()):
            if row["category"][1:-1] != self.params.subset:  # HELM: the category is stored quoted
                continue
            if self.params.difficulty != "all" and row["difficulty"] != self.params.difficulty:
                continue
            parts = [ContentPart(type="text", text=self.PROMPT), self.image(row["image"], self.where(name, i))]
            out.append(Instance(
                id=str(row["uuid"]).replace('"', ""), split="valid", input=Input(parts=parts),
                references=[Reference(text=row["text"] or "", correct=True)],
                extra={"difficulty": row["difficulty"], "wild": wild},
            ))
        return out


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
    metrics = ["image2struct_webpage"]
    description = "Image2Webpage: write the HTML, CSS and JavaScript of a page from its screenshot."

