"""QTSumm (Zhao et al., 2023) as ToRR runs it (unitxt's ``cards.qtsumm``): a paragraph answering a user's query
over a Wikipedia table. Scored by unitxt's ``rougeL`` (``metrics.rouge``, the first of the card's metrics:
Google's rouge-score, no stemmer; its tokenizer lower-cases, so the template's lack of ``lower_case`` changes
nothing).

The card reads the Hub dataset ``yale-nlp/QTSumm`` (gated), three JSON files (``qtsumm_train.json``,
``qtsumm_dev.json`` → validation → valid, ``qtsumm_test.json``), the first 10,000 items of each (the recipe's
``loader_limit``). Each item's ``table`` is already a table (``title``, ``table_id``, ``header``, ``rows``), used
as it is: its ``title`` and ``table_id`` stay in the dict the row and column shuffles are seeded from (as in
unitxt) but no serialisation writes them. ``query`` is the question and ``summary`` the one reference. Instance
ids are the split and the item's index (``test17``), as HELM's unitxt scenario numbers the split unitxt hands
it. The table is augmented and serialised by the entry's ``serialization`` and ``augmentation``; five
in-context examples.

Data: gated and read by unitxt unpinned, so this scenario reads a mirror only (``$HELMFLOW_MIRROR_QTSUMM`` or
``$HELMFLOW_MIRROR``), each file pinned by sha256 at first use.
"""

from __future__ import annotations

import json

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_source
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import TABLES_VERSION, TableError, TableParams

# the Hub's file, the card's split (in instance ids), our split
SPLITS = (("qtsumm_train.json", "train", "train"), ("qtsumm_dev.json", "validation", "valid"),
          ("qtsumm_test.json", "test", "test"))
LOADER_LIMIT = 10_000
GATED = "yale-nlp/QTSumm is gated on the Hugging Face Hub: accept its conditions there and download the file"
INSTRUCTIONS = ("Answer the query about the table with a paragraph that summarises what the table says about it. "
                "Example inputs with their answers come first; answer the last input.")


def json_items(text: str) -> list:
    """A JSON array, or JSON lines (one item a line), as the Hub's JSON loader reads either."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = json.loads(stripped)
        if not isinstance(items, list):
            raise ValueError("not a list of items")
        return items
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@scenario("qtsumm")
class QTSumm(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    HUB_REPO = "yale-nlp/QTSumm"
    HUB_REVISION = UNPINNED  # gated, and unitxt reads the main branch unpinned: runs from a mirror only
    Params = TableParams
    description = "QTSumm: a paragraph answering a query over a table (ToRR's serialisations and variants)"
    main_metric = "rougeL"
    metrics = ["rougeL", "rouge_l", "efficiency"]
    default_adapter = generation_spec("", "Answer", 512, [], instructions=INSTRUCTIONS, max_train_instances=5)
    helm_wording = ("the Table:/Query:/Answer: layout and five in-context examples follow the unitxt card's qtsumm "
                    "template; the instructions are helmflow's own sentences; the examples are drawn by HELM's "
                    "seeded draw, not unitxt's demo sampler")
    helm_differences = ("qtsumm: unitxt reads the gated yale-nlp/QTSumm unpinned; here it is read from a mirror only, "
                        "pinned by each file's sha256 at first use",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(name), gated=GATED) for name, _, _ in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, named, ours in SPLITS:
            url = files[name]
            try:
                items = json_items(read_source(self.name, url).decode("utf-8"))
            except ValueError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
            for k, item in enumerate(items[:LOADER_LIMIT]):
                try:
                    table = self.params.render(item["table"])
                    query, summary = item["query"], item["summary"]
                except (KeyError, IndexError, TypeError, AttributeError, TableError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} item {k}: not a QTSumm item "
                                        f"({type(exc).__name__}: {exc})") from None
                out.append(Instance(id=f"{named}{k}", split=ours, input=Input(text=f"Table: {table}\nQuery: {query}"),
                                    references=[Reference(text=summary, correct=True)]))
        return out
