"""ACI-Bench (Yim et al., 2023): patient-doctor conversations with the clinical note written from them, as
MedHELM runs it (``aci_bench_scenario.py``, ``get_aci_bench_run_spec``).

HELM reads ``challenge_data_json/`` of ``wyim/aci-bench`` at its commit: ``train_full.json`` as train and the
three test files (``clinicalnlp_taskB_test1_full.json``, ``clef_taskC_test3_full.json``,
``clinicalnlp_taskC_test2_full.json``, in that order) as test. Each file's ``data`` lists ``{src, tgt}``: the input
is ``Doctor-patient dialogue:``, a blank line and ``src``; the one reference is the note ``tgt``. Generation
(``Conversation:``/``Clinical Note:``, 768 tokens, no stop sequence, a four-section note asked for), scored by
MedHELM's LLM jury (``aci_bench_accuracy``, default 1 when no judge parses, as HELM sets it).
"""

from __future__ import annotations

import json

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation

COMMIT = "e75b383172195414a7a68843ec4876e83e5409f7"
FILES = (("train_full.json", "train"), ("clinicalnlp_taskB_test1_full.json", "test"),
         ("clef_taskC_test3_full.json", "test"), ("clinicalnlp_taskC_test2_full.json", "test"))
INSTRUCTIONS = ("Write the clinical note for the conversation below, in four sections:\n"
                "1. HISTORY OF PRESENT ILLNESS\n2. PHYSICAL EXAM\n3. RESULTS\n4. ASSESSMENT AND PLAN\n\n"
                "The conversation:")


@scenario("aci_bench")
class ACIBench(Scenario):
    VERSION = "1"
    GIT_REPO = "wyim/aci-bench"
    GIT_COMMIT = COMMIT
    description = "ACI-Bench: clinical notes from patient-doctor conversations, judged by an LLM jury (MedHELM)."
    main_metric = "aci_bench_accuracy"
    metrics = ["aci_bench_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Conversation", "Clinical Note", 768, stop=())
    helm_wording = WORDING
    helm_differences = ("aci_bench: the four JSON files are read at HELM's commit, pinned by the sha256 recorded at "
                        "first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.git_url(f"data/challenge_data_json/{name}"), sha256_unknown=True)
                for name, _ in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in FILES:
            url = files[name]
            try:
                pairs = [(e["src"], e["tgt"]) for e in json.loads(read_source(self.name, url))["data"]]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON object whose data lists src and "
                                    f"tgt: {exc!r}") from None
            out.extend(Instance(id=f"id{len(out) + k}", split=split,
                                input=Input(text=f"Doctor-patient dialogue:\n\n{src}"),
                                references=[Reference(text=tgt, correct=True)]) for k, (src, tgt) in enumerate(pairs))
        return out
