"""CNN/DailyMail and XSum single-document news summarisation, as HELM Classic runs them
(``summarization_scenario.py``, run specs ``summarization_cnndm`` and ``summarization_xsum``).

HELM downloads pickles of the Hugging Face datasets from its own bucket. Pickles are never read here: the same
datasets are read from the Hub's Parquet files (CNN/DailyMail ``abisee/cnn_dailymail`` config ``3.0.0``, fields
``article`` / ``highlights``; XSum ``EdinburghNLP/xsum``, fields ``document`` / ``summary``), which are their
rows in the same order. No Hub revision could be checked offline, so both run from a mirror (``unpinned``),
each file's sha256 recorded at first fetch.

HELM's rules, applied in its order (train, validation, test; rows in file order; ids ``id<i>`` over all):
newlines become spaces, whitespace runs collapse, and articles are cut to their first ``doc_max_length`` (512)
words. Train articles outside 50-150 words are dropped, and for XSum also the train rows HELM's ``_xsum_filter``
rejects: an article with "Media playback is unsupported on your device" or "Last updated at", a summary of at
most 10 words, or a summary longer than a fifth of its article. The adapter is HELM's summarisation spec:
``###`` / ``Article: <text>``, a blank line, ``Summarize the above article in 3 sentences.`` (XSum: ``in 1
sentence.``) and the summary; five examples, temperature 0.3, 128 tokens (XSum 64), stop at ``###``. The
metric is ``summarization`` (ROUGE-1/2/L and the extractiveness statistics); the main one is ROUGE-2 on test.

HELM Classic's conf runs ``summarization_xsum_sampled``, which reads ``xsum-sampled.pk`` from HELM's bucket: a
subset of XSum drawn by HELM's authors whose draw is published nowhere else. ``summarization_xsum_sampled`` reads
that file without running it (:func:`read_plain_pickle`: dicts, lists, strings and numbers only; a pickle naming
any class or function is refused, so one of Hugging Face ``Dataset`` objects would be too): ``{"train",
"validation", "test"}`` -> rows with ``document`` and ``summary``. HELM's rules as above, with its quirk: the
sampled set gets the 50-150 word train filter but not ``_xsum_filter`` (HELM applies that only to
``dataset_name == "xsum"``).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source, read_plain_pickle

SUMMARY_DIFFERENCE = ("summarization: HELM Classic's device=cpu scoring is reproduced (ROUGE-1/2/L, coverage, density, "
                      "compression); SummaC and BERTScore are off on CPU in HELM too, and QAFactEval and the human "
                      "ratings, which HELM reads from files of its own models' outputs, are not computed")
SPLITS = (("train", "train"), ("validation", "valid"), ("test", "test"))


class SummarizationParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sampling_min_length: int | None = Field(50, ge=1, description="drop train articles shorter than this (words)")
    sampling_max_length: int | None = Field(150, ge=1, description="drop train articles longer than this (words)")
    doc_max_length: int | None = Field(512, ge=1, description="cut every article to this many words")


def clean_and_truncate(text: str, max_length: int | None = None) -> str:
    """HELM's ``_clean_and_truncate``: newlines to spaces, whitespace runs to one space, the first ``max_length``
    words."""
    return " ".join(text.replace("\n", " ").split()[:max_length])


def xsum_filter(article: str, summary: str) -> bool:
    """HELM's ``_xsum_filter``: True for a train row HELM drops."""
    if "Media playback is unsupported on your device" in article or "Last updated at" in article:
        return True
    words = len(summary.split())
    return words <= 10 or words / len(article.split()) > 0.2


def summarization_spec(num_sents: int, max_tokens: int) -> AdapterSpec:
    """HELM's ``get_summarization_adapter_spec(num_sents, max_tokens=..., temperature=0.3)``."""
    ask = "Summarize the above article in 1 sentence.\n" if num_sents == 1 else \
        f"Summarize the above article in {num_sents} sentences.\n"
    return AdapterSpec(
        method="generation", instructions="", input_prefix="###\nArticle: ", input_suffix="\n\n",
        output_prefix=ask, output_suffix="\n", instance_prefix="\n", max_train_instances=5,
        generation=GenerationParams(max_tokens=max_tokens, temperature=0.3, stop=["###"], num_outputs=1),
    )


class NewsSummarization(Scenario[SummarizationParams]):
    VERSION = "1"
    HUB_REVISION: ClassVar[str | None] = UNPINNED  # no Hub revision could be checked offline: runs from a mirror only
    Params = SummarizationParams
    main_metric = "rouge_2"
    metrics = ["summarization", "efficiency"]
    FILES: ClassVar[dict[str, tuple[str, str]]] = {}  # filename -> (path in the Hub repo, HF split)
    ARTICLE: ClassVar[str] = ""
    SUMMARY: ClassVar[str] = ""
    NUM_SENTS: ClassVar[int] = 3
    MAX_TOKENS: ClassVar[int] = 128
    helm_wording = ("HELM's summarisation prompt byte for byte: ###, Article:, a blank line, the 'Summarize the "
                    "above article in N sentences.' request, five examples, temperature 0.3, stop at ###")

    @property
    def default_adapter(self) -> AdapterSpec:
        return summarization_spec(self.NUM_SENTS, self.MAX_TOKENS)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(path)) for name, (path, _) in self.FILES.items()]

    def keep_train(self, article: str, summary: str) -> bool:
        words = len(article.split())
        p = self.params
        return not ((p.sampling_max_length and words > p.sampling_max_length)
                    or (p.sampling_min_length and words < p.sampling_min_length))

    def load(self, files: dict[str, str]) -> list[Instance]:
        columns = {self.ARTICLE: "string", self.SUMMARY: "string"}
        out: list[Instance] = []
        for hf_split, split in SPLITS:
            for name, (_, of) in self.FILES.items():
                if of != hf_split:
                    continue
                for row in read_parquet_source(self.name, files[name], columns).select(list(columns)).to_pylist():
                    article = clean_and_truncate(row[self.ARTICLE] or "", self.params.doc_max_length)
                    summary = clean_and_truncate(row[self.SUMMARY] or "")
                    if split == "train" and not self.keep_train(article, summary):
                        continue
                    out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=article),
                                        references=[Reference(text=summary, correct=True)]))
        return out


@scenario("summarization_cnndm")
class CNNDailyMail(NewsSummarization):
    HUB_REPO = "abisee/cnn_dailymail"
    description = "CNN/DailyMail: summarise a news article in three sentences (HELM Classic; ROUGE-2)."
    FILES: ClassVar[dict[str, tuple[str, str]]] = {
        **{f"train-{i:05d}.parquet": (f"3.0.0/train-{i:05d}-of-00003.parquet", "train") for i in range(3)},
        "validation.parquet": ("3.0.0/validation-00000-of-00001.parquet", "validation"),
        "test.parquet": ("3.0.0/test-00000-of-00001.parquet", "test"),
    }
    ARTICLE, SUMMARY = "article", "highlights"
    NUM_SENTS, MAX_TOKENS = 3, 128
    helm_differences = (
        "summarization_cnndm: HELM reads a pickle of the Hugging Face dataset from its bucket; this reads the Hub's "
        "Parquet files of abisee/cnn_dailymail 3.0.0 (the same rows in the same order) from a mirror, never a pickle",
        SUMMARY_DIFFERENCE,
    )


@scenario("summarization_xsum")
class XSum(NewsSummarization):
    HUB_REPO = "EdinburghNLP/xsum"
    description = "XSum: summarise a BBC article in one sentence (HELM's summarization_xsum; ROUGE-2)."
    FILES: ClassVar[dict[str, tuple[str, str]]] = {
        f"{split}.parquet": (f"default/{split}/0000.parquet", split) for split, _ in SPLITS
    }
    ARTICLE, SUMMARY = "document", "summary"
    NUM_SENTS, MAX_TOKENS = 1, 64
    helm_differences = (
        "summarization_xsum: HELM Classic's conf runs summarization_xsum_sampled, a subset in a pickle whose draw is "
        "published nowhere else; this is HELM's summarization_xsum (all of XSum, with its train filter), read "
        "from the Hub's Parquet conversion of EdinburghNLP/xsum in a mirror, never a pickle",
        SUMMARY_DIFFERENCE,
    )

    def keep_train(self, article: str, summary: str) -> bool:
        return super().keep_train(article, summary) and not xsum_filter(article, summary)


XSUM_SAMPLED_URL = ("https://storage.googleapis.com/crfm-helm-public/source_datasets/scenarios/summarization_scenario/"
                    "xsum-sampled.pk")


@scenario("summarization_xsum_sampled")
class XSumSampled(NewsSummarization):
    """HELM's ``summarization_xsum_sampled`` (``SummarizationScenario(dataset_name="xsum-sampled")``)."""

    HUB_REVISION = None
    SOURCE_REVISION = "helm-bucket"
    description = ("XSum (sampled): HELM Classic's own subset of XSum, summarised in one sentence "
                   "(summarization_xsum_sampled; ROUGE-2).")
    ARTICLE, SUMMARY = "document", "summary"
    NUM_SENTS, MAX_TOKENS = 1, 64
    PICKLE = "xsum-sampled.pk"
    helm_differences = (
        "summarization_xsum_sampled: HELM unpickles xsum-sampled.pk from its bucket; helmflow reads the same file "
        "with a loader that builds plain dicts, lists and strings only and refuses any class or function, so it "
        "never runs the file; its sha256 is recorded at first fetch (HELM publishes none)",
        SUMMARY_DIFFERENCE,
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.PICKLE, url=self.web_url(XSUM_SAMPLED_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.PICKLE]
        data = read_plain_pickle(self.name, url)
        out: list[Instance] = []
        for hf_split, split in SPLITS:
            rows = data.get(hf_split) if isinstance(data, dict) else None
            if not isinstance(rows, list):
                found = type(rows if isinstance(data, dict) else data).__name__
                raise ScenarioError(f"scenario {self.name!r}: {url}: expected a dict with a {hf_split!r} list of rows, "
                                    f"as HELM reads it; found {found}")
            for k, row in enumerate(rows):
                article, summary = (row.get(self.ARTICLE), row.get(self.SUMMARY)) if isinstance(row, dict) else (0, 0)
                if not (isinstance(article, str) and isinstance(summary, str)):
                    raise ScenarioError(f"scenario {self.name!r}: {url}: {hf_split} row {k} has no string "
                                        f"{self.ARTICLE!r} and {self.SUMMARY!r}")
                article = clean_and_truncate(article, self.params.doc_max_length)
                summary = clean_and_truncate(summary)
                if split == "train" and not self.keep_train(article, summary):
                    continue
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=article),
                                    references=[Reference(text=summary, correct=True)]))
        return out
