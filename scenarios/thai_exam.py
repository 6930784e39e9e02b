"""ThaiExam (SCB 10X, the Typhoon paper): Thai multiple-choice examinations, one exam per run, as HELM's Thai board
runs them (``thai_exam_scenario.py``, run spec ``get_thai_exam_spec``).

The source is ``thai_exam.tar.gz`` of the Hub dataset ``scb10x/thai_exam`` at HELM's revision ``d78aef04…``
(ThaiExam v1.0), HELM's URL ``…/resolve/<revision>/thai_exam.tar.gz``. HELM unpacks it, dropping the archive's
single top-level folder when it has one (``ensure_file_downloaded``), and reads ``<exam>/<exam>_train.jsonl``
(the in-context pool) then ``<exam>/<exam>_test.jsonl``, skipping a split whose file is absent. Each line has a
``question``, options ``a`` to ``e`` (missing or empty ones are left out: some exams have four) and the keyed
letter ``answer``; every option whose text equals the keyed one is correct (HELM's rule). Ids ``id<i>`` count
train then test rows. The five exams (:data:`EXAMS`): ONET, IC, TGAT, TPAT-1 and A-Level. The text is read as
UTF-8 and never normalised: Thai has no spaces between words, and a composed vowel such as SARA AM (U+0E33)
stays the code point it is in the file.

Multiple choice joint with HELM's layout (``Question:``, ``A.`` to ``E.``, ``Answer:``), five in-context examples,
one output token; exact match.
"""

from __future__ import annotations

import io
import json
import tarfile
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import multiple_choice_spec

REPO = "scb10x/thai_exam"
REVISION = "d78aef04ea3cc5095545e6951cb39e17c64e26a1"  # HELM's pin: ThaiExam v1.0
ARCHIVE = "thai_exam.tar.gz"
EXAMS = ("onet", "ic", "tgat", "tpat1", "a_level")
Exam = Literal["onet", "ic", "tgat", "tpat1", "a_level"]
SPLITS = {"train": "train", "test": "test"}  # file suffix -> split, in HELM's order
KEYS = "abcde"
# our wording of HELM's instructions line (HELM's says that multiple-choice questions with answers follow)
INSTRUCTIONS = "Answer each multiple-choice question with the letter of the correct option."


class ThaiExamParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    exam: Exam = "onet"


def thai_exam_spec() -> AdapterSpec:
    """HELM's ``get_thai_exam_spec``: multiple choice joint, ``Question:``/``Answer:``, five examples, one token."""
    return multiple_choice_spec("").model_copy(update={"instructions": INSTRUCTIONS})


def archive_members(scenario: str, url: str) -> dict[str, bytes]:
    """The archive's files by path, with its single top-level folder dropped when it has one (HELM unpacks the
    tar and moves a lone top-level entry into place). Members are read, never extracted to disk."""
    try:
        with tarfile.open(fileobj=io.BytesIO(read_source(scenario, url)), mode="r:*") as tar:
            files = {m.name.removeprefix("./"): tar.extractfile(m) for m in tar.getmembers() if m.isfile()}
            contents = {name: fh.read() for name, fh in files.items() if fh is not None}
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable tar archive: {exc}") from None
    tops = {name.split("/", 1)[0] for name in contents}
    if len(tops) == 1 and all("/" in name for name in contents):
        contents = {name.split("/", 1)[1]: data for name, data in contents.items()}
    return contents


@scenario("thai_exam")
class ThaiExam(Scenario[ThaiExamParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = ThaiExamParams
    description = "ThaiExam: Thai multiple-choice examinations (ONET, IC, TGAT, TPAT-1, A-Level), one exam per run."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter = thai_exam_spec()
    helm_wording = ("the Question:, lettered-option and Answer: layout, five in-context examples and one output token "
                    "follow HELM's run spec; the instructions line is helmflow's own sentence (HELM's says that "
                    "multiple-choice questions with answers follow); thai_exam.instructions replaces it")
    pin_unverified = (f"the folders inside {ARCHIVE} (<exam>/<exam>_<split>.jsonl, under at most one top-level "
                      "folder) follow HELM's loader and were not checked against the archive at this revision")

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=ARCHIVE, url=self.hub_url(ARCHIVE))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[ARCHIVE]
        members = archive_members(self.name, url)
        exam = self.params.exam
        out: list[Instance] = []
        found = False
        for suffix, split in SPLITS.items():
            path = f"{exam}/{exam}_{suffix}.jsonl"
            if path not in members:
                continue  # HELM skips a split whose file is absent
            found = True
            try:
                text = members[path].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url}: {path} is not UTF-8 text: {exc}") from None
            for number, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                out.append(self.instance(f"{url}: {path} line {number}", line, len(out), split))
        if not found:
            raise ScenarioError(f"scenario {self.name!r}: {url} holds no {exam}/{exam}_test.jsonl or "
                                f"{exam}/{exam}_train.jsonl; it has: {', '.join(sorted(members)[:10]) or 'no files'}")
        return out

    def instance(self, where: str, line: str, index: int, split: str) -> Instance:
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {where} is not JSON: {exc}") from None
        if not isinstance(row, dict) or not isinstance(row.get("question"), str) \
                or not isinstance(row.get("answer"), str):
            raise ScenarioError(f"scenario {self.name!r}: {where}: expected an object with a question and an answer")
        options = [row[k] for k in KEYS if k in row and row[k] != ""]  # HELM's rule: absent or empty options go
        if not all(isinstance(o, str) for o in options):
            raise ScenarioError(f"scenario {self.name!r}: {where}: options a to e must be text")
        keyed = dict(zip("ABCDE", options, strict=False)).get(row["answer"].upper())
        if keyed is None:
            raise ScenarioError(f"scenario {self.name!r}: {where}: answer {row['answer']!r} names none of its "
                                f"{len(options)} options")
        return Instance(id=f"id{index}", split=split, input=Input(text=row["question"]),
                        references=[Reference(text=o, correct=o == keyed) for o in options])
