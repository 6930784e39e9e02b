"""The International Corpus of English (ICE): language modelling of English as written and spoken in many
countries, as HELM Classic runs it (``ice_scenario.py``; priority 2: ``subset=ea``, ``hk``, ``ind``, ``usa``, and
``gender=female``, ``=male``; a targeted language evaluation).

ICE's subsets are licensed (ice-corpora.uzh.ch) and HELM downloads none of them: it reads each extracted subset
from ``restricted/ice/<folder>`` (``ICE-HK``, ``ICE India``, ``ICE-USA``, ``ICE-EA/corpus/retagged for wsmith``,
...). Here each subset is one zip of that folder, named ``ice-<subset>.zip`` and holding ``<folder>/...`` as HELM
expects it, read from a mirror (``HELMFLOW_MIRROR_ICE`` or ``HELMFLOW_MIRROR``); a board leaves ICE out when no
mirror has them. HELM's pinned file order (``ice_scenario_pinned_file_order.json``, CodaLab bundle
``0xdee5cea1…``, keyed by ``restricted/ice/<folder>/<corpus folder>``) orders each corpus folder, as HELM's
official runs listed them; a folder it lacks is listed sorted.

HELM's reading, kept: the corpus folder is ``Corpus``, ``CORPUS``, ``all east africa`` (EA), ``ICE combined
running txt`` (Ireland) or ``corpus``; with ``gender=``, only the texts HELM's metadata selects (a row of
Canada's first sheets or any sheet of Hong Kong's ``.xls`` with that gender in any of its gender columns; an
India or USA ``.hdr`` header whose every ``<gender>`` tag is that gender),
matched as regular-expression prefixes of the file names and then sorted; ``category=`` keeps written (``W``) or
spoken (``S``) texts by file name (EA by its file-name table). A file is read as UTF-8, else Latin-1, with universal
newlines; EA files are split at their text codes. Each text is cleaned by HELM's ``preprocess_text`` (its
deletions, replacements, untagged and removed tags) and is one test instance, echoed by HELM's
``language_modeling`` adapter and scored by ``bits_per_byte``.
"""

from __future__ import annotations

import io
import json
import re
import warnings
import zipfile
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from helmflow.records import AdapterSpec, Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.entity_matching import pandas_module
from helmflow.scenarios.twitter_aae import language_modeling_spec

ORDER_URL = "https://worksheets.codalab.org/rest/bundles/0xdee5cea197f645219093954ac7324add/contents/blob/"
ORDER = "ice_scenario_pinned_file_order.json"
ACCESS_URL = "https://www.ice-corpora.uzh.ch/en/access.html"  # named in messages only: the corpus is licensed
ACCESS = "ICE is licensed (ice-corpora.uzh.ch): zip each subset's folder, as HELM reads it, as ice-<subset>.zip"
#: HELM's ICESubset, in its order (every subset when none is given)
SUBSETS = ["can", "ja", "hk", "ind", "sin", "phi", "usa", "ea", "irl"]
FOLDERS = {
    "ind": "ICE India", "can": "ICE-CAN", "hk": "ICE-HK", "ja": "ICE-JA", "phi": "ICE Philippines",
    "sin": "ICE SINGAPORE", "usa": "ICE-USA", "irl": "ICE-IRL/ICE-Ireland version 1.2#6DAE.2/ICE-Ireland txt",
    "ea": "ICE-EA/corpus/retagged for wsmith",
}
#: the subsets with gender metadata, HELM's METADATA_FORMAT order (every one of them for gender= alone)
METADATA = {"can": "xls", "hk": "xls", "ind": "hdr", "usa": "hdr"}
XLS_FILES = {"can": [("Spoken ICE-CAN metadata.xls", [12]), ("Written ICE-CAN metadata.xls", [12, 19])],
             "hk": [("HKRecords.xls", [16])]}
GENDERS = {"male": {"M", "m", "Male", "male"}, "female": {"F", "f", "Female", "female"}}
S_DIALOGUE, S_MONOLOGUE, W_PRIVATE, W_PUBLIC = "S1", "S2", "W1", "W2"
EA_CATEGORIES = {
    "brdisc": S_DIALOGUE, "brint": S_DIALOGUE, "brnews": S_MONOLOGUE, "brtalk": S_MONOLOGUE, "buslet": W_PRIVATE,
    "clless": S_DIALOGUE, "column": W_PUBLIC, "conv": S_DIALOGUE, "conv1": S_DIALOGUE, "conv2": S_DIALOGUE,
    "crea": W_PUBLIC, "creat1": W_PUBLIC, "creat2": W_PUBLIC, "crossx": S_DIALOGUE, "editor": W_PUBLIC,
    "essays": W_PRIVATE, "exam": W_PRIVATE, "feat": W_PUBLIC, "instruct": W_PUBLIC, "judge": W_PRIVATE,
    "ldhum": W_PUBLIC, "ldnats": W_PUBLIC, "ldsoc": W_PUBLIC, "ldtech": W_PUBLIC, "parlia": S_DIALOGUE,
    "ppgen": W_PUBLIC, "pphum": W_PUBLIC, "ppnats": W_PUBLIC, "ppsoc": W_PUBLIC, "pptech": W_PUBLIC,
    "schbr": S_MONOLOGUE, "soclet": W_PRIVATE, "splect": S_MONOLOGUE, "splash": W_PUBLIC,
}
# HELM's preprocess_text, its patterns in its order
UNTAG = ["I", "ICE.+", "[\\[\\]\\{\\}]\\d*", "X", "@", "quote", "foreign", "indig", "smallcaps", "roman", "sb", "ss",
         "footnote", "p", "h", "bold", "it", "ul", "\\+", "\\=", "\\?", "sp", "}", "ea", "slang"]
REMOVE = ["O", "-", "&", ".", "fnr", "marginalia", "del", "w"]
DELETE = ["[WS]\\d[A-F]-\\d{3} *", " <l> ", "<#> ", "BBB\\S+ \\S+RRR *", "BBB\\S+ *", "RRR\\S+ *", "UUU", "III\\S+ *"]
REPLACE = {
    "<\\/*mention>": '"', "</\\*\\*>": "*", "</\\*\\*/>": "*", "&eacute;": "é", " <,+>": ",", "&ersand;": "&",
    "&obrack;": "(", "&cbrack;": ")", "&percent;": "%", "&hash;": "#", "&dash": "-", "&ldquo;": '"',
    "&atsign;": "@", "\\n+[\\n ]+": "\n\n", "\\S+><\\+_(\\S+)>": "\\1",
}
EA_SPLIT = "[WS]\\d[A-F]\\d{3}[A-Z]*[KT]\n"


class ICEParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Literal["can", "ja", "hk", "ind", "sin", "phi", "usa", "ea", "irl"] | None = None
    gender: Literal["male", "female"] | None = None
    category: Literal["all", "S", "W", "S1", "S2", "W1", "W2"] = "all"

    @model_validator(mode="after")
    def _metadata(self) -> ICEParams:
        if self.gender and self.subset and self.subset not in METADATA:
            raise ValueError(f"subset {self.subset} cannot be filtered through metadata (only {', '.join(METADATA)})")
        return self


def preprocess(text: str) -> str:
    """HELM's ``preprocess_text`` (tags not kept)."""
    text = text.strip()
    for pattern in DELETE:
        text = re.sub(pattern, "", text)
    for pattern, value in REPLACE.items():
        text = re.sub(pattern, value, text)
    text = re.sub("<\\/*(" + "|".join(UNTAG) + ")>", "", text)
    for tag in REMOVE:
        end_tag = f"</{tag}>"
        end = text.find(end_tag)
        while end >= 0:
            start = text[:end].rfind(f"<{tag}>")
            if start == -1:
                start = end
            text = text[:start] + text[end + len(end_tag):]
            end = text.find(end_tag)
    return text.strip()


def in_category(category: str, subset: str, filename: str) -> bool:
    """HELM's ``validate_category``."""
    if category == "all":
        return True
    if subset == "ea":
        kind = EA_CATEGORIES[filename.replace("-", "")[:-5].lower()]
        if category in ("S", "W"):
            return kind.startswith(category)
        return kind == category
    return filename.upper().startswith(category)


def text_of(data: bytes) -> str:
    """HELM's ``open(path, "r")`` (UTF-8), else ``encoding="iso-8859-1"``; universal newlines either way."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return text.replace("\r\n", "\n").replace("\r", "\n")


class _Tree:
    """The extracted ``restricted/ice`` folder, read out of the subsets' zips: paths as HELM joins them."""

    def __init__(self, scenario: str):
        self.scenario = scenario
        self.files: dict[str, tuple[zipfile.ZipFile, str]] = {}

    def add(self, url: str, data: bytes) -> None:
        try:
            z = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile as exc:
            raise ScenarioError(f"scenario {self.scenario!r}: {url} is not a zip of an ICE subset's folder: "
                                f"{exc}") from None
        for name in z.namelist():
            if not name.endswith("/"):
                self.files[f"restricted/ice/{name}"] = (z, name)

    def listdir(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return list(dict.fromkeys(p[len(prefix):].split("/", 1)[0] for p in self.files if p.startswith(prefix)))

    def read(self, path: str) -> bytes:
        if path not in self.files:
            raise ScenarioError(f"scenario {self.scenario!r}: the ICE archives have no {path}")
        z, name = self.files[path]
        return z.read(name)


@scenario("ice")
class ICE(Scenario[ICEParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = ICEParams
    description = ("ICE (International Corpus of English): bits per byte on written and spoken English of several "
                   "countries (HELM Classic's targeted language evaluation; licensed data from a mirror).")
    main_metric = "bits_per_byte"
    metrics = ["bits_per_byte", "efficiency"]
    helm_wording = "HELM's language_modeling adapter: each text alone, echoed, nothing added"
    helm_differences = ("ice: the licensed subsets as zips of the folders HELM reads (ice-<subset>.zip, from a mirror; "
                        "left out when absent) and HELM's pinned file order (CodaLab), pinned by their sha256 "
                        "(recorded at first use)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return language_modeling_spec()

    @property
    def subsets(self) -> list[str]:
        """HELM's ``self.subset``: the one given, else every subset (those with metadata for ``gender=``)."""
        p = self.params
        if p.subset:
            return [p.subset]
        return list(METADATA) if p.gender else list(SUBSETS)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=ORDER, url=self.web_url(ORDER_URL), sha256_unknown=True),
                *(DataSource(filename=f"ice-{s}.zip", url=f"{ACCESS_URL}#ice-{s}.zip", sha256_unknown=True,
                             gated=ACCESS) for s in self.subsets)]

    def _gender_filter(self, tree: _Tree, subset: str, headers: str, corpus: list[str]) -> list[str]:
        """HELM's ``filter_by_metadata``: the corpus files whose text code the metadata selects, sorted."""
        pd = pandas_module(self.name)

        wanted = GENDERS[str(self.params.gender)]
        selected: set[Any] = set()
        if METADATA[subset] == "xls":
            for name, columns in XLS_FILES[subset]:
                data = tree.read(f"{headers}/{name}")
                try:
                    with warnings.catch_warnings():  # pandas 3 deprecates xlrd, the one reader of .xls (HELM's)
                        warnings.simplefilter("ignore")
                        sheets = pd.read_excel(io.BytesIO(data), sheet_name=[0] if subset == "can" else None)
                    for df in sheets.values():
                        for i in range(len(df)):
                            if not pd.isna(df.iat[i, 0]) and any(df.iat[i, c] in wanted for c in columns):
                                selected.add(df.iat[i, 0])
                except ImportError:
                    raise ScenarioError(f"scenario {self.name!r} reads ICE's .xls metadata with xlrd: "
                                        "pip install 'helmflow[classic]'") from None
                except (ValueError, IndexError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {headers}/{name} is not ICE's metadata sheet "
                                        f"({type(exc).__name__}: {exc})") from None
        else:
            for name in tree.listdir(headers):
                if name.endswith("hdr"):
                    found = re.findall("(?<=<gender>)\\w+(?=<\\/gender>)", text_of(tree.read(f"{headers}/{name}")))
                    if found and all(g in wanted for g in found):
                        selected.add(name[:-4])
        try:
            patterns = [re.compile(code, re.IGNORECASE) for code in selected]
        except (re.error, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {headers}: a text code is not a pattern HELM can match "
                                f"({exc})") from None
        return sorted(f for f in corpus if any(p.match(f) for p in patterns))

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            order = json.loads(read_source(self.name, files[ORDER]))
            if not isinstance(order, dict):
                raise ValueError("not an object of folder -> file names")
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[ORDER]} is not HELM's pinned file order: "
                                f"{exc}") from None
        tree = _Tree(self.name)
        for subset in self.subsets:
            tree.add(files[f"ice-{subset}.zip"], read_source(self.name, files[f"ice-{subset}.zip"]))
        out: list[Instance] = []
        for subset in self.subsets:
            data_path = f"restricted/ice/{FOLDERS[subset]}"
            contents = tree.listdir(data_path)
            if not contents:
                raise ScenarioError(f"scenario {self.name!r}: {files[f'ice-{subset}.zip']} has no folder "
                                    f"{FOLDERS[subset]!r} (HELM reads {data_path})")
            corpus_name = ("Corpus" if "Corpus" in contents else "CORPUS" if "CORPUS" in contents
                           else "ICE combined running txt" if subset == "irl"
                           else "all east africa" if subset == "ea" else "corpus")
            corpus_path = f"{data_path}/{corpus_name}"
            listing = order.get(corpus_path) or sorted(tree.listdir(corpus_path))
            if self.params.gender and subset in METADATA:
                listing = self._gender_filter(tree, subset, f"{data_path}/Headers", listing)
            for filename in listing:
                try:
                    if not in_category(self.params.category, subset, filename):
                        continue
                except KeyError:
                    raise ScenarioError(f"scenario {self.name!r}: {filename} is not among HELM's East African "
                                        "file names (its category table)") from None
                text = text_of(tree.read(f"{corpus_path}/{filename}"))
                texts = [t for t in re.split(EA_SPLIT, text) if len(t) > 0] if subset == "ea" else [text]
                out += [Instance(id=f"id{len(out) + k}", split="test", input=Input(text=preprocess(t)))
                        for k, t in enumerate(texts)]
        return out
