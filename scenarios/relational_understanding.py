"""Relational understanding (HEIM reasoning; Conwell and Ullman, arXiv 2208.00005): 75 basic relation prompts,
15 relations (8 physical, 7 agentic) between two of 12 entities, such as "a monkey touching an iguana".

As HELM's ``RelationalUnderstandingScenario``: ``choice_data.csv`` from OSF (``osf.io/download/tb3a4``, unpinned
upstream: pinned here by the sha256 recorded at first fetch), read with Python's csv reader as HELM opens it
(text mode, so universal newlines); the header row is
skipped and each later row's second column is a prompt, kept the first time it occurs (the file repeats prompts),
in file order. No reference images; ids ``id<n>`` count the kept prompts (HELM's ids).
"""

from __future__ import annotations

from helmflow.records import Input, Instance
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource, ScenarioError
from helmflow.scenarios.text_to_image import TextToImageScenario, helm_csv_rows

URL = "https://osf.io/download/tb3a4"
FILE = "choice_data.csv"


@scenario("relational_understanding")
class RelationalUnderstanding(TextToImageScenario):
    VERSION = "1"
    SOURCE_REVISION = "osf-tb3a4"  # HELM's OSF file id (the mirror folder's name); pinned by sha256
    description = ("HEIM: relational understanding, 75 prompts of two entities in one of 15 physical or agentic "
                   "relations (reasoning); no reference images.")
    pin_unverified = "HELM's OSF download URL names no version of the file"
    helm_differences = ("relational_understanding: HELM's OSF file (osf.io/download/tb3a4, unpinned upstream) is "
                        "pinned by the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILE]
        out: list[Instance] = []
        seen: set[str] = set()
        for number, row in enumerate(helm_csv_rows(self.name, url)):
            if number == 0:
                continue  # the header
            if len(row) < 2:
                raise ScenarioError(f"scenario {self.name!r}: {url} row {number + 1} has no second column "
                                    "(the prompt)")
            if row[1] not in seen:
                seen.add(row[1])
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row[1])))
        return out
