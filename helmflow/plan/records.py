"""The plan records: what a board's planning produces (scenarios, runs, the board), all versioned."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.plan.spec import BoardSpec
from helmflow.records import AdapterSpec, Deployment


class PerturbedFrom(BaseModel):
    """A perturbed scenario plan: the original it copies and the perturbation applied to its evaluated
    instances. Its scenario_version hashes the original's, the perturbation's version (algorithm,
    parameters, data sha256) and the evaluation sample (only sampled instances are perturbed)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Literal["robustness", "fairness", "multilinguality", "style"]
    version: dict[str, Any]
    label: str  # the original's label
    scenario_version: str  # the original's


class ScenarioPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    label: str
    params: dict[str, Any]
    key: str  # storage-safe name
    dataset_revision: str
    checksums: dict[str, str]
    # file -> why its bytes are not known to be the pinned data (a mirror without a matching
    # helmflow-mirror.json); empty when verified. Recorded in run.json and release.json, shown everywhere.
    unverified: dict[str, str] = Field(default_factory=dict)
    loader_version: str
    scenario_version: str
    adapter: AdapterSpec
    prompt_version: str
    main_metric: str
    metrics: list[str]
    group: str | None = None
    unsafe_text: bool = False  # the scenario declares harmful prompts (content warning, opt-in export)
    # an original's perturbations (their runs: BoardPlan.perturbed)
    perturbations: list[str] = Field(default_factory=list)
    # a perturbation of ``perturbations`` -> at most this many of the sampled instances are perturbed by it
    perturbation_instances: dict[str, int] = Field(default_factory=dict)
    perturbation: PerturbedFrom | None = None  # set on a perturbed copy: what it perturbs and how


class AdaptivePlan(BaseModel):
    """An adaptive run: at most ``max_items`` items, chosen by their easiness, from ``initial_ability``."""

    model_config = ConfigDict(extra="forbid")
    max_items: int
    initial_ability: float = 0.0


class RunPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: ScenarioPlan
    deployment: Deployment
    model_version: str
    metric_version: str
    metric_versions: dict[str, str]
    run_id: str
    query_key: str
    score_key: str
    judges: list[Deployment] = Field(default_factory=list)  # empty: the scenario is not judged, or --no-judge
    judge_templates: dict[str, str] = Field(default_factory=dict)  # template name -> VERSION
    judge_texts: dict[str, str] = Field(default_factory=dict)  # template name -> the board's replacement text
    scorer: Deployment | None = None  # the scorer of the scenario's board-wide metric that reads one
    scorer_template: str | None = None
    adaptive: AdaptivePlan | None = None
    full_run_id: str | None = None  # an adaptive run: the run id of the same cell asked in full
    # the board's ``context_overflow: refuse``: a prompt over the deployment's window refuses the run (no request)
    refuse_overflow: bool = False


def cell_name(plan: RunPlan) -> str:
    """How a board cell is named wherever a person reads it: task runs, artifacts, logs, retry.
    ASCII ``x``: the Prefect UI draws task names with a canvas font that has no ``×``."""
    return f"{plan.scenario.label} x {plan.deployment.name}"


class BoardPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: BoardSpec
    board_version: str
    scenarios: list[ScenarioPlan]
    runs: list[RunPlan]  # the originals' runs, then the perturbed scenarios' runs
    perturbed: list[ScenarioPlan] = Field(default_factory=list)  # perturbed copies of scenarios (not columns)
    # How this run narrows its board (Selection.narrowing: models, scenarios, sample, judges); empty for
    # the board as written. A release with a selection is a subset: it never moves ``latest.json``.
    selection: dict[str, Any] = Field(default_factory=dict)
    # scenario label -> why the board runs without it (its credential-gated data is not on this machine)
    left_out: dict[str, str] = Field(default_factory=dict)

    @property
    def subset(self) -> bool:
        return bool(self.selection)

    @property
    def headline_labels(self) -> list[str]:
        """The columns the board's mean score and mean win rate count: every entry's but those marked
        ``headline: false`` (the plans are the spec's entries, in order)."""
        return [s.label for s, e in zip(self.scenarios, self.spec.scenarios, strict=True) if e.headline]

    @property
    def all_scenarios(self) -> list[ScenarioPlan]:
        """Every scenario to prepare: the board's columns and their perturbed copies."""
        return [*self.scenarios, *self.perturbed]
