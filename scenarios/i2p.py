"""I2P, Inappropriate Image Prompts (HEIM toxicity; Schramowski et al., arXiv 2211.05105): real text-to-image
prompts from lexica.art likely to produce inappropriate images, in seven categories.

As HELM's ``I2PScenario``: the Hub dataset ``AIML-TUDA/i2p``, split train (its one file, ``i2p_benchmark.csv``),
read in file order; a row is kept when its ``prompt`` is not empty, it is one of the "hard" prompts
(``hard == 1``) and Perspective did not find the prompt itself toxic (``prompt_toxicity < 0.5``), and
``category`` occurs in its ``categories`` (HELM's substring test: ``illegal`` matches "illegal activity"), or
every such row with ``all``. The prompt is stripped of surrounding spaces. No references; ids ``id<n>`` count
the kept rows (HELM's ids). The CSV is read as HELM's ``load_dataset`` reads it through pandas: pandas' default
missing-value strings (empty, ``NA``, ``nan``, ``None``...) are missing; where HELM's filter would fail on a
row (a missing ``prompt_toxicity`` or ``categories`` it reaches), the load stops naming the row.

HELM loads the dataset unpinned (main); here the file is read from ``resolve/main`` and pinned by the sha256
recorded at first fetch (no revision of the repository could be read offline). The prompts are harmful by
design (``unsafe_text``).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource, ScenarioError, read_source
from helmflow.scenarios.text_to_image import CORE_METRICS, TextToImageScenario

REPO = "AIML-TUDA/i2p"
FILE = "i2p_benchmark.csv"
URL = f"https://huggingface.co/datasets/{REPO}/resolve/main/{FILE}"
#: HEIM's seven run entries' categories, in the conf's order
CATEGORIES = ("hate", "harassment", "violence", "self-harm", "sexual", "shocking", "illegal")
#: pandas.read_csv's default missing-value strings (what ``load_dataset`` reads as None)
PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                       "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
COLUMNS = ("prompt", "categories", "hard", "prompt_toxicity")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: Literal["all", "hate", "harassment", "violence", "self-harm", "sexual", "shocking", "illegal"] = "all"


@scenario("i2p")
class I2P(TextToImageScenario):
    VERSION = "1"
    SOURCE_REVISION = "main"  # the branch HELM reads unpinned (the mirror folder's name); pinned by sha256
    Params = Params
    description = ("HEIM: Inappropriate Image Prompts (I2P), real prompts likely to produce inappropriate images, "
                   "hard and not toxic by Perspective (toxicity); no reference images.")
    metrics = CORE_METRICS
    num_images = 8  # HELM's spec asks for 8 images per prompt here (4 elsewhere)
    unsafe_text = True  # prompts chosen to produce inappropriate images: a content warning, no text in exports
    pin_unverified = (f"HELM loads {REPO} unpinned; {FILE} is read from the repository's main branch, pinned by "
                      "its sha256 at first fetch (no commit of the repository could be read offline)")
    helm_differences = (f"i2p: HELM loads the Hub dataset {REPO} unpinned; here {FILE} is read from its main branch "
                        "and pinned by the sha256 recorded at first fetch (UNVERIFIED: no commit of the repository "
                        "could be read offline), as pandas reads it for HELM's load_dataset",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILE]
        try:
            text = read_source(self.name, url).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not UTF-8 text: {exc}") from None
        rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]  # pandas skips blank lines
        header = rows[0] if rows else []
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise ScenarioError(f"scenario {self.name!r}: {url} has no column {missing[0]!r}; "
                                f"it has: {', '.join(header) or 'no columns'}")
        at = {c: header.index(c) for c in COLUMNS}
        wanted = self.params.category
        out: list[Instance] = []
        for number, row in enumerate(rows[1:], start=1):
            if len(row) != len(header):
                raise ScenarioError(f"scenario {self.name!r}: {url} data row {number} has {len(row)} fields, "
                                    f"the header {len(header)}")
            cell = {c: (None if row[k] in PANDAS_NA else row[k]) for c, k in at.items()}
            prompt = cell["prompt"]
            # HELM's condition, evaluated left to right as Python does (a later test is reached only if needed)
            if not prompt or self._number(cell["hard"], "hard", url, number) != 1:
                continue
            toxicity = self._number(cell["prompt_toxicity"], "prompt_toxicity", url, number)
            if toxicity is None:
                raise ScenarioError(f"scenario {self.name!r}: {url} data row {number}: prompt_toxicity is missing "
                                    "(HELM's test prompt_toxicity < 0.5 fails on it)")
            if not toxicity < 0.5:
                continue
            if wanted != "all":
                if cell["categories"] is None:
                    raise ScenarioError(f"scenario {self.name!r}: {url} data row {number}: categories is missing "
                                        "(HELM's test of the category fails on it)")
                if wanted not in cell["categories"]:
                    continue
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=prompt.strip()),
                                extra={"categories": cell["categories"] or ""}))
        return out

    def _number(self, value: str | None, column: str, url: str, number: int) -> float | None:
        """A numeric cell as pandas reads it (missing is None; NaN compares false, as None does not)."""
        if value is None:
            return None
        try:
            parsed = float(value)
        except ValueError:
            raise ScenarioError(f"scenario {self.name!r}: {url} data row {number}: {column} {value!r} "
                                "is not a number") from None
        return None if math.isnan(parsed) else parsed
