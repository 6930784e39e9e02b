"""SciGen (Moosavi et al., 2021) as ToRR runs it (unitxt's ``cards.scigen``): describe a table from a
scientific paper, given its caption. Scored by unitxt's ``rougeL`` (Google's rouge-score, no stemmer).

The card reads the Hub dataset ``kasnerz/scigen`` (splits train, validation → valid, test), the first
10,000 rows of each (the recipe's ``loader_limit``), and drops rows whose ``table_content_values`` is
``"[]"``. ``table_column_names`` is a Python literal list (the header) and ``table_content_values`` a
list of rows, both read with :func:`ast.literal_eval` as the card's ``ConstructTableFromRowsCols`` does
(a literal, never code). ``table_caption`` is the second input and ``text`` the reference. Instance ids
are the split and the row's index after the filter (``test17``), as HELM's unitxt scenario numbers the
split unitxt hands it. The table is augmented and serialised by the entry's ``serialization`` and
``augmentation``; five in-context examples.

Data: unitxt loads the dataset's main branch unpinned, so this scenario reads a mirror only
(``$HELMFLOW_MIRROR_SCIGEN`` or ``$HELMFLOW_MIRROR``), one Parquet file per split, pinned by sha256 at
first use.
"""

from __future__ import annotations

import ast

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import (
    HUB_SPLITS,
    LOADER_LIMIT,
    TABLES_VERSION,
    TableError,
    TableParams,
    hub_split_sources,
)

EMPTY = "[]"  # the card's filter_by_condition: table_content_values != "[]"
INSTRUCTIONS = ("Write the text that describes the table, as the paper it comes from would, using its caption. "
                "Example inputs with their descriptions come first; describe the last input.")


@scenario("scigen")
class SciGen(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    HUB_REPO = "kasnerz/scigen"
    HUB_REVISION = UNPINNED  # unitxt reads the main branch unpinned: runs from a mirror only
    Params = TableParams
    description = "SciGen: describe a scientific table given its caption (ToRR's serialisations and variants)"
    main_metric = "rougeL"
    metrics = ["rougeL", "rouge_l", "efficiency"]
    default_adapter = generation_spec("", "Text description", 512, [], instructions=INSTRUCTIONS,
                                      max_train_instances=5)
    helm_wording = ("the Table:/Caption:/Text description: layout and five in-context examples follow the unitxt "
                    "card's from_pair template; the instructions are helmflow's own sentences; the examples are "
                    "drawn by HELM's seeded draw, not unitxt's demo sampler")
    helm_differences = ("scigen: unitxt reads kasnerz/scigen's main branch unpinned; here it is read from a mirror "
                        "only, pinned by each file's sha256 at first use",)

    def sources(self) -> list[DataSource]:
        return hub_split_sources(self)

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, ours in HUB_SPLITS:
            url = files[f"{split}.parquet"]
            rows = read_parquet_source(self.name, url, {"table_caption": "string", "table_column_names": "string",
                                                        "table_content_values": "string", "text": "string"})
            kept = [r for r in rows.to_pylist()[:LOADER_LIMIT] if r["table_content_values"] != EMPTY]
            for k, row in enumerate(kept):
                try:
                    header, body = ast.literal_eval(row["table_column_names"]), ast.literal_eval(
                        row["table_content_values"])
                    if not isinstance(header, list) or not all(isinstance(r, list) for r in body):
                        raise TableError("the header must be a list and the values a list of rows")
                    table = self.params.render({"header": header, "rows": body})
                except (TableError, ValueError, SyntaxError, TypeError, RecursionError, MemoryError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {k}: {exc}") from None
                out.append(Instance(id=f"{split}{k}", split=ours,
                                    input=Input(text=f"Table: {table}\nCaption: {row['table_caption']}"),
                                    references=[Reference(text=row["text"], correct=True)]))
        return out
