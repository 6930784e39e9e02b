"""Plain English summarization of contracts (Manor & Li, 2019), as HELM's Enterprise board runs it
(``legal_contract_summarization_scenario.py``): summarise a terms-of-service passage in plain English.

The source is ``all_v1.json`` of GitHub ``lauramanor/legal_summarization`` (HELM reads branch master,
unpinned): an object of records; HELM keeps those with ``original_text``, ``reference_summary`` and ``uid``
(pandas ``dropna``), puts a seeded 20% in train (``DataFrame.sample(frac=0.2, random_state=0)``) and the
rest, shuffled with the same seed, in test; runs of whitespace become one space; the id is ``uid``.
Generation (``Document:`` / ``Summary:``, 100 tokens, stop at a blank line, five examples), scored by
ROUGE-1, ROUGE-2 and ROUGE-L (the main metric).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import pandas_sample_split, read_source
from helmflow.scenarios.helm_lite import generation_spec

JSON_URL = "https://raw.githubusercontent.com/lauramanor/legal_summarization/master/all_v1.json"
TRAIN_RATIO, SEED = 0.2, 0
ARTICLE, SUMMARY, ID = "original_text", "reference_summary", "uid"
# our wording of HELM's instructions
INSTRUCTIONS = "Write a plain-English summary of the legal text."


def clean(text: str) -> str:
    """HELM's ``_clean``: every run of whitespace becomes one space (ends kept)."""
    return re.sub(r"\s+", " ", text)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def helm_rows(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(split, record) in HELM's order: records with all three fields, the seeded 20% train, then test."""
    records = [r for r in data.values()
               if isinstance(r, dict) and not any(_missing(r.get(k)) for k in (ARTICLE, SUMMARY, ID))]
    train, test = pandas_sample_split(len(records), TRAIN_RATIO, SEED)
    return [("train", records[i]) for i in train] + [("test", records[i]) for i in test]


@scenario("legal_contract_summarization")
class LegalContractSummarization(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "master"
    description = "Plain English summaries of contract passages (terms of service; HELM Enterprise)."
    main_metric = "rouge_l"
    metrics = ["rouge_1", "rouge_2", "rouge_l", "efficiency"]
    default_adapter = generation_spec("Document: ", "Summary", 100, ["\n\n"], instructions=INSTRUCTIONS)
    helm_wording = ("the Document:/Summary: layout, 100 tokens, the blank-line stop and five in-context examples "
                    "follow HELM's run spec; the instructions are helmflow's own sentence")
    helm_differences = ("legal_contract_summarization: all_v1.json is read from branch master as HELM does "
                        "(unpinned upstream), pinned by its sha256 at first fetch",)
    pin_unverified = "HELM reads branch master of lauramanor/legal_summarization, which can move"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="all_v1.json", url=self.web_url(JSON_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["all_v1.json"]
        try:
            data = json.loads(read_source(self.name, url))
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON object of records")
        out = []
        for split, record in helm_rows(data):
            article, summary = record[ARTICLE], record[SUMMARY]
            if not isinstance(article, str) or not isinstance(summary, str):
                raise ScenarioError(f"scenario {self.name!r}: {url}: record {record[ID]!r}: "
                                    f"{ARTICLE} and {SUMMARY} must be strings")
            out.append(Instance(id=str(record[ID]), split=split, input=Input(text=clean(article)),
                                references=[Reference(text=clean(summary), correct=True)]))
        return out
