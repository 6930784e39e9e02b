"""FinQA (Chen et al., 2021) as ToRR runs it (unitxt's ``cards.fin_qa``): write the program, in FinQA's small
DSL, that answers a question over a financial report's text and table. Scored by unitxt's ``FinQAEval``
``program_accuracy`` (:func:`helmflow.metrics.fin_qa.unitxt_program_accuracy`).

HELM's Finance board runs FinQA too (the ``fin_qa`` scenario); ToRR's card reads it differently:

- the same JSON files at the same FinQA commit, but all three splits (``dev.json`` → valid, ids
  ``validation<k>``);
- only the **first** sentence of ``pre_text`` and of ``post_text`` (the card copies ``pre_text/0`` and
  ``post_text/0``);
- items whose ``table`` has one row or none are dropped (``table_length > 1``), and the table is
  ``{"header": table[0], "rows": table[1:]}`` (``MapTableListsToStdTableJSON``), augmented and serialised by the
  entry's ``serialization`` and ``augmentation``;
- the reference is ``str(qa.program)``; the first 10,000 items of each file (the recipe's ``loader_limit``);
  five in-context examples. Instance ids are the split and the item's index after the filter (``test17``),
  as HELM's unitxt scenario numbers the split unitxt hands it.

Data: the files are pinned by FinQA's commit (and by sha256 at first fetch); ``$HELMFLOW_MIRROR`` replaces them.
"""

from __future__ import annotations

import json

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.fin_qa import COMMIT, INSTRUCTIONS
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import TABLES_VERSION, TableError, TableParams

# FinQA's file, the card's split (in instance ids), our split
SPLITS = (("train", "train", "train"), ("dev", "validation", "valid"), ("test", "test", "test"))
LOADER_LIMIT = 10_000


def torr_fields(row: dict) -> tuple[str, list[list[str]], str, str, str] | None:
    """(first pre-table sentence, table, first post-table sentence, question, program) as the card copies
    them, or None for an item the card's ``table_length > 1`` filter drops (``pre_text`` is read first)."""
    pre = row["pre_text"][0]
    table = row["table"]
    if not isinstance(table, list) or len(table) <= 1:
        return None
    return pre, table, row["post_text"][0], row["qa"]["question"], str(row["qa"]["program"])


@scenario("torr_fin_qa")
class TorrFinQA(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    GIT_REPO = "czyssrs/FinQA"
    GIT_COMMIT = COMMIT  # the card's pinned commit, HELM Finance's too
    Params = TableParams
    description = "FinQA: the DSL program answering a question over a financial table (ToRR's table variants)"
    main_metric = "program_accuracy"
    metrics = ["program_accuracy_unitxt", "efficiency"]
    default_adapter = generation_spec("", "Program", 512, [], instructions=INSTRUCTIONS, max_train_instances=5)
    helm_wording = ("the Pre-table text:/Table:/Post-table text:/Question:/Program: layout and five in-context "
                    "examples follow the unitxt card's template; the instructions are helmflow's own sentences (the "
                    "fin_qa scenario's); the examples are drawn by HELM's seeded draw, not unitxt's demo sampler")
    helm_differences = ("fin_qa: unitxt's execution_accuracy is not computed (its fallback evaluates the model's text "
                        "as Python); program_accuracy, the main metric, is unitxt's, its prediction-first argument "
                        "order included",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.json", url=self.git_url(f"dataset/{split}.json"), sha256_unknown=True)
                for split, _, _ in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, named, ours in SPLITS:
            url = files[f"{split}.json"]
            try:
                rows = json.loads(read_source(self.name, url))
            except ValueError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
            if not isinstance(rows, list):
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a list of FinQA items")
            kept = 0
            for k, row in enumerate(rows[:LOADER_LIMIT]):
                try:
                    fields = torr_fields(row)
                    if fields is None:
                        continue
                    pre, table, post, question, program = fields
                    rendered = self.params.render({"header": table[0], "rows": table[1:]})
                except (KeyError, IndexError, TypeError, TableError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} item {k}: not a FinQA item as the card "
                                        f"reads it ({type(exc).__name__}: {exc})") from None
                text = f"Pre-table text: {pre}\nTable: {rendered}\nPost-table text: {post}\nQuestion: {question}"
                out.append(Instance(id=f"{named}{kept}", split=ours, input=Input(text=text),
                                    references=[Reference(text=program, correct=True)]))
                kept += 1
        return out
