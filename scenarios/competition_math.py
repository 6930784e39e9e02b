"""MATH (Hendrycks et al. 2021, ``hendrycks/competition_math``) as HELM runs it: with chain of thought (HELM
Lite, HELM Classic's ``math_chain_of_thought``), or the answer alone after eight official examples (HELM
Classic's ``math_regular``).

Instances follow HELM's ``MATHScenario(use_chain_of_thought=True)``: each split is sorted by
``problem`` then shuffled with seed 42 (``datasets``' ``sort`` then ``shuffle(seed=42)``, i.e. the
sorted rows taken in ``numpy.random.default_rng(42).permutation(n)`` order), filtered to one subject
(``type``) and level; train instances, then test ones, get ids ``id<index>`` in that order (HELM's
``with_instance_ids``). The reference is the whole worked solution, whose last ``\\boxed{}`` is the
answer; the 8 in-context examples are drawn from the same subject and level's train rows.

HELM's run spec (``lite_run_specs.get_math_spec``): its instruction, ``Problem: `` / ``Answer: ``,
``###`` between examples and as the stop sequence, 400 tokens, temperature 0. Lite runs level 1 of
the 7 subjects (``--priority 2``); the board's MATH column is the macro mean over them.

Without chain of thought (``use_chain_of_thought=false``, HELM's ``math_regular``) each reference is the
solution's last ``\\boxed{}`` answer alone (a solution without one is refused, naming the problem: HELM's
loader stops on it too, with a ``KeyError``), the output is framed ``Answer: $...$`` and cut at the first
``$``, 20 tokens, scored by ``math_equiv``. With ``use_official_examples`` (HELM Classic's priority-2 entries; it needs
``use_chain_of_thought=false``, as HELM asserts) the train split is HELM's eight fixed problems with their
answers (``math_scenario.py``), ids ``id0``-``id7``, and the test problems follow from ``id8``. The two
switches join the scenario's key only when set away from their defaults, so Lite's runs keep their versions.

Data: HELM loads the script-based Hub dataset at revision ``71b758ec…`` with ``trust_remote_code``.
The dataset was taken off the Hub (DMCA, January 2025), so nothing here is fetched from it: the
scenario reads the dataset's Parquet conversion (``refs/convert/parquet``: ``default/train/0000.parquet``,
``default/test/0000.parquet``, columns problem, level, type, solution) from a mirror only
(``$HELMFLOW_MIRROR_MATH`` or ``$HELMFLOW_MIRROR``), and pins the files' sha256 at first use.
"""

from __future__ import annotations

import ast
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from helmflow.metrics.math_cot import boxed_answer
from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source, read_source
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
# HELM's ``use_official_examples`` train split is written in its scenario's source (MATHScenario.get_instances: a
# list ``train_instances`` of (problem, answer) pairs, Hendrycks et al.'s prompt); it is read from that file at
# HELM's release v0.5.16, as data (its syntax tree, never run), not copied here
HELM_COMMIT = "ef439fc94e58568fd1274d5c07ceb1b711360a55"  # stanford-crfm/helm tag v0.5.16
HELM_SOURCE = "math_scenario.py"
HELM_SOURCE_URL = (f"https://raw.githubusercontent.com/stanford-crfm/helm/{HELM_COMMIT}/src/helm/benchmark/"
                   f"scenarios/{HELM_SOURCE}")
N_OFFICIAL = 8


class MATHParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Literal[
        "algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory", "prealgebra",
        "precalculus",
    ]  # fmt: skip
    level: int = Field(1, ge=1, le=5)  # Lite: level 1 only
    follow_format: bool = False  # HELM's instruction-following variant (helmflow.scenarios.helm_lite)
    # HELM's math_chain_of_thought (true: the worked solution is the reference) or math_regular (false: its answer)
    use_chain_of_thought: bool = True
    use_official_examples: bool = False  # HELM's eight fixed examples as the train split (math_regular only)

    @model_validator(mode="after")
    def _official_examples_are_regular(self) -> MATHParams:
        if self.use_official_examples and self.use_chain_of_thought:
            raise ValueError("use_official_examples=true needs use_chain_of_thought=false (HELM's official examples "
                             "are answers without worked solutions)")
        return self


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
    description = ("MATH: competition mathematics, one subject and level per run; chain of thought (the last "
                   "\\boxed{} answer is scored) or, as HELM Classic's math_regular, the answer alone.")
    main_metric = "math_equiv_chain_of_thought"
    metrics = ["math_equiv_chain_of_thought", "math_verify_chain_of_thought", "efficiency"]

    def __init__(self, **params):
        super().__init__(**params)
        if not self.params.use_chain_of_thought:  # HELM's math_regular: the answer alone, scored by math_equiv
            self.main_metric = "math_equiv"  # type: ignore[misc]
            self.metrics = ["math_equiv", "efficiency"]  # type: ignore[misc]

    @property
    def param_dict(self) -> dict[str, Any]:
        """The parameters, HELM Classic's two switches only when set away from their defaults (Lite's keys stay)."""
        params = super().param_dict
        if params["use_chain_of_thought"]:
            del params["use_chain_of_thought"]
        if not params["use_official_examples"]:
            del params["use_official_examples"]
        return params

    @property
    def default_adapter(self) -> AdapterSpec:
        if self.params.use_chain_of_thought:
            spec = AdapterSpec(
                method="generation", instructions=INSTRUCTIONS, input_prefix="Problem: ", input_suffix="\n",
                output_prefix="Answer: ", output_suffix="\n", instance_prefix="###\n", max_train_instances=8,
                generation=GenerationParams(max_tokens=400, temperature=0.0, stop=["###"], num_outputs=1),
            )
        else:  # HELM's math_regular: the answer between LaTeX dollars, cut at the closing one
            spec = AdapterSpec(
                method="generation", instructions=INSTRUCTIONS, input_prefix="Problem: ", input_suffix="\n",
                output_prefix="Answer: $", output_suffix="$\n", instance_prefix="###\n", max_train_instances=8,
                generation=GenerationParams(max_tokens=20, temperature=0.0, stop=["$"], num_outputs=1),
            )
        return with_follow_format(spec) if self.params.follow_format else spec
    helm_wording = ("HELM's instruction sentence, Problem:/Answer: labels, ### between examples and eight "
                    "same-subject worked examples (without chain of thought: their answers between $ signs; with "
                    "use_official_examples, HELM's eight fixed examples read from its source), byte for byte; with "
                    "follow_format, the opening and closing requests are helmflow's own wording of HELM's "
                    "instruction-following prefix and suffix")
    helm_differences = (
        f"MATH data: HELM loads the script-based Hub dataset {REPO} at {HELM_REVISION[:8]} with trust_remote_code; it "
        "was taken off the Hub (DMCA, January 2025), so this scenario reads the dataset's Parquet conversion from "
        "a mirror only, its sha256 pinned at first use (the instances are the same rows in HELM's order).",
    )

    def sources(self) -> list[DataSource]:
        files = [DataSource(filename=name, url=self.hub_url(path)) for name, (path, _) in FILES.items()]
        if self.params.use_official_examples:  # HELM's eight examples, from its scenario's source at v0.5.16
            files.append(DataSource(filename=HELM_SOURCE, url=self.web_url(HELM_SOURCE_URL)))
        return files

    def _reference(self, solution: str | None) -> str | None:
        """The worked solution (chain of thought) or its last boxed answer (HELM's get_answer)."""
        return solution if self.params.use_chain_of_thought else boxed_answer(solution)

    def load(self, files: dict[str, str]) -> list[Instance]:
        subject, level = SUBJECTS[self.params.subject], f"Level {self.params.level}"
        extra = {"subject": self.params.subject, "level": self.params.level}
        out: list[Instance] = []
        if self.params.use_official_examples:
            for problem, answer in official_examples(self.name, files[HELM_SOURCE]):
                out.append(Instance(id=f"id{len(out)}", split="train", input=Input(text=problem),
                                    references=[Reference(text=answer, correct=True)], extra=extra))
        for name, (_, split) in FILES.items():
            if split == "train" and self.params.use_official_examples:
                continue
            rows = read_parquet_source(self.name, files[name], COLUMNS).to_pylist()
            for row in helm_order(rows):
                if row["type"] == subject and row["level"] == level:
                    reference = self._reference(row["solution"])
                    if reference is None:  # HELM's loop skips setting its answer, then fails on it (KeyError)
                        raise ScenarioError(
                            f"scenario {self.name!r}: {name}: the solution of the {split} problem "
                            f"{row['problem'][:80]!r} has no \\boxed{{}} answer, which use_chain_of_thought=false "
                            "scores against (HELM's loader stops on it too)")
                    out.append(Instance(
                        id=f"id{len(out)}",
                        split=split,
                        input=Input(text=row["problem"]),
                        references=[Reference(text=reference, correct=True)],
                        extra=extra,
                    ))  # fmt: skip
        if not any(i.split == "test" for i in out):
            raise ScenarioError(f"scenario {self.name!r}: no test problem has type {subject!r} and level {level!r}")
        return out


def _literal(node: ast.expr) -> Any:
    """A string, a sum of strings, or a tuple or list of them, from the syntax tree; anything else raises."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_literal(e) for e in node.elts]
    raise ValueError(f"line {node.lineno}: not a string literal ({type(node).__name__})")


def official_examples(scenario: str, url: str) -> list[tuple[str, str]]:
    """HELM's ``train_instances`` of ``MATHScenario.get_instances``: (problem, answer) pairs, read from the
    source file's syntax tree (parsed, never run)."""
    try:
        tree = ast.parse(read_source(scenario, url).decode("utf-8"))
        found = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "train_instances" for t in node.targets)]
        if len(found) != 1:
            raise ValueError(f"{len(found)} assignments to train_instances")
        pairs = _literal(found[0])
        if not (isinstance(pairs, list) and len(pairs) == N_OFFICIAL
                and all(isinstance(p, list) and len(p) == 2 for p in pairs)):
            raise ValueError(f"train_instances is not a list of {N_OFFICIAL} (problem, answer) pairs")
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} does not hold HELM's official MATH examples "
                            f"(one assignment train_instances = [({N_OFFICIAL} string pairs)]): {exc}") from None
    return [(problem, answer) for problem, answer in pairs]
