"""CivilComments, WILDS version (Borkan et al., 2019; Koh et al., 2021): is a comment toxic? As HELM Classic
runs it (``civil_comments_scenario.py``): all comments, or one of the eight WILDS demographics.

The source is HELM's: WILDS' ``all_data_with_identities.csv`` on CodaLab (bundle ``0x8cd3de06…``), read
as pandas reads it with ``index_col=0`` (HELM's call): the first column is the index, pandas' default NA
strings (empty, ``NA``, ``nan``, ``null``…) are missing values. A demographic keeps the rows whose identity
column is at least 0.5 (a missing value never is). Each row is an instance in file order, ids ``id<i>``, its
split the WILDS ``split`` column (``train``/``val``/``test`` → train/valid/test); the input is the comment
(``str`` of the cell: a missing comment reads ``nan``, as in HELM), a newline and the question
``Question: Is the passage above toxic?`` (HELM's ``PassageQuestionInput``); the reference is ``True`` when
``toxicity`` ≥ 0.5, else ``False``, and the sub-split ``toxic`` / ``non-toxic``. Generation
(``Passage:``/``Answer:``), five examples, 5 tokens, stop at a newline; quasi-exact match. CodaLab publishes
no checksum: the pin is recorded at first fetch.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.boolq import CLASSIC_METRICS, CLASSIC_WORDING
from helmflow.scenarios.helm_lite import generation_spec

URL = ("https://worksheets.codalab.org/rest/bundles/0x8cd3de0634154aeaad2ee6eb96723c6e/"
       "contents/blob/all_data_with_identities.csv")
FILENAME = "all_data_with_identities.csv"
DEMOGRAPHICS = ("male", "female", "LGBTQ", "christian", "muslim", "other_religions", "black", "white")
SPLITS: dict[str, Split] = {"train": "train", "val": "valid", "test": "test"}
QUESTION = "Is the passage above toxic?"  # the scenario's question, part of every instance (HELM's)
# pandas' default missing-value strings (read_csv's na_values), which HELM's read_csv applies
PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                       "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})


class CivilCommentsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    demographic: Literal["all", "male", "female", "LGBTQ", "christian", "muslim", "other_religions", "black", "white"]


def number(cell: str) -> float:
    """A numeric cell as pandas reads it: a missing value is NaN (every comparison with it is false)."""
    return math.nan if cell in PANDAS_NA else float(cell)


@scenario("civil_comments")
class CivilComments(Scenario[CivilCommentsParams]):
    VERSION = "1"
    SOURCE_REVISION = "codalab-0x8cd3de06"
    Params = CivilCommentsParams
    description = ("CivilComments (WILDS): is the comment toxic? All comments or one of eight demographics "
                   "(HELM Classic).")
    main_metric = "quasi_exact_match"
    metrics = [*CLASSIC_METRICS, "classification_f1"]
    helm_wording = CLASSIC_WORDING + "; the question after each comment is HELM's"
    helm_differences = ("civil_comments: WILDS' CSV is read from HELM's CodaLab bundle and pinned by its sha256 "
                        "(recorded at first fetch: CodaLab publishes none)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Passage: ", "Answer", 5, ["\n"])

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        try:
            text = read_source(self.name, url).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not UTF-8 text: {exc}") from None
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, [])
        demographic = self.params.demographic
        needed = ["comment_text", "toxicity", "split"] + ([] if demographic == "all" else [demographic])
        missing = [c for c in needed if c not in header[1:]]
        if missing:
            raise ScenarioError(f"scenario {self.name!r}: {url} has no column {missing[0]!r}; "
                                f"it has: {', '.join(header) or 'no columns'}")
        col = {name: header.index(name, 1) for name in needed}
        out: list[Instance] = []
        for number_, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number_}: {len(row)} fields, "
                                    f"expected {len(header)}")
            try:
                if demographic != "all" and not number(row[col[demographic]]) >= 0.5:
                    continue
                toxic = number(row[col["toxicity"]]) >= 0.5
            except ValueError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number_}: {exc}") from None
            split = SPLITS.get(row[col["split"]])
            if split is None:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number_}: split {row[col['split']]!r} "
                                    f"is not one of {', '.join(SPLITS)}")
            comment = row[col["comment_text"]]
            comment = "nan" if comment in PANDAS_NA else comment
            out.append(Instance(id=f"id{len(out)}", split=split,
                                input=Input(text=f"{comment}\nQuestion: {QUESTION}"),
                                references=[Reference(text="True" if toxic else "False", correct=True)],
                                sub_split="toxic" if toxic else "non-toxic"))
        return out
