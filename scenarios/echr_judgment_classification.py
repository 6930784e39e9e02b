"""ECHR judgment classification (Chalkidis et al., 2019; "binary violation"): does a European Court of Human
Rights case describe a violation, as HELM's Enterprise board runs it (``echr_judgment_classification_scenario.py``).

The source is the authors' ``ECHR_Dataset.zip`` on archive.org (HELM's URL, unpinned upstream): one JSON file
per case under ``EN_train/`` (train), ``EN_dev/`` (valid) and ``EN_test/`` (test). The input is the case's
``TEXT`` paragraphs joined by spaces; the answer is ``Yes`` when ``VIOLATED_ARTICLES`` is non-empty, else
``No``. HELM's run spec keeps cases of at most 600 words, counted as HELM counts them
(``len(re.split(r"\\W+", text))``, so leading and trailing separators count as words). Generation
(``Case:`` / ``Answer:``, one token, five examples) after instructions holding two trivial cases (one No,
one Yes); scored by exact match and ``classification_weighted_f1`` (the main metric).

HELM reads each folder's files in ``os.listdir`` order, which the file system decides; this scenario reads
them sorted by name, so the seeded evaluation sample is reproducible but not HELM's.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

ZIP_URL = "https://archive.org/download/ECHR-ACL2019/ECHR_Dataset.zip"
FOLDERS = {"EN_train": "train", "EN_dev": "valid", "EN_test": "test"}  # HELM's order
MEMBER = re.compile(r"^(?:.*/)?(EN_train|EN_dev|EN_test)/([^/]+\.json)$")
# our wording of HELM's instructions and its two trivial cases (one No, one Yes, in that order)
INSTRUCTIONS = ("Does the case below describe a violation of human rights? Answer Yes or No.\n\n"
                "Case: No human right was violated.\nAnswer: No\n\n"
                "Case: A human right was violated.\nAnswer: Yes")


class EchrParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filter_max_length: int | None = Field(600, ge=1)  # HELM's run spec; None keeps every case


def helm_word_count(text: str) -> int:
    """HELM's ``count_words``: the pieces of ``re.split(r"\\W+", text)``, empty ends included."""
    return len(re.split(r"\W+", text))


@scenario("echr_judgment_classification")
class EchrJudgmentClassification(Scenario[EchrParams]):
    VERSION = "1"
    SOURCE_REVISION = "ECHR-ACL2019"
    Params = EchrParams
    description = "ECHR: does a human rights case describe a violation, Yes or No (HELM Enterprise)."
    main_metric = "classification_weighted_f1"
    metrics = ["classification_weighted_f1", "exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = generation_spec("Case: ", "Answer", 1, ["\n"], instructions=INSTRUCTIONS)
    helm_wording = ("the Case:/Answer: layout, one token, five in-context examples and the two trivial cases in the "
                    "instructions follow HELM's run spec; the instructions and the trivial cases are helmflow's own "
                    "sentences")
    helm_differences = (
        "echr_judgment_classification: ECHR_Dataset.zip is read from HELM's archive.org URL, pinned by its sha256 "
        "(recorded at first fetch)",
        "echr_judgment_classification: each folder's cases are read sorted by file name (HELM reads them in "
        "os.listdir order, which the file system decides), so the evaluation sample differs from HELM's",
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="ECHR_Dataset.zip", url=self.web_url(ZIP_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["ECHR_Dataset.zip"]
        try:
            archive = zipfile.ZipFile(io.BytesIO(read_source(self.name, url)))
        except zipfile.BadZipFile as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a zip: {exc}") from None
        members: dict[str, list[str]] = {folder: [] for folder in FOLDERS}
        for name in archive.namelist():
            found = MEMBER.match(name)
            if found:
                members[found.group(1)].append(name)
        if not any(members.values()):
            raise ScenarioError(f"scenario {self.name!r}: {url} holds no EN_train/, EN_dev/ or EN_test/ JSON files")
        limit = self.params.filter_max_length
        out: list[Instance] = []
        for folder, split in FOLDERS.items():
            for name in sorted(members[folder], key=lambda n: n.rpartition("/")[2]):
                try:
                    case = json.loads(archive.read(name))
                    text, violated = " ".join(case["TEXT"]), case["VIOLATED_ARTICLES"]
                except (ValueError, KeyError, TypeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url}: {name} is not an ECHR case "
                                        f"(TEXT and VIOLATED_ARTICLES): {exc}") from None
                if limit is not None and helm_word_count(text) > limit:
                    continue
                out.append(Instance(id=f"{split}-{name.rpartition('/')[2].removesuffix('.json')}", split=split,
                                    input=Input(text=text),
                                    references=[Reference(text="Yes" if violated else "No", correct=True)]))
        return out
