"""TabFact (Chen et al., 2020) as ToRR runs it (unitxt's ``cards.tab_fact``): is a statement about a
Wikipedia table entailed or refuted? Scored by unitxt's ``accuracy`` on the label.

The card reads the Hub dataset ``wenhu/tab_fact`` (its Parquet conversion, config ``tab_fact``: splits
train, validation → valid, test), the first 10,000 rows of each (the recipe's ``loader_limit``). Each
row's ``table_text`` is ``#``-separated lines (header first, ``"`` quotes honoured, cells kept as they
are), the ``statement`` is the claim and ``label`` 0/1 is ``refuted``/``entailed``. Instance ids are the
split and the row's index (``test17``), as HELM's unitxt scenario numbers them. The table is augmented
and serialised by the entry's ``serialization`` and ``augmentation``; five in-context examples.

Data: unitxt loads the conversion's branch unpinned, so this scenario reads a mirror only
(``$HELMFLOW_MIRROR_TAB_FACT`` or ``$HELMFLOW_MIRROR``), pinned by sha256 at first use.
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import TABLES_VERSION, TableError, TableParams, parse_delimited

SPLITS = (("train", "train"), ("validation", "valid"), ("test", "test"))  # file split -> ours
LOADER_LIMIT = 10_000
LABELS = {0: "refuted", 1: "entailed"}
INSTRUCTIONS = ("Decide whether the statement is entailed or refuted by the table: answer with one word, refuted "
                "or entailed, and nothing else. Example inputs with their answers come first; answer the last input.")


@scenario("tab_fact")
class TabFact(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    HUB_REPO = "wenhu/tab_fact"
    HUB_REVISION = UNPINNED  # unitxt reads refs/convert/parquet unpinned: runs from a mirror only
    Params = TableParams
    description = "TabFact: is a statement about a table entailed or refuted? (ToRR's serialisations and variants)"
    main_metric = "accuracy"
    metrics = ["accuracy", "exact_match", "efficiency"]
    default_adapter = generation_spec("", "Answer", 512, [], instructions=INSTRUCTIONS, max_train_instances=5)
    helm_wording = ("the Table:/Statement: layout and five in-context examples follow the unitxt card's template; "
                    "the instructions are helmflow's own sentences and an Answer: label precedes each label; the "
                    "examples are drawn by HELM's seeded class-balanced draw, not unitxt's demo sampler")

    helm_differences = ("tab_fact: unitxt reads wenhu/tab_fact's Parquet conversion unpinned; here it is read from a "
                        "mirror only, pinned by each file's sha256 at first use",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.parquet", url=self.hub_url(f"tab_fact/{split}/0000.parquet"))
                for split, _ in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, ours in SPLITS:
            url = files[f"{split}.parquet"]
            rows = read_parquet_source(self.name, url, {"table_text": "string", "statement": "string",
                                                        "label": "integer"}).to_pylist()[:LOADER_LIMIT]
            for k, row in enumerate(rows):
                if row["label"] not in LABELS:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {k}: label {row['label']!r} is not 0 or 1")
                try:
                    table = self.params.render(parse_delimited(row["table_text"], "#"))
                except (TableError, IndexError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {k}: {exc}") from None
                out.append(Instance(id=f"{split}{k}", split=ours,
                                    input=Input(text=f"Table: {table}\nStatement: {row['statement']}"),
                                    references=[Reference(text=LABELS[row["label"]], correct=True)]))
        return out
