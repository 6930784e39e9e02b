"""The Pile (Gao et al., 2020): language modelling across 22 domains, as HELM Classic runs it
(``the_pile_scenario.py``, six subsets at priority 2: ArXiv, BookCorpus2, Enron Emails, Github, PubMed Central and
Wikipedia (en); a targeted language evaluation).

The sources are HELM's: the Pile's ``test.jsonl.zst`` (its URL on the-eye.eu, which no longer serves the Pile:
read it from a mirror, ``HELMFLOW_MIRROR`` or ``HELMFLOW_SOURCE_HOST``) and, per subset, EleutherAI's
``lm_perplexity`` subsample indices ``assets/test_subsample_indices/<short name>/group0.json`` (branch ``main``,
as HELM). HELM's reading, kept: the documents of the subset (``meta.pile_set_name``) in file order, each text as
it comes back from HELM's CSV cache (written by ``csv.writer``, read in text mode: ``\\r\\n`` and ``\\r`` become
``\\n``); then only the documents at the sorted, de-duplicated indices, except for the three subsets lm_perplexity
does not split (Ubuntu IRC, BookCorpus2, PhilPapers: every document). Each is one test instance (ids ``id<i>``)
with no references, echoed by HELM's ``language_modeling`` adapter and scored by ``bits_per_byte``. Needs a
deployment that returns the prompt's logprobs. Neither host publishes checksums: the pins are recorded at first
fetch.
"""

from __future__ import annotations

import io
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.twitter_aae import language_modeling_spec

PILE_URL = "https://the-eye.eu/public/AI/pile/test.jsonl.zst"
PILE = "test.jsonl.zst"
INDICES_URL = ("https://raw.githubusercontent.com/EleutherAI/lm_perplexity/main/assets/test_subsample_indices/"
               "{short}/group0.json")
#: HELM's subsets and lm_perplexity's short names for them
SHORT_NAMES = {
    "Github": "github", "ArXiv": "arxiv", "Wikipedia (en)": "wikipedia", "OpenSubtitles": "opensubtitles",
    "OpenWebText2": "openwebtext2", "Gutenberg (PG-19)": "gutenberg", "DM Mathematics": "dm-mathematics",
    "Enron Emails": "enron", "Books3": "bibliotik", "PubMed Abstracts": "pubmed-abstracts",
    "YoutubeSubtitles": "youtubesubtitles", "HackerNews": "hackernews", "Pile-CC": "commoncrawl",
    "EuroParl": "europarl", "USPTO Backgrounds": "uspto", "FreeLaw": "freelaw", "NIH ExPorter": "nih-exporter",
    "StackExchange": "stackexchange", "PubMed Central": "pubmed-central", "Ubuntu IRC": "ubuntu-irc",
    "BookCorpus2": "bookcorpus", "PhilPapers": "philpapers",
}
#: too few documents for lm_perplexity's ten groups: HELM keeps them all
WITHOUT_SPLIT = {"ubuntu-irc", "bookcorpus", "philpapers"}

Subset = Literal["ArXiv", "BookCorpus2", "Books3", "DM Mathematics", "Enron Emails", "EuroParl", "FreeLaw", "Github",
                 "Gutenberg (PG-19)", "HackerNews", "NIH ExPorter", "OpenSubtitles", "OpenWebText2", "PhilPapers",
                 "Pile-CC", "PubMed Abstracts", "PubMed Central", "StackExchange", "USPTO Backgrounds", "Ubuntu IRC",
                 "Wikipedia (en)", "YoutubeSubtitles"]


class ThePileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Subset


def csv_round_trip(text: str) -> str:
    """A text as HELM's CSV cache gives it back: written by ``csv.writer``, read with universal newlines."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def subset_texts(scenario: str, url: str, subset: str) -> list[str]:
    """The subset's documents in file order, streamed out of the zstd JSON Lines file."""
    try:
        import zstandard
    except ModuleNotFoundError:
        raise ScenarioError(f"scenario {scenario!r} reads the Pile's .zst file with zstandard: "
                            "pip install 'helmflow[classic]'") from None
    import fsspec

    out: list[str] = []
    try:
        with fsspec.open(url, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as plain:
            for number, line in enumerate(io.TextIOWrapper(plain, encoding="utf-8"), start=1):
                try:
                    doc = json.loads(line)
                    name = doc["meta"]["pile_set_name"]
                    if name not in SHORT_NAMES:
                        raise KeyError(f"pile_set_name {name!r}")
                    if name == subset:
                        out.append(csv_round_trip(doc["text"]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise ScenarioError(f"scenario {scenario!r}: {url} line {number} is not a Pile document "
                                        f"({type(exc).__name__}: {exc})") from None
    except FileNotFoundError:
        raise ScenarioError(f"scenario {scenario!r}: {url} does not exist") from None
    except (zstandard.ZstdError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not zstd-compressed UTF-8 text: {exc}") from None
    return out


@scenario("the_pile")
class ThePile(Scenario[ThePileParams]):
    VERSION = "1"
    SOURCE_REVISION = "pile-test-v1"
    Params = ThePileParams
    description = ("The Pile: bits per byte on documents of one of its 22 domains (HELM Classic's targeted "
                   "language evaluation).")
    main_metric = "bits_per_byte"
    metrics = ["bits_per_byte", "efficiency"]
    helm_wording = "HELM's language_modeling adapter: each document alone, echoed, nothing added"
    helm_differences = ("the_pile: HELM's test.jsonl.zst URL (the-eye.eu no longer serves the Pile: a mirror) and "
                        "lm_perplexity's subsample indices (branch main), pinned by their sha256 (recorded at first "
                        "fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return language_modeling_spec()

    @property
    def short_name(self) -> str:
        return SHORT_NAMES[self.params.subset]

    @property
    def indices_file(self) -> str:
        return f"{self.short_name}-group0.json"

    def sources(self) -> list[DataSource]:
        out = [DataSource(filename=PILE, url=self.web_url(PILE_URL), sha256_unknown=True)]
        if self.short_name not in WITHOUT_SPLIT:
            url = self.web_url(INDICES_URL.format(short=self.short_name))
            out.append(DataSource(filename=self.indices_file, url=url, sha256_unknown=True))
        return out

    def load(self, files: dict[str, str]) -> list[Instance]:
        texts = subset_texts(self.name, files[PILE], self.params.subset)
        if self.short_name not in WITHOUT_SPLIT:
            url = files[self.indices_file]
            try:
                raw = json.loads(read_source(self.name, url))
                indices = sorted({int(i) for i in raw}) if isinstance(raw, list) else None
            except (ValueError, TypeError):
                indices = None
            if indices is None:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON list of document indices")
            if indices and (indices[0] < 0 or indices[-1] >= len(texts)):
                raise ScenarioError(f"scenario {self.name!r}: {url} names document {indices[-1]}, but "
                                    f"{files[PILE]} has {len(texts)} {self.params.subset} documents")
            texts = [texts[i] for i in indices]
        return [Instance(id=f"id{k}", split="test", input=Input(text=t)) for k, t in enumerate(texts)]
