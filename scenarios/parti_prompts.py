"""PartiPrompts (HEIM): 1,600 English prompts in 12 categories (arXiv 2206.10789), from one TSV.

As HELM's ``PartiPromptsScenario``: ``PartiPrompts.tsv`` from raw GitHub ``google-research/parti`` on
branch main (unpinned upstream: pinned here by the sha256 recorded at first fetch), the header skipped,
the prompt in the first column; ``category`` keeps the rows whose category starts with it (HELM's
prefix match: ``Food`` is "Food & Beverage"), or every row with ``all``. No reference images. Ids are
``id<row>``, the row of the file.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Instance
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource
from helmflow.scenarios.prompt_sheet import sheet_instances
from helmflow.scenarios.text_to_image import TextToImageScenario

URL = "https://raw.githubusercontent.com/google-research/parti/main/PartiPrompts.tsv"
FILE = "PartiPrompts.tsv"
#: the categories of HEIM's run entries (Abstract is commented out there)
CATEGORIES = ("Artifacts", "Food", "Vehicles", "Arts", "Indoor", "Outdoor", "Produce", "People", "Animals",
              "Illustrations", "World")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: str = "all"


@scenario("parti_prompts")
class PartiPrompts(TextToImageScenario):
    VERSION = "1"
    Params = Params
    description = "HEIM: PartiPrompts (1,600 prompts, 12 categories; arXiv 2206.10789), one TSV; no reference images."

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        return sheet_instances(self.name, files[FILE], "\t", self.params.category)
