"""Entity matching (Magellan's benchmark, Konda et al. 2016): do two product rows name the same entity? As HELM
Classic runs it (``entity_matching_scenario.py``, run entries ``dataset=Beer``, ``Abt_Buy`` and
``Dirty_iTunes_Amazon`` at priority 2, a targeted reasoning evaluation).

The source is HELM's: DeepMatcher's ``<dataset>_exp_data.zip`` from the University of Wisconsin's site, unpacked
as HELM unpacks it (an archive with one top folder is read inside it) to ``tableA.csv``, ``tableB.csv`` and the
pre-blocked pairs ``{train,valid,test}.csv`` (``ltable_id``, ``rtable_id``, ``label``). HELM's pandas steps, kept:
each split's pairs joined to table A then table B (an inner ``merge``; pandas 2 keeps the pairs' order,
as HELM 0.5.16 installs it); the train pairs cut to as many non-matches as matches, drawn by pandas' ``sample``
from the global numpy random state that HELM first sets to its pinned state for the dataset
(``entity_matching_scenario_fixed_random_state.json``, CodaLab bundle ``0x4d0a972e…``; ``seed(0)`` for a dataset
it lacks). A row is serialised ``col: value`` joined by ``. `` (pandas' text for each cell: ``nan``, ``4.5``); the
input ``Product A is <A>. Product B is <B>. Are A and B the same?``, the reference ``Yes`` or ``No``. HELM's
generation adapter (its instructions, ``Answer:``, five examples); quasi-exact match. Neither host publishes
checksums: the pins are recorded at first fetch.
"""

from __future__ import annotations

import io
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

BASE_URL = "http://pages.cs.wisc.edu/~anhai/data1/deepmatcher_data"
STATE_URL = "https://worksheets.codalab.org/rest/bundles/0x4d0a972e99c848d2ab3ecf129bb77d29/contents/blob/"
STATE = "entity_matching_scenario_fixed_random_state.json"
#: HELM's datasets and their folders on DeepMatcher's site
DATASETS = {
    "Beer": "Structured/Beer", "iTunes_Amazon": "Structured/iTunes-Amazon",
    "Fodors_Zagats": "Structured/Fodors-Zagats", "DBLP_ACM": "Structured/DBLP-ACM",
    "DBLP_GoogleScholar": "Structured/DBLP-GoogleScholar", "Amazon_Google": "Structured/Amazon-Google",
    "Walmart_Amazon": "Structured/Walmart-Amazon", "Abt_Buy": "Textual/Abt-Buy", "Company": "Textual/Company",
    "Dirty_iTunes_Amazon": "Dirty/iTunes-Amazon", "Dirty_DBLP_ACM": "Dirty/DBLP-ACM",
    "Dirty_DBLP_GoogleScholar": "Dirty/DBLP-GoogleScholar", "Dirty_Walmart_Amazon": "Dirty/Walmart-Amazon",
}
SPLITS: tuple[Split, ...] = ("train", "valid", "test")


class EntityMatchingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset: Literal["Beer", "iTunes_Amazon", "Fodors_Zagats", "DBLP_ACM", "DBLP_GoogleScholar", "Amazon_Google",
                     "Walmart_Amazon", "Abt_Buy", "Company", "Dirty_iTunes_Amazon", "Dirty_DBLP_ACM",
                     "Dirty_DBLP_GoogleScholar", "Dirty_Walmart_Amazon"] = "Beer"


def pandas_module(scenario: str) -> Any:
    try:
        import pandas
    except ModuleNotFoundError:
        raise ScenarioError(f"scenario {scenario!r} reads its tables with pandas, as HELM does: "
                            "pip install 'helmflow[classic]'") from None
    return pandas


def unpacked_members(names: list[str]) -> dict[str, str]:
    """HELM's ``ensure_file_downloaded(unpack=True)``: an archive whose top level is one folder is read inside it.
    Maps each file's path as HELM opens it to its member name."""
    files = [n for n in names if not n.endswith("/")]
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in files):
        (top,) = tops
        return {n.removeprefix(top + "/"): n for n in files}
    return {n: n for n in files}


def random_state(raw: Any) -> tuple:
    """HELM's reading of a pinned state: (name, 624 words as uint32, position, has_gauss, int(cached_gaussian))."""
    import numpy as np

    name, key, pos, has_gauss, cached = raw
    return str(name), np.array(key, dtype=np.uint32), int(pos), int(has_gauss), int(cached)


def serialize(row: Any, columns: dict[str, str]) -> str:
    """HELM's ``serialize_row``: ``<column>: <cell>`` stripped, joined by ``. ``."""
    return ". ".join(f"{name}: {row[column]}".strip() for column, name in columns.items())


@scenario("entity_matching")
class EntityMatching(Scenario[EntityMatchingParams]):
    VERSION = "1"
    SOURCE_REVISION = "deepmatcher-2018"
    Params = EntityMatchingParams
    description = ("Entity matching (Magellan/DeepMatcher): do two product rows refer to the same entity? (HELM "
                   "Classic's targeted reasoning evaluation; quasi-exact match of Yes or No).")
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "efficiency"]
    helm_wording = "HELM's generation adapter: its Yes-or-No instructions, the two rows, Answer:; five examples"
    helm_differences = ("entity_matching: DeepMatcher's zips and HELM's pinned random states (CodaLab), pinned by "
                        "their sha256 (recorded at first fetch); the pairs in the order of pandas 2's inner merge "
                        "(the pairs' file order), as HELM 0.5.16 installs it: HELM's 2022 runs, on pandas 1, grouped "
                        "them by row id, so a sample of Abt_Buy's 1,916 test pairs can differ",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("", "Answer", 5, ["\n"], instructions="Are Product A and Product B the same? Yes or No?")

    @property
    def archive(self) -> str:
        return f"{self.params.dataset.lower()}_exp_data.zip"

    def sources(self) -> list[DataSource]:
        url = f"{BASE_URL}/{DATASETS[self.params.dataset]}/{self.archive}"
        return [DataSource(filename=self.archive, url=self.web_url(url), sha256_unknown=True),
                DataSource(filename=STATE, url=self.web_url(STATE_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        import zipfile

        import numpy as np

        pd = pandas_module(self.name)
        url = files[self.archive]
        try:
            states = json.loads(read_source(self.name, files[STATE]))
            raw = states.get(self.params.dataset) if isinstance(states, dict) else None
            rng = np.random.RandomState(0)
            if raw is not None:
                rng.set_state(random_state(raw))
        except (ValueError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[STATE]} is not HELM's random states: {exc}") from None
        try:
            with zipfile.ZipFile(io.BytesIO(read_source(self.name, url))) as z:
                members = unpacked_members(z.namelist())
                tables = {}
                for name in ("tableA.csv", "tableB.csv", *(f"{s}.csv" for s in SPLITS)):
                    if name not in members:
                        raise ScenarioError(f"scenario {self.name!r}: {url} has no {name}")
                    tables[name] = pd.read_csv(io.BytesIO(z.read(members[name])))
        except (zipfile.BadZipFile, ValueError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not DeepMatcher's zip of CSV tables: "
                                f"{exc}") from None
        table_a, table_b = tables["tableA.csv"], tables["tableB.csv"]
        columns_a = {f"{c}_A": c for c in table_a.columns if c != "id"}
        columns_b = {f"{c}_B": c for c in table_b.columns if c != "id"}
        out: list[Instance] = []
        for split in SPLITS:
            labels = tables[f"{split}.csv"]
            try:
                merged = pd.merge(labels, table_a, right_on="id", left_on="ltable_id")
                merged = pd.merge(merged, table_b, right_on="id", left_on="rtable_id", suffixes=("_A", "_B"))
                if split == "train":  # as many non-matches as matches, for HELM's class-balanced examples
                    positives = int((merged["label"] == 1).sum())
                    if positives >= int((merged["label"] == 0).sum()):
                        raise ScenarioError(f"scenario {self.name!r}: {url}: train.csv has no more non-matches "
                                            "than matches (HELM asserts it does)")
                    merged = pd.concat([group.sample(positives, random_state=rng)
                                        for _, group in merged.groupby("label")])
                for _, pair in merged.iterrows():
                    text = (f"Product A is {serialize(pair, columns_a)}. Product B is {serialize(pair, columns_b)}. "
                            "Are A and B the same?")
                    out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=text),
                                        references=[Reference(text="Yes" if pair["label"] else "No", correct=True)]))
            except KeyError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url}: {split}.csv or its tables lack column "
                                    f"{exc} (DeepMatcher's ltable_id, rtable_id, label and id)") from None
        return out
