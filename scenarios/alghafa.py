"""AlGhafa (Almazrouei et al., 2023): native Arabic multiple-choice tasks built from public Arabic NLP datasets,
one subset per run, as HELM Arabic runs them (``alghafa_scenario.py``, run spec ``get_alghafa_spec``).

The source is the Hub dataset ``OALL/AlGhafa-Arabic-LLM-Benchmark-Native`` at HELM's revision ``a31ebd34…``:
per subset a ``validation`` split (train, the in-context pool) and a ``test`` split, with a ``query``, options
``sol1`` to ``solN`` (N differs between subsets: HELM reads the ``sol`` columns the file has, in order) and a
zero-based ``label``. Ids are HELM's ``id<row>_<split>``. Multiple choice joint with HELM's Arabic letters,
zero-shot (:mod:`helmflow.scenarios.arabic`), exact match.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.arabic import ARABIC_WORDING, QUESTIONS, arabic_mcqa_spec, flat_name, hub_rows, text_cell

REPO = "OALL/AlGhafa-Arabic-LLM-Benchmark-Native"
REVISION = "a31ebd34ca311d7e0cfc6ad7f458b3435af280f5"
SUBSETS = ("mcq_exams_test_ar", "meta_ar_dialects", "meta_ar_msa", "multiple_choice_facts_truefalse_balanced_task",
           "multiple_choice_grounded_statement_soqal_task", "multiple_choice_grounded_statement_xglue_mlqa_task",
           "multiple_choice_rating_sentiment_no_neutral_task", "multiple_choice_rating_sentiment_task",
           "multiple_choice_sentiment_task")
Subset = Literal["mcq_exams_test_ar", "meta_ar_dialects", "meta_ar_msa",
                 "multiple_choice_facts_truefalse_balanced_task", "multiple_choice_grounded_statement_soqal_task",
                 "multiple_choice_grounded_statement_xglue_mlqa_task",
                 "multiple_choice_rating_sentiment_no_neutral_task", "multiple_choice_rating_sentiment_task",
                 "multiple_choice_sentiment_task"]
SPLITS = {"validation": "train", "test": "test"}  # HELM's HF_SPLIT_TO_HELM_SPLIT


class AlGhafaParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Subset = "mcq_exams_test_ar"


@scenario("alghafa")
class AlGhafa(Scenario[AlGhafaParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = AlGhafaParams
    description = "AlGhafa: native Arabic multiple-choice tasks from public NLP datasets, one subset per run."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter: AdapterSpec = arabic_mcqa_spec(QUESTIONS)
    helm_wording = ARABIC_WORDING
    pin_unverified = ("the files' paths in the repository (<subset>/<split>-00000-of-00001.parquet) were not checked "
                      "against the Hub at this revision")

    def path(self, split: str) -> str:
        return f"{self.params.subset}/{split}-00000-of-00001.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=flat_name(self.params.subset, split), url=self.hub_url(self.path(split)))
                for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, helm_split in SPLITS.items():
            url = files[flat_name(self.params.subset, split)]
            names, rows = hub_rows(self.name, url, ["query", "label"])
            options = [n for n in names if n.startswith("sol")]  # HELM: the row's sol<k> keys, in column order
            for number, row in enumerate(rows):
                where = f"{url} row {number}"
                try:
                    correct = int(row["label"]) + 1  # zero-based label; the columns count from sol1
                    indexes = [int(n.removeprefix("sol")) for n in options]
                except (TypeError, ValueError):
                    raise ScenarioError(f"scenario {self.name!r}: {where}: label {row['label']!r} or an option "
                                        "column is not a number") from None
                texts = [text_cell(self.name, where, row, n) for n in options]
                if correct not in indexes:
                    raise ScenarioError(f"scenario {self.name!r}: {where}: label {row['label']!r} names none of "
                                        f"its {len(options)} options")
                out.append(Instance(id=f"id{number}_{split}", split=helm_split,
                                    input=Input(text=text_cell(self.name, where, row, "query")),
                                    references=[Reference(text=t, correct=k == correct)
                                                for k, t in zip(indexes, texts, strict=True)]))
        return out
