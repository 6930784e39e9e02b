"""SUMO web claims (Mishra et al., 2020), climate subset: write an article's title, as HELM's Enterprise board
runs it (``sumosum_scenario.py``).

The source is ``climate_claims_raw.xlsx`` of GitHub ``rahulOmishra/SUMO`` (HELM reads branch main,
unpinned), read as ``pandas.read_excel(path, skiprows=1)`` reads it: the second row is the header
(``Claim_id, Claim, Title, Doc_text, Label``). HELM keeps rows with a ``Title`` and a ``Doc_text``,
removes Excel's ``_x000D_`` carriage-return escapes from every text cell, puts a seeded 20% in train
(``DataFrame.sample(frac=0.2, random_state=0)``) and the rest, shuffled with the same seed, in test. Its run
spec keeps test articles of 100 to 3,700 whitespace words; article and title have their whitespace runs
made single spaces. Generation (``Title:``, no in-context examples, 100 tokens, stop at a blank line),
scored by ROUGE-1, ROUGE-2 and ROUGE-L (the main metric). Needs the ``enterprise`` extra (openpyxl).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import pandas_sample_split, read_xlsx_rows
from helmflow.scenarios.helm_lite import generation_spec

XLSX_URL = "https://github.com/rahulOmishra/SUMO/raw/main/climate_claims_raw.xlsx"
TITLE, DOCUMENT = "Title", "Doc_text"
TRAIN_RATIO, SEED = 0.2, 0
# our wording of HELM's instructions
INSTRUCTIONS = "Write the title of the article below."


class SumoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # HELM's run spec: a too-short article could be garbage, a too-long one does not fit a prompt
    train_filter_min_length: int | None = Field(None, ge=0)
    train_filter_max_length: int | None = Field(None, ge=0)
    test_filter_min_length: int | None = Field(100, ge=0)
    test_filter_max_length: int | None = Field(3700, ge=0)
    truncate_length: int | None = Field(None, ge=1)


def clean(text: str, max_length: int | None = None) -> str:
    """HELM's ``_clean_and_truncate``: whitespace-separated words joined by one space, at most ``max_length``."""
    return " ".join(text.split()[:max_length])


def _unescape(value: Any) -> Any:
    return value.replace("_x000D_", "") if isinstance(value, str) else value


@scenario("sumosum")
class SUMOSum(Scenario[SumoParams]):
    VERSION = "1"
    SOURCE_REVISION = "main"
    Params = SumoParams
    description = "SUMO climate claims: write a web article's title (HELM Enterprise)."
    main_metric = "rouge_l"
    metrics = ["rouge_1", "rouge_2", "rouge_l", "efficiency"]
    default_adapter = generation_spec("", "Title", 100, ["\n\n"], instructions=INSTRUCTIONS, max_train_instances=0)
    helm_wording = ("the unlabelled article, Title:, 100 tokens, the blank-line stop and no in-context examples "
                    "follow HELM's run spec; the instructions are helmflow's own sentence")
    helm_differences = ("sumosum: climate_claims_raw.xlsx is read from branch main as HELM does (unpinned "
                        "upstream), pinned by its sha256 at first fetch",)
    pin_unverified = "HELM reads branch main of rahulOmishra/SUMO, which can move"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="climate_claims_raw.xlsx", url=self.web_url(XLSX_URL), sha256_unknown=True)]

    def _kept(self, split: str, words: int) -> bool:
        p = self.params
        low, high = ((p.test_filter_min_length, p.test_filter_max_length) if split == "test"
                     else (p.train_filter_min_length, p.train_filter_max_length))
        return not ((high and words > high) or (low and words < low))

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["climate_claims_raw.xlsx"]
        header, rows = read_xlsx_rows(self.name, url, skip_rows=1)
        for column in (TITLE, DOCUMENT):
            if column not in header:
                raise ScenarioError(f"scenario {self.name!r}: {url} has no column {column!r} in its second row; "
                                    f"it has: {', '.join(h for h in header if h) or 'no columns'}")
        rows = [{k: _unescape(v) for k, v in row.items()} for row in rows
                if row.get(TITLE) is not None and row.get(DOCUMENT) is not None]
        train, test = pandas_sample_split(len(rows), TRAIN_RATIO, SEED)
        out: list[Instance] = []
        for split, order in (("train", train), ("test", test)):
            for position in order:
                document, title = rows[position][DOCUMENT], rows[position][TITLE]
                if not isinstance(document, str) or not isinstance(title, str):
                    raise ScenarioError(f"scenario {self.name!r}: {url}: data row {position}: "
                                        f"{TITLE} and {DOCUMENT} must be text")
                if not self._kept(split, len(document.split())):
                    continue
                out.append(Instance(id=f"id{len(out)}", split=split,
                                    input=Input(text=clean(document, self.params.truncate_length)),
                                    references=[Reference(text=clean(title), correct=True)]))
        return out
