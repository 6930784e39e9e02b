"""Financial PhraseBank (Malo et al., 2014): sentences of English financial news labelled positive, neutral or
negative, as HELM's Enterprise board runs it (``financial_phrasebank_scenario.py``).

The source is the Hub repository's ``FinancialPhraseBank-v1.0.zip`` at HELM's revision; HELM reads
``FinancialPhraseBank-v1.0/Sentences_<agreement>Agree.txt`` (``Sentences_AllAgree.txt`` for 100), ISO-8859-1
lines ``sentence@label``, shuffles them with ``random.Random(121)``, and puts the first 70% in train, the
rest in test. ``agreement`` (50, 66, 75 or 100, default 50) is the share of annotators who agreed on the label.
Generation (``Sentence:`` / ``Label:``, 30 tokens, five examples), scored by exact match and HELM's
``classification_weighted_f1`` (the main metric).
"""

from __future__ import annotations

import io
import random

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

REVISION = "598b6aad98f7c8d67be161b12a4b5f2497e07edd"
ZIP_URL = (f"https://huggingface.co/datasets/takala/financial_phrasebank/resolve/{REVISION}"
           "/data/FinancialPhraseBank-v1.0.zip")
AGREEMENTS = (50, 66, 75, 100)
SEED, TRAIN_SHARE = 121, 0.7
# our wording of HELM's instructions: what the sentences are and the three labels
INSTRUCTIONS = ("Each sentence below comes from English financial news. Label its sentiment with one of: "
                "positive, neutral, negative.")


class PhrasebankParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agreement: int = 50

    @field_validator("agreement")
    @classmethod
    def _known(cls, v: int) -> int:
        if v not in AGREEMENTS:
            raise ValueError(f"agreement must be one of {', '.join(map(str, AGREEMENTS))}, got {v}")
        return v


def member(agreement: int) -> str:
    name = "Sentences_AllAgree.txt" if agreement == 100 else f"Sentences_{agreement}Agree.txt"
    return f"FinancialPhraseBank-v1.0/{name}"


def helm_split(lines: list[str]) -> list[tuple[str, str, str]]:
    """(sentence, label, split) in HELM's order: seeded shuffle, the first 70% train."""
    lines = list(lines)
    random.Random(SEED).shuffle(lines)
    cut = int(len(lines) * TRAIN_SHARE)
    out = []
    for i, line in enumerate(lines):
        sentence, sep, label = line.strip().rpartition("@")
        if not sep:
            raise ScenarioError(f"line {line.strip()[:60]!r} has no '@label'")
        out.append((sentence, label, "train" if i < cut else "test"))
    return out


@scenario("financial_phrasebank")
class FinancialPhrasebank(Scenario[PhrasebankParams]):
    VERSION = "1"
    SOURCE_REVISION = REVISION
    Params = PhrasebankParams
    description = "Financial PhraseBank: sentiment of financial news sentences (HELM Enterprise)."
    main_metric = "classification_weighted_f1"
    metrics = ["classification_weighted_f1", "exact_match", "quasi_exact_match", "efficiency"]
    helm_wording = ("the Sentence:/Label: layout, 30 tokens and five in-context examples follow HELM's generation "
                    "adapter; the instructions are helmflow's own sentence naming the same three labels")
    helm_differences = ("financial_phrasebank: the zip is read at HELM's Hub revision, pinned by the sha256 of the "
                        "file read (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Sentence: ", "Label", 30, ["\n"], instructions=INSTRUCTIONS)

    def sources(self) -> list[DataSource]:
        path = member(self.params.agreement)
        return [DataSource(filename=path.rpartition("/")[2], url=self.archive_url(ZIP_URL, path), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[member(self.params.agreement).rpartition("/")[2]]
        text = read_source(self.name, url).decode("iso-8859-1")
        try:
            # Python's universal newlines, as HELM's readlines() (str.splitlines would also split at \x85)
            rows = helm_split(io.StringIO(text, newline=None).readlines())
        except ScenarioError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url}: {exc}") from None
        return [Instance(id=f"id{i}", split=split, input=Input(text=sentence),
                         references=[Reference(text=label, correct=True)])
                for i, (sentence, label, split) in enumerate(rows)]
