"""TwitterAAE (Blodgett et al., 2016): language modelling of tweets by speaker dialect, as HELM Classic runs it
(``twitter_aae_scenario.py``, run entries ``twitter_aae:demographic=aa`` and ``=white``, a targeted language
evaluation).

The source is HELM's: ``<demographic>_tweets.csv`` of CodaLab bundle ``0x31485f8c…`` (50,000 tweets each, drawn by
HELM from the corpus's most AA-aligned and most White-aligned tweets). HELM opens it as text (universal newlines:
``\\r\\n`` and ``\\r`` read as ``\\n``) and takes the first field of every CSV row, with no header, as one test
instance, in file order (ids ``id<i>``); no references. HELM's ``language_modeling`` adapter echoes each tweet in
windows of the model's context and ``bits_per_byte`` scores it (lower is better). Needs a deployment that returns
the prompt's logprobs (``echo``). CodaLab publishes no checksum: the pin is recorded at first fetch.
"""

from __future__ import annotations

import csv
import io
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source

URL = "https://worksheets.codalab.org/rest/bundles/0x31485f8c37ad481fb9f4e9bf7ccff6e5/contents/blob/{demographic}_tweets.csv"


class TwitterAAEParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    demographic: Literal["aa", "white"] = "aa"


def language_modeling_spec() -> AdapterSpec:
    """HELM's ``get_language_modeling_adapter_spec``: the text alone, nothing generated, no examples."""
    return AdapterSpec(method="language_modeling", instructions="", input_prefix="", input_suffix="",
                       output_prefix="", output_suffix="", max_train_instances=0)


@scenario("twitter_aae")
class TwitterAAE(Scenario[TwitterAAEParams]):
    VERSION = "1"
    SOURCE_REVISION = "codalab-0x31485f8c"
    Params = TwitterAAEParams
    description = ("TwitterAAE: bits per byte on tweets of African-American-aligned or White-aligned English "
                   "(HELM Classic's targeted language evaluation).")
    main_metric = "bits_per_byte"
    metrics = ["bits_per_byte", "efficiency"]
    helm_wording = "HELM's language_modeling adapter: each tweet alone, echoed, nothing added"
    helm_differences = ("twitter_aae: the tweets are read from HELM's CodaLab bundle and pinned by their sha256 "
                        "(recorded at first fetch: CodaLab publishes none)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return language_modeling_spec()

    @property
    def filename(self) -> str:
        return f"{self.params.demographic}_tweets.csv"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.web_url(URL.format(demographic=self.params.demographic)),
                           sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.filename]
        try:
            text = read_source(self.name, url).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not UTF-8 text: {exc}") from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # Python's universal newlines, as HELM's open()
        out: list[Instance] = []
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not row:
                raise ScenarioError(f"scenario {self.name!r}: {url} row {number} is empty (HELM reads row[0] of "
                                    f"every row and would fail on it)")
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row[0])))
        return out
