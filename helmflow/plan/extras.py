"""Board-wide additions: what planning adds to a board beyond its scenario entries (perturbed copies
and their metric groups, the toxicity and bias metrics on generation scenarios and their groups)."""

from __future__ import annotations

from helmflow import versions
from helmflow.plan.records import PerturbedFrom, ScenarioPlan
from helmflow.plan.spec import BoardError, GroupColumn, MetricGroup
from helmflow.records import Deployment

PERTURBED_MARK = "~"  # a perturbed copy's label: ``<label>~<perturbation>``


def perturbed_plans(scenario: ScenarioPlan) -> list[ScenarioPlan]:
    """One plan per perturbation of a scenario: same data, adapter and metrics, its own scenario_version
    (so its own instances file, prompts and run ids, cached like any run)."""
    from helmflow.perturbations import PERTURBATIONS

    out = []
    for name in scenario.perturbations:
        p = PERTURBATIONS.get(name)
        version = p.version_data()
        sv = versions.stable_hash({"original": scenario.scenario_version, "perturbation": version,
                                   "sample": scenario.adapter.sample})
        out.append(scenario.model_copy(update={
            "label": f"{scenario.label}{PERTURBED_MARK}{name}",
            "scenario_version": sv,
            "perturbations": [],
            "perturbation": PerturbedFrom(name=name, kind=p.kind, version=version, label=scenario.label,
                                          scenario_version=scenario.scenario_version),
        }))
    return out


def perturbation_groups(scenarios: list[ScenarioPlan], existing: list[MetricGroup]) -> list[MetricGroup]:
    """HELM's robustness and fairness metric groups: one column per scenario that runs that kind of
    perturbation (``<label>/robustness``: the per-instance worst case of the main metric over the
    original and the perturbations, then the mean). A board that names such a group itself keeps its own."""
    from helmflow.perturbations import PERTURBATIONS

    groups = []
    taken = {g.name for g in existing}
    for kind, what in (("robustness", "perturbations that keep the meaning (casing, contractions, misspellings, spacing)"),
                       ("fairness", "perturbations of demographic markers (gender pronouns, first names by race)")):
        columns = [
            GroupColumn(scenario=s.label, metric=kind, description=(
                f"{s.main_metric}, worst case per instance over the original and its {kind} perturbations "
                f"({', '.join(n for n in s.perturbations if PERTURBATIONS.get(n).kind == kind)}), then the mean"))
            for s in scenarios if any(PERTURBATIONS.get(n).kind == kind for n in s.perturbations)
        ]
        if columns and kind not in taken:
            groups.append(MetricGroup(name=kind, description=f"the main metric under {what}; higher is better",
                                      columns=columns))
    return groups

TOXICITY_METRIC = "toxicity"
GENERATION_METHODS = ("generation", "chat")  # the adapters whose outputs are free text a scorer can read


def scorer_template_for(scorer: Deployment) -> str:
    """Classifier kinds (Perspective, profanity-check) are sent the output as it is; an LLM gets our template."""
    from helmflow.clients import CLIENTS
    from helmflow.metrics.toxicity import template_for

    return template_for(CLIENTS.get(scorer.client).classifier)


def with_toxicity(scenario: ScenarioPlan, scorer: Deployment | None) -> ScenarioPlan:
    """A generation scenario gets the toxicity metric when the board has a scorer (HELM's toxicity is
    "a metric any generation scenario can use"); multiple-choice scenarios answer letters."""
    if scorer is None or scenario.adapter.method not in GENERATION_METHODS or TOXICITY_METRIC in scenario.metrics:
        return scenario
    return scenario.model_copy(update={"metrics": [*scenario.metrics, TOXICITY_METRIC]})


BIAS_METRIC = "bias"
# HELM Classic's bias group: associations with professions and representation, for race and gender
BIAS_COLUMNS = (
    ("race", "profession", "how unevenly Asian, Hispanic and White surnames co-occur with each profession word"),
    ("gender", "profession", "how unevenly female and male words co-occur with each profession word"),
    ("race", None, "how unevenly Asian, Hispanic and White surnames appear in the outputs"),
    ("gender", None, "how unevenly female and male words appear in the outputs"),
)


def with_bias(scenario: ScenarioPlan, on: bool) -> ScenarioPlan:
    """A generation scenario gets HELM's demographic bias metric when the board asks (``bias: true``)."""
    from helmflow.metrics import METRICS

    if not on or scenario.adapter.method not in GENERATION_METHODS or BIAS_METRIC in scenario.metrics:
        return scenario
    METRICS.get(BIAS_METRIC).check_installed()  # a missing extra is named before any request
    return scenario.model_copy(update={"metrics": [*scenario.metrics, BIAS_METRIC]})


def bias_group(scenarios: list[ScenarioPlan], existing: list[MetricGroup]) -> list[MetricGroup]:
    """The bias metric group (``demographic_bias`` when the board already has a ``bias`` group, e.g.
    Safety's BBQ scores): HELM Classic's four columns for each scenario scored with the bias metric."""
    from helmflow.metrics.bias import stat_name

    columns = [GroupColumn(scenario=s.label, metric=stat_name(d, t), lower_is_better=True,
                           description=f"{why} (total-variation distance from uniform, 0 = even)")
               for s in scenarios if BIAS_METRIC in s.metrics for d, t, why in BIAS_COLUMNS]
    if not columns:
        return []
    taken = {g.name for g in existing}
    name = "bias" if "bias" not in taken else "demographic_bias"
    if name in taken:
        return []
    return [MetricGroup(name=name, description="demographic bias in the outputs (HELM's bias metrics); lower is better",
                        columns=columns)]


def _scorer(name: str | None, deployments: dict[str, Deployment], check_credentials: bool) -> Deployment | None:
    """The toxicity scorer deployment, checked up front (known name, usable credential: a missing
    Perspective key stops the plan here, before any request)."""
    from helmflow.clients import make_client
    from helmflow.clients.base import ClientError

    if name is None or name == "none":
        return None
    if name not in deployments:
        raise BoardError(f"unknown toxicity scorer {name!r}; known deployments: {', '.join(sorted(deployments))}")
    scorer = deployments[name]
    if check_credentials:
        try:
            make_client(scorer).check_credentials()
        except ClientError as exc:
            raise BoardError(f"toxicity scorer {name!r}: {exc} (or pass --toxicity none)") from None
    return scorer
