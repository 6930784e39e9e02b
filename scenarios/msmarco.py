"""MS MARCO passage ranking (Bajaj et al., 2016), as HELM Classic runs it (``msmarco_scenario.py``): the regular
track (the dev "small" queries, binary judgements, RR@10) and the TREC Deep Learning 2019 track (graded
judgements 0-3, NDCG@10).

The sources are HELM's ten files: MacAvaney et al.'s cleaned passage collection and the BM25 top-k lists
(CodaLab bundles), the queries and qrels (the MS MARCO blob; NIST for TREC's qrels, space-separated; TREC's
queries gzipped). All are ``<id>\\t<text>``, ``<qid>\\t0\\t<docid>\\t<rel>`` or ``<qid>\\t<docid>\\t<rank>`` rows,
read with Python's ``csv`` module as HELM reads them.

HELM's order of events, replayed exactly: one ``random.Random(1885)`` shuffles the passage ids (in file order),
then the train query ids, then the valid query ids (each in file order). Train: the first 1,000 shuffled
queries that have a judgement with a gold value (1), and 20 or more top-k passages, each with two references,
the most relevant judged passage and the first top-k passage (in file order) ranked 11 to 20 that is not gold,
ordered by their place in the shuffled passages. Valid: every shuffled query with a gold judgement (regular: 1;
TREC: 2 or 3) and, with ``valid_topk``, at least that many top-k passages; its references are its judged
passages plus, with ``valid_topk``, its top-``valid_topk`` passages, deduplicated and ordered by the shuffled
passages. A reference is correct when its judgement is gold. Instances ``id<i>``, train first.

HELM Classic's entries are ``msmarco:track=regular,valid_topk=30`` and ``track=trec,valid_topk=30``; its adapter
is ``ranking_binary`` (``Passage:`` / ``Query:`` / ``Does the passage answer the query?`` / ``Answer:``, two train
queries, so four example blocks, five tokens, stop at a newline) and its metric ``ranking`` (RR@10 regular,
NDCG@10 TREC, main split valid). The collection is 8.8 million passages: the loader keeps only the ids of all of
them (the shuffle needs every one) and the text of the passages instances use.
"""

from __future__ import annotations

import csv
import io
import random
from array import array
from collections.abc import Iterator
from typing import Literal

import fsspec
from pydantic import BaseModel, ConfigDict, Field, model_validator

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario

CODALAB = "https://worksheets.codalab.org/rest/bundles/{}/contents/blob/"
BLOB = "https://msmarco.blob.core.windows.net/msmarcoranking/{}"
URLS = {
    "documents.tsv": CODALAB.format("0x50d32fc56ad04dd89510bf86f9c1c9d3"),
    "train_queries.tsv": BLOB.format("queries.train.tsv"),
    "train_qrels.tsv": BLOB.format("qrels.train.tsv"),
    "train_topk.tsv": CODALAB.format("0x8c43d4ec02ea48d6a727683a9676b77b"),
    "regular_queries.tsv": CODALAB.format("0xf5ccf54707b548f9a4c43502c6f15719"),
    "regular_qrels.tsv": BLOB.format("qrels.dev.small.tsv"),
    "regular_topk.tsv": CODALAB.format("0xbc3dfacb2b7746809e582ee01fa5fe70"),
    "trec_queries.tsv.gz": BLOB.format("msmarco-test2019-queries.tsv.gz"),
    "trec_qrels.txt": "https://trec.nist.gov/data/deep/2019qrels-pass.txt",
    "trec_topk.tsv": CODALAB.format("0x2e80572f93b748d594b817249013bdac"),
}
SEED = 1885
NUM_TRAIN_QUERIES = 1000
MIN_TOPK, TRAIN_TOPK, MAX_VALID_TOPK = 11, 20, 1000
GOLD = {"train": {1}, "regular": {1}, "trec": {2, 3}}
MAIN_METRIC = {"regular": "RR@10", "trec": "NDCG@10"}


class MSMarcoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    track: Literal["regular", "trec"] = "regular"
    valid_topk: int | None = Field(None, description="also rank each valid query's top-k BM25 passages (11-1000)")

    @model_validator(mode="after")
    def _topk(self) -> MSMarcoParams:
        if self.valid_topk is not None and not MIN_TOPK <= self.valid_topk <= MAX_VALID_TOPK:
            raise ValueError(f"valid_topk must be between {MIN_TOPK} and {MAX_VALID_TOPK}, got {self.valid_topk}")
        return self


def ranking_spec() -> AdapterSpec:
    """HELM's ``get_ranking_binary_adapter_spec(max_train_instances=4, stop_sequences=["\\n"])``: 4 example
    blocks are 2 train queries (each shows a relevant and an irrelevant passage), 5 tokens, greedy."""
    return AdapterSpec(
        method="ranking_binary", instructions="", input_prefix="Query: ", input_suffix="\n",
        reference_prefix="Passage: ", reference_suffix="\n",
        output_prefix="Does the passage answer the query?\nAnswer: ", output_suffix="\n", instance_prefix="\n",
        max_train_instances=2, generation=GenerationParams(max_tokens=5, temperature=0.0, stop=["\n"], num_outputs=1),
    )


def _lines(scenario_name: str, url: str) -> Iterator[list[str]]:
    """The rows of a TSV source as HELM's ``csv.reader(open(path), delimiter="\\t")`` gives them."""
    compression = "gzip" if url.endswith(".gz") else None
    try:
        with fsspec.open(url, "rb", compression=compression) as raw:
            yield from csv.reader(io.TextIOWrapper(raw, encoding="utf-8"), delimiter="\t")
    except FileNotFoundError:
        raise ScenarioError(f"scenario {scenario_name!r}: {url} does not exist") from None
    except (UnicodeDecodeError, OSError, csv.Error) as exc:
        raise ScenarioError(f"scenario {scenario_name!r}: {url}: not a UTF-8 TSV file: {exc}") from None


def _rows(scenario_name: str, url: str, width: int, space_separated: bool = False) -> Iterator[list[str]]:
    for number, row in enumerate(_lines(scenario_name, url), 1):
        if space_separated:  # NIST's qrels: HELM turns every space into a tab first
            row = [part for cell in row for part in cell.split(" ")]
        if len(row) != width:
            raise ScenarioError(f"scenario {scenario_name!r}: {url} line {number}: expected {width} "
                                f"tab-separated fields, got {len(row)}")
        yield row


def _int(scenario_name: str, url: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ScenarioError(f"scenario {scenario_name!r}: {url}: {value!r} is not an integer id") from None


class Split:
    """One split's queries, judgements and top-k lists, as HELM's dictionaries hold them."""

    def __init__(self, name: str, queries: dict[int, str], qrels: dict[int, dict[int, int]],
                 topk: dict[int, dict[int, int]], gold: set[int], k: int | None):
        self.name, self.queries, self.qrels, self.topk, self.gold, self.k = name, queries, qrels, topk, gold, k
        self.qids = list(queries)

    def filtered(self, check_topk: bool) -> list[int]:
        """HELM's ``filter_qids``: judged, with a gold judgement, and (checking top-k) with k top-k passages."""
        out = [q for q in self.qids if q in self.qrels and self.gold & set(self.qrels[q].values())]
        if check_topk:
            out = [q for q in out if q in self.topk and len(self.topk[q]) >= (self.k or 0)]
        return out


def train_docids(split: Split, qid: int) -> list[int]:
    """HELM's ``get_train_instance`` docids: the most relevant judged passage and the first non-gold top-k
    passage ranked 11 to 20 (unordered; the caller orders them)."""
    judged = sorted(split.qrels[qid], key=lambda d: split.qrels[qid][d], reverse=True)
    wrong = [d for d, rank in split.topk[qid].items() if MIN_TOPK <= rank <= TRAIN_TOPK
             and (d not in split.qrels[qid] or split.qrels[qid][d] not in split.gold)]
    if not wrong:
        raise ScenarioError(f"train query {qid} has no non-gold top-k passage ranked {MIN_TOPK}-{TRAIN_TOPK}")
    return [judged[0], wrong[0]]


def valid_docids(split: Split, qid: int, use_topk: bool) -> list[int]:
    """HELM's ``get_valid_instance`` docids: the judged passages and, with ``valid_topk``, the top-k ones."""
    topk = [d for d, rank in split.topk[qid].items() if rank <= (split.k or 0)] if use_topk else []
    return list(set(list(split.qrels[qid]) + topk))


@scenario("msmarco")
class MSMarco(Scenario[MSMarcoParams]):
    VERSION = "1"
    SOURCE_REVISION = "msmarco-passage-v1+trec-dl-2019"
    Params = MSMarcoParams
    description = "MS MARCO passage ranking (HELM Classic): each passage judged Yes/No for the query, ranked."
    metrics = ["ranking", "efficiency"]
    helm_wording = ("HELM's ranking_binary blocks: Passage:/Query:/'Does the passage answer the query?'/Answer: "
                    "with Yes or No, two train queries (four blocks), five tokens, stop at a newline")
    helm_differences = (
        "msmarco: the ten files are read from HELM's URLs and pinned by the sha256 of each (recorded at first "
        "fetch); only the passages that instances use are kept in memory, which changes no instance",
        "msmarco: HELM's per-reference ref<i>_rank stats are not computed",
    )

    main_metric = MAIN_METRIC["regular"]  # the TREC track's is NDCG@10 (set per instance)

    def __init__(self, **params):
        super().__init__(**params)
        self.main_metric = MAIN_METRIC[self.params.track]  # type: ignore[misc]

    @property
    def default_adapter(self) -> AdapterSpec:
        return ranking_spec()

    def _files(self) -> dict[str, str]:
        track = self.params.track
        names = ["documents.tsv", "train_queries.tsv", "train_qrels.tsv", "train_topk.tsv",
                 f"{track}_queries.tsv" + (".gz" if track == "trec" else ""),
                 f"{track}_qrels." + ("txt" if track == "trec" else "tsv"), f"{track}_topk.tsv"]
        return {n: URLS[n] for n in names}

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(url), sha256_unknown=True)
                for name, url in self._files().items()]

    # ----------------------------------------------------------------- reading
    def _queries(self, url: str) -> dict[int, str]:
        return {_int(self.name, url, qid): text for qid, text in _rows(self.name, url, 2)}

    def _qrels(self, url: str, space_separated: bool = False) -> dict[int, dict[int, int]]:
        out: dict[int, dict[int, int]] = {}
        for qid, _, docid, rel in _rows(self.name, url, 4, space_separated):
            out.setdefault(_int(self.name, url, qid), {})[_int(self.name, url, docid)] = _int(self.name, url, rel)
        return out

    def _topk(self, url: str) -> dict[int, dict[int, int]]:
        out: dict[int, dict[int, int]] = {}
        for qid, docid, rank in _rows(self.name, url, 3):
            out.setdefault(_int(self.name, url, qid), {})[_int(self.name, url, docid)] = _int(self.name, url, rank)
        return out

    def load(self, files: dict[str, str]) -> list[Instance]:
        track, k = self.params.track, self.params.valid_topk
        names = list(self._files())
        docs_url = files["documents.tsv"]
        docids = array("q", (_int(self.name, docs_url, row[0]) for row in _rows(self.name, docs_url, 2)))
        train = Split("train", self._queries(files[names[1]]), self._qrels(files[names[2]]),
                      self._topk(files[names[3]]), GOLD["train"], TRAIN_TOPK)
        valid = Split("valid", self._queries(files[names[4]]), self._qrels(files[names[5]], track == "trec"),
                      self._topk(files[names[6]]), GOLD[track], k)
        rng = random.Random(SEED)
        rng.shuffle(docids)
        rng.shuffle(train.qids)
        rng.shuffle(valid.qids)
        try:
            chosen = ([(train, q, train_docids(train, q)) for q in train.filtered(True)[:NUM_TRAIN_QUERIES]]
                      + [(valid, q, valid_docids(valid, q, k is not None)) for q in valid.filtered(k is not None)])
        except ScenarioError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[names[3]]}: {exc}") from None
        needed = {d for _, _, ds in chosen for d in ds}
        place = {d: i for i, d in enumerate(docids) if d in needed}
        missing = needed - place.keys()
        if missing:
            raise ScenarioError(f"scenario {self.name!r}: {docs_url} lacks passage {min(missing)}, which a "
                                "judgement or top-k list names")
        text = {docid: passage for docid, passage in
                ((_int(self.name, docs_url, a), b) for a, b in _rows(self.name, docs_url, 2)) if docid in needed}
        out: list[Instance] = []
        for split, qid, ds in chosen:
            ds = sorted(ds, key=place.__getitem__)
            relevance = [split.qrels[qid].get(d) for d in ds]
            out.append(Instance(
                id=f"id{len(out)}", split=split.name, input=Input(text=split.queries[qid]),
                references=[Reference(text=text[d], correct=rel in split.gold)
                            for d, rel in zip(ds, relevance, strict=True)],
                extra={"qid": qid, "docids": ds, "relevance": relevance, "rank": [split.topk[qid].get(d) for d in ds],
                       "graded_relevance": track == "trec", "topk": k},
            ))
        return out
