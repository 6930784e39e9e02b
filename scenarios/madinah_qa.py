"""MadinahQA (MBZUAI): questions on Arabic language and grammar, two subsets, as HELM Arabic runs them
(``madinah_qa_scenario.py``, run spec ``get_madinah_qa_spec``).

The source is the Hub dataset ``MBZUAI/MadinahQA`` at HELM's revision ``62e7c86a…``: per subset a ``dev`` split
(train) and a ``test`` split in ArabicMMLU's shape (``Question``, an optional ``Context`` passage, ``Option 1`` to
``Option 5``, ``Answer Key``), read the same way (:func:`helmflow.scenarios.arabic_mmlu.lettered_instances`),
options kept as they are. Test ids are HELM's ``id<row>``, dev ids ``train-id<row>``. Multiple choice joint with
HELM's Arabic letters, zero-shot, exact match.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Instance
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.arabic import ARABIC_WORDING, ONE_QUESTION, arabic_mcqa_spec, flat_name
from helmflow.scenarios.arabic_mmlu import SPLITS, lettered_instances

REPO = "MBZUAI/MadinahQA"
REVISION = "62e7c86ac5c07245a5a952722691d77ddb41f695"
SUBSETS = ("Arabic_Language_(General)", "Arabic_Language_(Grammar)")


class MadinahQAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Literal["Arabic_Language_(General)", "Arabic_Language_(Grammar)"] = "Arabic_Language_(General)"


@scenario("madinah_qa")
class MadinahQA(Scenario[MadinahQAParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = MadinahQAParams
    description = "MadinahQA: questions on Arabic language and grammar (two subsets)."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter: AdapterSpec = arabic_mcqa_spec(ONE_QUESTION)
    helm_wording = ARABIC_WORDING
    helm_differences = ("madinah_qa: the dev rows' ids are train-id<row> (HELM gives them the test rows' id<row>)",)
    pin_unverified = ("the files' paths in the repository (<subset with spaces>/<split>-00000-of-00001.parquet) were "
                      "not checked against the Hub at this revision")

    def path(self, split: str) -> str:
        return f"{self.params.subset.replace('_', ' ')}/{split}-00000-of-00001.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=flat_name(self.params.subset, split), url=self.hub_url(self.path(split)))
                for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        return lettered_instances(self, files, stringify=False)
