"""AraTrust (Alghamdi et al., 2024): human-written Arabic questions on trustworthiness (truthfulness, ethics,
privacy, offensive language, physical and mental health, unfairness, illegal activities), as HELM Arabic runs
them (``aratrust_scenario.py``, run spec ``get_aratrust_spec``).

The source is the Hub dataset ``asas-ai/AraTrust`` at HELM's revision ``d4dd124e…``, split test: ``Question``,
options ``A`` to ``C`` written with their own Arabic letter (``أ)``, ``ب)``, ``ج)``), ``Answer`` (that letter) and
``Category``. HELM's clean-up, reproduced: empty options are left out (one question has two), each option must
start with its letter and ``)`` and loses them and the spaces around, and an answer written with a bare ALEF
(``ا``) means ``أ``. ``category`` is one of :data:`CATEGORIES` with ``_`` for spaces, or ``all``; ids ``id<row>``
count every row before the category filter (HELM's). Multiple choice joint with HELM's Arabic letters, zero-shot,
exact match.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.arabic import ARABIC_WORDING, QUESTIONS, arabic_mcqa_spec, hub_rows, text_cell

REPO = "asas-ai/AraTrust"
REVISION = "d4dd124ed5b90aeb65a7dda7d88e34fb464a31ec"
CATEGORIES = ("Ethics", "Illegal", "Mental_Health", "Offensive", "Physical_Health", "Privacy", "Trustfulness",
              "Unfairness")
KEYS = ("A", "B", "C")
PREFIXES = ("أ", "ب", "ج")  # HELM's OPTION_PREFIX_CHARACTERS, each followed by ")"
PATH = "data/test-00000-of-00001.parquet"


class AraTrustParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: Literal["all", "Ethics", "Illegal", "Mental_Health", "Offensive", "Physical_Health", "Privacy",
                      "Trustfulness", "Unfairness"] = "all"


@scenario("aratrust")
class AraTrust(Scenario[AraTrustParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = AraTrustParams
    description = "AraTrust: human-written Arabic questions on trustworthiness, one category per run."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter: AdapterSpec = arabic_mcqa_spec(QUESTIONS)
    helm_wording = ARABIC_WORDING
    pin_unverified = f"the file's path in the repository ({PATH}) was not checked against the Hub at this revision"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="test.parquet", url=self.hub_url(PATH))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["test.parquet"]
        wanted = self.params.category.replace("_", " ")
        _, rows = hub_rows(self.name, url, ["Question", "Answer", "Category", *KEYS])
        out: list[Instance] = []
        for number, row in enumerate(rows):
            where = f"{url} row {number}"
            if wanted != "all" and row["Category"] != wanted:
                continue
            raw = [row[k] for k in KEYS if row[k]]
            options = []
            for index, text in enumerate(raw):
                if not isinstance(text, str) or not text.strip().startswith(f"{PREFIXES[index]})"):
                    raise ScenarioError(f"scenario {self.name!r}: {where}: option {index + 1} {text!r} does not "
                                        f"start with {PREFIXES[index]})")
                options.append(text.split(")", 1)[1].strip())
            answer = text_cell(self.name, where, row, "Answer").strip()
            answer = "أ" if answer == "ا" else answer
            out.append(Instance(id=f"id{number}", split="test",
                                input=Input(text=text_cell(self.name, where, row, "Question")),
                                references=[Reference(text=t, correct=PREFIXES[i] == answer)
                                            for i, t in enumerate(options)]))
        return out
