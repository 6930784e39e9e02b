"""Data imputation (Mei et al., 2021): the missing cell of a structured row, as HELM Classic runs it
(``entity_data_imputation_scenario.py``, run entries ``dataset=Buy`` and ``=Restaurant`` at priority 2, a
targeted reasoning evaluation).

The sources are HELM's copies in its bucket: ``Abt-Buy.zip`` (``Buy.csv``: the manufacturer is imputed) and
``restaurant.tar.gz`` (Fodors-Zagat's ``fz.arff``: the city), unpacked as HELM unpacks them (an archive with one
top folder is read inside it). HELM's steps, kept: Buy drops its id column and the rows without a description
(other empty cells stay, read as NaN and shown as ``nan``); the ARFF file is read line by line (blank lines
skipped, ``@attribute`` lines name the columns, the lines after ``@data`` are CSV rows read by pandas), its
``class`` column dropped, ``"`` removed and cells stripped, then rows with an empty cell dropped. The splits are
pandas' ``sample``: 10% test (``random_state=1234``), 20% of the rest valid (the same seed), the rest train, each
in the order drawn. The input is ``col: value`` for every other column joined by ``. ``, then ``. <column>?``;
the reference the cell's text. HELM's generation adapter (``What is the missing value?``, ``Answer:``, five
examples); quasi-exact match. HELM's bucket publishes no checksums: the pins are recorded at first fetch.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.entity_matching import pandas_module, unpacked_members
from helmflow.scenarios.helm_lite import generation_spec

BASE_URL = "https://storage.googleapis.com/crfm-helm-public/source_datasets/scenarios/entity_data_imputation"
ARCHIVES = {"Buy": "Abt-Buy.zip", "Restaurant": "restaurant.tar.gz"}
TABLES = {"Buy": "Buy.csv", "Restaurant": "fz.arff"}
IMPUTED = {"Buy": "manufacturer", "Restaurant": "city"}


class DataImputationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset: Literal["Buy", "Restaurant"] = "Buy"
    seed: int = 1234


def arff_table(pd: Any, text: str) -> Any:
    """HELM's manual reading of ``fz.arff`` (pandas for the data lines), quote marks removed, NaN rows dropped."""
    columns: list[str] = []
    data: list[str] = []
    in_data = False
    for line in io.StringIO(text):  # HELM's ``for line in open(...)``: universal newlines, ends kept
        if len(line.strip()) <= 0:
            continue
        if in_data:
            data.append(line.strip())
        if line.startswith("@"):
            if line.startswith("@attribute"):
                _, name, _ = line.split(maxsplit=2)
                columns.append(name)
            if line.startswith("@data"):
                in_data = True
    table = pd.read_csv(io.StringIO("\n".join(data)), header=None, sep=",", names=columns)
    del table["class"]
    for column in table.columns:
        table[column] = table[column].str.replace('"', "").str.strip()
    return table.dropna()


def helm_splits(table: Any, seed: int) -> dict[Split, Any]:
    """HELM's ``get_splits``: test = sample(frac=0.1), valid = sample(frac=0.2) of the rest, train the rest."""
    test = table.sample(frac=0.1, random_state=seed)
    remaining = table.drop(test.index)
    valid = remaining.sample(frac=0.2, random_state=seed)
    return {"train": remaining.drop(valid.index), "valid": valid, "test": test}


@scenario("entity_data_imputation")
class EntityDataImputation(Scenario[DataImputationParams]):
    VERSION = "1"
    SOURCE_REVISION = "helm-bucket"
    Params = DataImputationParams
    description = ("Data imputation (Mei et al. 2021): the missing manufacturer of a Buy.com product or city of a "
                   "restaurant (HELM Classic's targeted reasoning evaluation; quasi-exact match).")
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "efficiency"]
    helm_wording = "HELM's generation adapter: What is the missing value?, the row, Answer:; five examples"
    helm_differences = ("entity_data_imputation: HELM's copies of Abt-Buy and the restaurants in its bucket, pinned "
                        "by their sha256 (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("", "Answer", 5, ["\n"], instructions="What is the missing value?")

    def sources(self) -> list[DataSource]:
        archive = ARCHIVES[self.params.dataset]
        return [DataSource(filename=archive, url=self.web_url(f"{BASE_URL}/{archive}"), sha256_unknown=True)]

    def _table_bytes(self, url: str) -> bytes:
        wanted = TABLES[self.params.dataset]
        data = read_source(self.name, url)
        try:
            if self.params.dataset == "Buy":
                with zipfile.ZipFile(io.BytesIO(data)) as z:
                    members = unpacked_members(z.namelist())
                    if wanted in members:
                        return z.read(members[wanted])
            else:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                    names = {m.name.removeprefix("./"): m for m in tar if m.isfile()}
                    members = unpacked_members(list(names))
                    handle = tar.extractfile(names[members[wanted]]) if wanted in members else None
                    if handle is not None:
                        return handle.read()
        except (zipfile.BadZipFile, tarfile.TarError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable archive: {exc}") from None
        raise ScenarioError(f"scenario {self.name!r}: {url} has no {wanted}")

    def load(self, files: dict[str, str]) -> list[Instance]:
        pd = pandas_module(self.name)
        dataset = self.params.dataset
        url = files[ARCHIVES[dataset]]
        raw = self._table_bytes(url)
        column = IMPUTED[dataset]
        try:
            if dataset == "Buy":
                table = pd.read_csv(io.BytesIO(raw))
                del table["id"]
                table = table[~table["description"].isna()]
            else:
                table = arff_table(pd, raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"))
            splits = helm_splits(table, self.params.seed)
            shown = [c for c in splits["train"].columns if c != column]
            out: list[Instance] = []
            for split, frame in splits.items():
                for _, row in frame.iterrows():
                    text = ". ".join(f"{c}: {row[c]}".strip() for c in shown) + f". {column}?"
                    out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=text),
                                        references=[Reference(text=str(row[column]), correct=True)]))
        except (KeyError, ValueError, AttributeError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url}: {TABLES[dataset]} is not in HELM's shape "
                                f"({type(exc).__name__}: {exc})") from None
        return out
