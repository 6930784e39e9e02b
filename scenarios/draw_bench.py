"""DrawBench (HEIM): 200 prompts in 11 categories (Imagen, arXiv 2205.11487), from a Google Sheet.

As HELM's ``DrawBenchScenario``: the sheet's CSV export (``gviz/tq?tqx=out:csv&sheet=Sheet1``; unpinned
upstream: pinned here by the sha256 recorded at first fetch), the header skipped, the prompt in the first
column; ``category`` keeps the rows whose category starts with it (HELM's prefix match), or every row
with ``all``. No reference images. Ids are ``id<row>``, the row of the file.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Instance
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource
from helmflow.scenarios.prompt_sheet import sheet_instances
from helmflow.scenarios.text_to_image import TextToImageScenario

URL = ("https://docs.google.com/spreadsheets/d/1y7nAbmR4FREi6npB1u-Bo3GFdwdOPYJc617rBOxIRHY/"
       "gviz/tq?tqx=out:csv&sheet=Sheet1")
FILE = "draw_bench.csv"
#: the categories of HEIM's run entries (Rare and Misspellings are commented out there)
CATEGORIES = ("Colors", "DALL-E", "Text", "Reddit", "Counting", "Conflicting", "Descriptions", "Gary", "Positional")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: str = "all"


@scenario("draw_bench")
class DrawBench(TextToImageScenario):
    VERSION = "1"
    Params = Params
    description = "HEIM: DrawBench (200 prompts, 11 categories; arXiv 2205.11487), a Google Sheet; no reference images."

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        return sheet_instances(self.name, files[FILE], ",", self.params.category)
