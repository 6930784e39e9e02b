"""MEDEC (Ben Abacha et al., 2025): clinical notes, one sentence per line, either correct or with one medical
error, as MedHELM runs it (``medec_scenario.py``, ``get_medec_run_spec``).

HELM reads the MEDEC-MS test CSV (with ground truth) at its commit; a row without ``Sentences`` is skipped.
The input is the stripped ``Sentences``; the one reference is ``<Error Sentence ID> <Corrected Sentence>`` when
``Error Flag`` is 1, the corrected sentence is not ``NA`` and the id is not ``-1``, else ``CORRECT``.
Generation (``Clinical Note:``/``Answer:``, 256 tokens, no stop sequence), scored by HELM's MEDEC metric
(``metrics/medhelm.py``). The training CSV HELM names is never read.
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.medhelm import WORDING, generation

COMMIT = "49c59dcba43a7af8717590a405b11a57f42b04df"
TEST_PATH = "MEDEC-MS/MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv"
COLUMNS = ["Sentences", "Error Flag", "Error Sentence ID", "Corrected Sentence"]
INSTRUCTIONS = (
    "You are a physician reviewing a clinical note about a patient. Each line of the note is one sentence: its "
    "sentence ID, a space, then the sentence. The note is either correct or has exactly one medical error. Check "
    "every sentence. If the note is correct, answer CORRECT. If it has an error, answer with the ID of the "
    "sentence holding the error, a space, and the corrected sentence."
)


def reference(row: dict[str, str]) -> str:
    """HELM's reference text for one CSV row."""
    flag = int(row.get("Error Flag") or 0)
    sentence_id = (row.get("Error Sentence ID") or "-1").strip()
    corrected = (row.get("Corrected Sentence") or "").strip()
    if flag == 1 and corrected != "NA" and sentence_id != "-1":
        return f"{sentence_id} {corrected}"
    return "CORRECT"


@scenario("medec")
class Medec(Scenario):
    VERSION = "1"
    GIT_REPO = "abachaa/MEDEC"
    GIT_COMMIT = COMMIT
    description = "MEDEC: find and correct the medical error in a clinical note, or say it is correct (MedHELM)."
    main_metric = "medec_error_flag_accuracy"
    metrics = ["medec_error_flag_accuracy", "medec_error_sentence_accuracy", "medec_error_sentence_id_accuracy",
               "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Clinical Note", "Answer", 256, stop=())
    helm_wording = WORDING
    helm_differences = ("medec: the test CSV is read at HELM's commit, pinned by the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="test.csv", url=self.git_url(TEST_PATH), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        url = files["test.csv"]
        for index, row in enumerate(read_csv_source(self.name, url, COLUMNS)):
            if not row.get("Sentences"):
                continue
            try:
                ref = reference(row)
            except ValueError:
                raise ScenarioError(f"scenario {self.name!r}: {url}: data row {index}: Error Flag "
                                    f"{row['Error Flag']!r} is not an integer") from None
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row["Sentences"].strip()),
                                references=[Reference(text=ref, correct=True)]))
        return out
