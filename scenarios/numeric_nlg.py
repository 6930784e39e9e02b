"""numericNLG (Suadaa et al., 2021) as ToRR runs it (unitxt's ``cards.numeric_nlg``): describe a numeric
table from a scientific paper, given its caption. Scored by unitxt's ``rougeL`` (Google's rouge-score, no
stemmer), the card's template lower-casing the output.

The card reads the Hub dataset ``kasnerz/numericnlg`` (splits train, validation → valid, test), the first
10,000 rows of each (the recipe's ``loader_limit``). ``table_html_clean`` is an HTML table read as the card's
``MapHTMLTableToJSON`` reads it (BeautifulSoup's ``html.parser``: the header is the ``<th>`` texts of
``<thead>``, each ``<tbody>`` row the ``<td>`` texts of its ``<tr>``); ``caption`` is the second input and
``description`` the reference. Instance ids are the split and the row's index (``test17``), as HELM's unitxt
scenario numbers the split unitxt hands it. The table is augmented and serialised by the entry's
``serialization`` and ``augmentation``; five in-context examples.

Data: unitxt loads the dataset's main branch unpinned, so this scenario reads a mirror only
(``$HELMFLOW_MIRROR_NUMERIC_NLG`` or ``$HELMFLOW_MIRROR``), one Parquet file per split (the Hub's
``data/<split>-00000-of-00001-<hash>.parquet``, saved as ``<split>.parquet``), pinned by sha256 at first use.
"""

from __future__ import annotations

from typing import Any

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import (
    HUB_SPLITS,
    LOADER_LIMIT,
    TABLES_VERSION,
    Table,
    TableError,
    TableParams,
    hub_split_sources,
)

INSTRUCTIONS = ("Write the description of the table, as the paper it comes from would, using its caption. "
                "Example inputs with their descriptions come first; describe the last input.")


def html_table(html: str) -> Table:
    """unitxt's ``MapHTMLTableToJSON``: ``<thead>``'s ``<th>`` texts, then each ``<tbody>`` row's ``<td>`` texts."""
    try:
        from bs4 import BeautifulSoup
    except ImportError:
        raise TableError("reading HTML tables needs beautifulsoup4: pip install -e '.[torr]'") from None

    soup = BeautifulSoup(html, "html.parser")
    head: Any = soup.find("thead")
    body: Any = soup.find("tbody")
    if head is None or body is None:
        raise TableError("the HTML table needs a <thead> and a <tbody>")
    return {"header": [cell.get_text() for cell in head.find_all("th")],
            "rows": [[cell.get_text() for cell in row.find_all("td")] for row in body.find_all("tr")]}


@scenario("numeric_nlg")
class NumericNLG(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    HUB_REPO = "kasnerz/numericnlg"
    HUB_REVISION = UNPINNED  # unitxt reads the main branch unpinned: runs from a mirror only
    Params = TableParams
    description = "numericNLG: describe a numeric table given its caption (ToRR's serialisations and variants)"
    main_metric = "rougeL"
    metrics = ["rougeL", "rouge_l", "efficiency"]
    default_adapter = generation_spec("", "Description", 512, [], instructions=INSTRUCTIONS,
                                      max_train_instances=5)
    helm_wording = ("the Table:/Caption:/Description: layout and five in-context examples follow the unitxt "
                    "card's from_pair template; the instructions are helmflow's own sentences; the examples are "
                    "drawn by HELM's seeded draw, not unitxt's demo sampler")
    helm_differences = ("numeric_nlg: unitxt reads kasnerz/numericnlg's main branch unpinned; here it is read from a "
                        "mirror only, pinned by each file's sha256 at first use",)

    def sources(self) -> list[DataSource]:
        return hub_split_sources(self)

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, ours in HUB_SPLITS:
            url = files[f"{split}.parquet"]
            rows = read_parquet_source(self.name, url, {"table_html_clean": "string", "caption": "string",
                                                        "description": "string"})
            for k, row in enumerate(rows.to_pylist()[:LOADER_LIMIT]):
                try:
                    table = self.params.render(html_table(row["table_html_clean"]))
                except (TableError, IndexError, TypeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {k}: {exc}") from None
                out.append(Instance(id=f"{split}{k}", split=ours,
                                    input=Input(text=f"Table: {table}\nCaption: {row['caption']}"),
                                    references=[Reference(text=row["description"], correct=True)]))
        return out
