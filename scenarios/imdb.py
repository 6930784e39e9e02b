"""IMDB (Maas et al., 2011): the sentiment of a movie review, as HELM Classic runs it (``imdb_scenario.py``),
with AllenAI's contrast sets (Gardner et al., 2020).

The sources are HELM's: Stanford's ``aclImdb_v1.tar.gz`` (the archive's ``train`` folder is HELM's train
split, its ``test`` folder HELM's valid split), the file order HELM pins for reproducibility
(``imdb_scenario_pinned_file_order.json`` on CodaLab: split → ``pos``/``neg`` → file names; HELM's official
runs listed files in an arbitrary ``os.listdir`` order, kept here by that file), and the contrast sets'
``IMDb/data/{test,dev}_{original,contrast}.tsv`` from ``allenai/contrast-sets`` (branch ``main``).

Instances in HELM's order: train then valid, in each ``pos`` then ``neg``, files in the pinned order, ids
``id<i>``. The input is the review read as text and stripped; the reference ``Positive`` or ``Negative``. A
review that is the original of a contrast pair (TSV rows after the header, ``label<TAB>text``, originals and
contrasts paired by line) carries its contrast input and label (``extra``, read by the ``contrast_sets``
perturbation) and is moved to the valid split, as HELM does (the contrast originals come from the train
folder). ``only_contrast`` drops the valid-folder reviews without one. Generation (``Passage:`` /
``Sentiment:``), five examples, 5 tokens, stop at a newline; quasi-exact match and classification F1. No
checksums upstream: the pins are recorded at first fetch.
"""

from __future__ import annotations

import io
import json
import tarfile

from helmflow.perturbations import CONTRAST_INPUTS, CONTRAST_REFERENCES
from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.boolq import CLASSIC_METRICS, ContrastParams
from helmflow.scenarios.helm_lite import generation_spec

ARCHIVE_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
ARCHIVE = "aclImdb_v1.tar.gz"
ORDER_URL = "https://worksheets.codalab.org/rest/bundles/0xa75fa6eb8dc24e23a73d3a5ecb674b32/contents/blob/"
ORDER = "imdb_scenario_pinned_file_order.json"
CONTRAST_URL = "https://raw.githubusercontent.com/allenai/contrast-sets/main/IMDb/data"
CONTRAST_FILES = [f"{mode}_{kind}.tsv" for mode in ("test", "dev") for kind in ("original", "contrast")]
FOLDERS: dict[Split, str] = {"train": "train", "valid": "test"}  # HELM's split_to_subdirectory
LABELS = {"pos": "Positive", "neg": "Negative"}


def text_mode(data: bytes) -> str:
    """A file as Python's ``open(path, "r")`` reads it: UTF-8, universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def contrast_map(original: str, contrast: str) -> dict[str, dict[str, str]]:
    """HELM's ``get_contrast_map`` for one mode: original review -> its contrast review and label."""
    out: dict[str, dict[str, str]] = {}
    rows = zip(io.StringIO(original).readlines()[1:], io.StringIO(contrast).readlines()[1:])  # noqa: B905 - HELM's zip
    for orig_line, contrast_line in rows:
        orig_label, orig_text = orig_line.strip().split("\t")
        contrast_label, contrast_text = contrast_line.strip().split("\t")
        if orig_label not in LABELS.values() or contrast_label not in LABELS.values():
            raise ValueError(f"label {orig_label!r} or {contrast_label!r} is not Positive or Negative")
        if orig_text in out:
            raise ValueError(f"review {orig_text[:40]!r}... appears twice")
        out[orig_text] = {"original_answer": orig_label, "contrast_input": contrast_text,
                          "contrast_answer": contrast_label}
    return out


@scenario("imdb")
class IMDB(Scenario[ContrastParams]):
    VERSION = "1"
    SOURCE_REVISION = "aclImdb_v1"
    Params = ContrastParams
    description = "IMDB: is a movie review positive or negative? (HELM Classic), with contrast sets."
    main_metric = "quasi_exact_match"
    metrics = [*CLASSIC_METRICS, "classification_f1"]
    helm_wording = ("the Passage:/Sentiment: layout, the blank line between examples, five in-context examples and 5 "
                    "output tokens follow HELM's generation adapter; no instructions, as in HELM")
    helm_differences = ("imdb: Stanford's archive, HELM's pinned file order (CodaLab) and the main branch of "
                        "allenai/contrast-sets are pinned by their sha256 (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Passage: ", "Sentiment", 5, ["\n"])

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=ARCHIVE, url=self.web_url(ARCHIVE_URL), sha256_unknown=True),
                DataSource(filename=ORDER, url=self.web_url(ORDER_URL), sha256_unknown=True),
                *(DataSource(filename=name, url=self.web_url(f"{CONTRAST_URL}/{name}"), sha256_unknown=True)
                  for name in CONTRAST_FILES)]

    def _reviews(self, url: str) -> dict[str, bytes]:
        """``<folder>/<class>/<file>`` -> bytes, for the train and test reviews of the archive."""
        out: dict[str, bytes] = {}
        try:
            with tarfile.open(fileobj=io.BytesIO(read_source(self.name, url)), mode="r:*") as tar:
                for member in tar:
                    parts = member.name.split("/")
                    if (member.isfile() and len(parts) == 4 and parts[0] == "aclImdb"
                            and parts[1] in FOLDERS.values() and parts[2] in LABELS):
                        handle = tar.extractfile(member)
                        if handle is not None:
                            out["/".join(parts[1:])] = handle.read()
        except tarfile.TarError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable tar archive: {exc}") from None
        return out

    def load(self, files: dict[str, str]) -> list[Instance]:
        texts = {n: text_mode(read_source(self.name, files[n])) for n in (*CONTRAST_FILES, ORDER)}
        try:
            contrasts = {**contrast_map(texts["test_original.tsv"], texts["test_contrast.tsv"]),
                         **contrast_map(texts["dev_original.tsv"], texts["dev_contrast.tsv"])}
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: contrast sets: {exc}") from None
        try:
            order = json.loads(texts[ORDER])
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[ORDER]} is not JSON: {exc}") from None
        reviews = self._reviews(files[ARCHIVE])
        out: list[Instance] = []
        for split, folder in FOLDERS.items():
            for label, answer in LABELS.items():
                try:
                    names = order[split][label]
                except (KeyError, TypeError):
                    raise ScenarioError(f"scenario {self.name!r}: {files[ORDER]} has no file order for "
                                        f"{split}/{label}") from None
                for name in names:
                    key = f"{folder}/{label}/{name}"
                    if key not in reviews:
                        raise ScenarioError(f"scenario {self.name!r}: {files[ARCHIVE]} has no aclImdb/{key} "
                                            f"(named by {ORDER})")
                    review = text_mode(reviews[key]).strip()
                    contrast = contrasts.get(review)
                    if contrast is None and self.params.only_contrast and split == "valid":
                        continue
                    extra = ({CONTRAST_INPUTS: [contrast["contrast_input"]],
                              CONTRAST_REFERENCES: [[contrast["contrast_answer"]]]} if contrast else {})
                    out.append(Instance(id=f"id{len(out)}", split="valid" if contrast else split,
                                        input=Input(text=review), references=[Reference(text=answer, correct=True)],
                                        extra=extra))
        return out
