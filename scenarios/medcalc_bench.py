"""MedCalc-Bench (Khandekar et al., 2024): compute a clinical value (a score, a dose, a date) from a patient
note, as MedHELM runs it (``medcalc_bench_scenario.py``, ``get_medcalc_bench_spec``).

HELM loads the Hub dataset ``ncbi/MedCalc-Bench`` unpinned and keeps its test split: the input is
``Patient note: <note>\\n`` then ``Question: <question>\\n`` (HELM's ``PassageQuestionInput``), the one reference
the ``Ground Truth Answer``, the id the ``Row Number``; the category and the ``Lower Limit``/``Upper Limit``
go to the metric (``metrics/medhelm.py``). Generation, 10 tokens, zero-shot.
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.medhelm import WORDING, generation

REPO = "ncbi/MedCalc-Bench"
TEST_FILE = "data/test-00000-of-00001.parquet"  # the Hub's Parquet layout [unverified: read from no snapshot]
COLUMNS = {"Row Number": "integer", "Category": "string", "Patient Note": "string", "Question": "string",
           "Ground Truth Answer": "string", "Lower Limit": "string", "Upper Limit": "string"}
INSTRUCTIONS = "Read the patient note and compute the clinical value the question asks for."
OUTPUT_NOUN = "Answer with the requested value alone, without units or explanation"


def helm_input(note: str, question: str) -> str:
    """HELM's ``PassageQuestionInput(passage=note + "\\n", question=question + "\\n",
    passage_prefix="Patient note: ")``."""
    return f"Patient note: {note}\n\nQuestion: {question}\n"


@scenario("medcalc_bench")
class MedCalcBench(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # HELM loads the dataset unpinned: runs from a mirror, pinned at first mirror
    description = "MedCalc-Bench: compute a clinical value from a patient note (MedHELM, clinical decision support)."
    main_metric = "medcalc_bench_accuracy"
    metrics = ["medcalc_bench_accuracy", "medcalc_bench_range_accuracy", "exact_match", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, None, OUTPUT_NOUN, 10)
    helm_wording = WORDING
    helm_differences = (
        "medcalc_bench: HELM loads ncbi/MedCalc-Bench from the Hub unpinned; this scenario reads a mirror of its test "
        "split's Parquet file, pinned by the sha256 recorded at first mirror (unverified against HELM's copy)",
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="test.parquet", url=self.hub_url(TEST_FILE), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_parquet_source(self.name, files["test.parquet"], COLUMNS).to_pylist()
        return [Instance(
            id=str(row["Row Number"]), split="test",
            input=Input(text=helm_input(row["Patient Note"], row["Question"])),
            references=[Reference(text=row["Ground Truth Answer"], correct=True)],
            extra={"category": row["Category"], "lower_limit": row["Lower Limit"], "upper_limit": row["Upper Limit"]},
        ) for row in rows]
