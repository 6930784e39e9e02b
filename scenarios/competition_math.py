"""MATH (Hendrycks et al. 2021, ``hendrycks/competition_math``) with chain of thought, as HELM Lite runs it.

Instances follow HELM's ``MATHScenario(use_chain_of_thought=True)``: each split is sorted by
``problem`` then shuffled with seed 42 (``datasets``' ``sort`` then ``shuffle(seed=42)``, i.e. the
sorted rows taken in ``numpy.random.default_rng(42).permutation(n)`` order), filtered to one subject
(``type``) and level; train instances, then test ones, get ids ``id<index>`` in that order (HELM's
``with_instance_ids``). The reference is the whole worked solution, whose last ``\\boxed{}`` is the
answer; the 8 in-context examples are drawn from the same subject and level's train rows.

HELM's run spec (``lite_run_specs.get_math_spec``): its instruction, ``Problem: `` / ``Answer: ``,
``###`` between examples and as the stop sequence, 400 tokens, temperature 0. Lite runs level 1 of
the 7 subjects (``--priority 2``); the board's MATH column is the macro mean over them.

Data: HELM loads the script-based Hub dataset at revision ``71b758ec…`` with ``trust_remote_code``.
The dataset was taken off the Hub (DMCA, January 2025), so nothing here is fetched from it: the
scenario reads the dataset's Parquet conversion (``refs/convert/parquet``: ``default/train/0000.parquet``,
``default/test/0000.parquet``, columns problem, level, type, solution) from a mirror only
(``$HELMFLOW_MIRROR_MATH`` or ``$HELMFLOW_MIRROR``), and pins the files' sha256 at first use.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.helm_lite import with_follow_format

REPO = "hendrycks/competition_math"
HELM_REVISION = "71b758ecc688b2822d07ffa7f8393299f1dc7cac"  # HELM's script revision (no longer on the Hub)
FILES = {"train.parquet": ("default/train/0000.parquet", "train"),
         "test.parquet": ("default/test/0000.parquet", "test")}
COLUMNS = {"problem": "string", "level": "string", "type": "string", "solution": "string"}
SUBJECTS = {  # HELM's parameter -> the dataset's ``type``
    "algebra": "Algebra",
    "counting_and_probability": "Counting & Probability",
    "geometry": "Geometry",
    "intermediate_algebra": "Intermediate Algebra",
    "number_theory": "Number Theory",
    "prealgebra": "Prealgebra",
    "precalculus": "Precalculus",
}
SHUFFLE_SEED = 42
INSTRUCTIONS = "Given a mathematics problem, determine the answer. Simplify your answer as much as possible."


class MATHParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Literal[
        "algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory", "prealgebra",
        "precalculus",
    ]  # fmt: skip
    level: int = Field(1, ge=1, le=5)  # Lite: level 1 only
    follow_format: bool = False  # HELM's instruction-following variant (helmflow.scenarios.helm_lite)


def helm_order(rows: list[dict]) -> list[dict]:
    """``Dataset.sort("problem").shuffle(seed=42)``: a stable sort by problem, then a seeded permutation."""
    ordered = sorted(rows, key=lambda r: r["problem"])
    return [ordered[int(k)] for k in np.random.default_rng(SHUFFLE_SEED).permutation(len(ordered))]


@scenario("math")
class CompetitionMATH(Scenario[MATHParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # taken off the Hub: runs from a mirror of the Parquet conversion only
    Params = MATHParams
    description = ("MATH: competition mathematics, one subject and level per run; "
                   "chain of thought, the last \\boxed{} answer is scored.")
    main_metric = "math_equiv_chain_of_thought"
    metrics = ["math_equiv_chain_of_thought", "math_verify_chain_of_thought", "efficiency"]

    @property
    def default_adapter(self) -> AdapterSpec:
        spec = AdapterSpec(
            method="generation", instructions=INSTRUCTIONS, input_prefix="Problem: ", input_suffix="\n",
            output_prefix="Answer: ", output_suffix="\n", instance_prefix="###\n", max_train_instances=8,
            generation=GenerationParams(max_tokens=400, temperature=0.0, stop=["###"], num_outputs=1),
        )
        return with_follow_format(spec) if self.params.follow_format else spec
    helm_wording = ("HELM's instruction sentence, Problem:/Answer: labels, ### between examples and eight "
                    "same-subject worked examples, byte for byte; with follow_format, the opening and closing "
                    "requests are helmflow's own wording of HELM's instruction-following prefix and suffix")
    helm_differences = (
        f"MATH data: HELM loads the script-based Hub dataset {REPO} at {HELM_REVISION[:8]} with trust_remote_code; it "
        "was taken off the Hub (DMCA, January 2025), so this scenario reads the dataset's Parquet conversion from "
        "a mirror only, its sha256 pinned at first use (the instances are the same rows in HELM's order).",
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(path)) for name, (path, _) in FILES.items()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        subject, level = SUBJECTS[self.params.subject], f"Level {self.params.level}"
        out: list[Instance] = []
        for name, (_, split) in FILES.items():
            rows = read_parquet_source(self.name, files[name], COLUMNS).to_pylist()
            for row in helm_order(rows):
                if row["type"] == subject and row["level"] == level:
                    out.append(Instance(
                        id=f"id{len(out)}",
                        split=split,
                        input=Input(text=row["problem"]),
                        references=[Reference(text=row["solution"], correct=True)],
                        extra={"subject": self.params.subject, "level": self.params.level},
                    ))  # fmt: skip
        if not any(i.split == "test" for i in out):
            raise ScenarioError(f"scenario {self.name!r}: no test problem has type {subject!r} and level {level!r}")
        return out
