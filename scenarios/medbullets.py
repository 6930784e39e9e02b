"""MedBullets (Chen et al., 2024): USMLE Step 2/3-style clinical vignettes with five options, as MedHELM runs it
(``medbullets_scenario.py``, ``get_medbullets_run_spec``).

HELM reads ``medbullets/medbullets_op5.csv`` of ``HanjieChen/ChallengeClinicalQA`` from the ``main`` branch (no
commit), all as its test split, skipping rows without ``question``, ``answer_idx`` or ``opa``. The input is
``question``; the references are ``opa`` to ``ope`` (options A to E), the one named by ``answer_idx`` correct.
Multiple choice joint (``Clinical Scenario:``), zero-shot.
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.medhelm import WORDING, multiple_choice

URL = "https://raw.githubusercontent.com/HanjieChen/ChallengeClinicalQA/refs/heads/main/medbullets/medbullets_op5.csv"
OPTIONS = {"A": "opa", "B": "opb", "C": "opc", "D": "opd", "E": "ope"}
INSTRUCTIONS = ("You answer medical questions like those of the USMLE Step 2 and 3 exams: a clinical scenario, then "
                "options. Reply with the letter of the correct option alone (A, B, C, D or E).")


@scenario("medbullets")
class MedBullets(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "main-branch"
    description = "MedBullets: USMLE Step 2/3-style clinical questions with five options (MedHELM)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = multiple_choice(INSTRUCTIONS, "Clinical Scenario", "Answer")
    helm_wording = WORDING
    pin_unverified = ("HELM reads the main branch of HanjieChen/ChallengeClinicalQA, which can move; the sha256 "
                      "recorded at first fetch pins what this machine read, not what HELM read")
    helm_differences = ("medbullets: medbullets_op5.csv is read from the main branch HELM reads (no commit), pinned by "
                        "the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="medbullets_op5.csv", url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_csv_source(self.name, files["medbullets_op5.csv"], ["question", "answer_idx", "opa"])
        out: list[Instance] = []
        for row in rows:
            if not row.get("question") or not row.get("answer_idx") or not row.get("opa"):
                continue
            refs = [Reference(text=row.get(column) or "Not applicable", correct=letter == row["answer_idx"])
                    for letter, column in OPTIONS.items()]
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row["question"]), references=refs))
        return out
