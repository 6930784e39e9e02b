"""MBZUAI's human translation of MMLU into Arabic: MMLU's 57 subjects, one per run, as HELM Arabic runs them
(``mbzuai_human_translated_arabic_mmlu.py``, run spec ``get_arabic_mmlu_spec``'s sibling
``get_arabic_mmmlu_spec``).

The source is the Hub dataset ``MBZUAI/human_translated_arabic_mmlu`` at HELM's revision ``5ed7830f…``: per
subject a ``test`` split with ``question``, ``choices`` (a list) and ``answer`` (the correct choice's index). Ids
are HELM's ``id-<subject>-<row>``. No train split: the runs are zero-shot. Multiple choice joint with HELM's
Arabic letters (:mod:`helmflow.scenarios.arabic`), exact match.
"""

from __future__ import annotations

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.arabic import ARABIC_WORDING, ONE_QUESTION, arabic_mcqa_spec, hub_rows, text_cell
from helmflow.scenarios.mmlu import MMLUParams

REPO = "MBZUAI/human_translated_arabic_mmlu"
REVISION = "5ed7830fd678cfa6f2d7f0a1a13a4e1a1fa422ac"


@scenario("mbzuai_human_translated_arabic_mmlu")
class TranslatedArabicMMLU(Scenario[MMLUParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = MMLUParams  # MMLU's own: one of its 57 subjects
    description = "MMLU translated into Arabic by MBZUAI's human translators, one of the 57 subjects per run."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter: AdapterSpec = arabic_mcqa_spec(ONE_QUESTION)
    helm_wording = ARABIC_WORDING
    pin_unverified = ("the files' paths in the repository (<subject>/test-00000-of-00001.parquet) were not checked "
                      "against the Hub at this revision")

    @property
    def filename(self) -> str:
        return f"{self.params.subject}-test.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename,
                           url=self.hub_url(f"{self.params.subject}/test-00000-of-00001.parquet"))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.filename]
        _, rows = hub_rows(self.name, url, ["question", "choices", "answer"])
        out: list[Instance] = []
        for number, row in enumerate(rows):
            where = f"{url} row {number}"
            choices, answer = row["choices"], row["answer"]
            if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices) \
                    or not isinstance(answer, int) or not 0 <= answer < len(choices):
                raise ScenarioError(f"scenario {self.name!r}: {where}: expected a list of choices and the index of "
                                    f"the correct one, got {choices!r} and {answer!r}")
            out.append(Instance(id=f"id-{self.params.subject}-{number}", split="test",
                                input=Input(text=text_cell(self.name, where, row, "question")),
                                references=[Reference(text=c, correct=i == answer) for i, c in enumerate(choices)]))
        return out
