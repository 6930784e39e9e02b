"""Board-wide additions: what planning adds to a board beyond its scenario entries (perturbed copies
and their metric groups; the board-wide metrics a board turns on, on every scenario their hook fits,
with their scorers and groups)."""

from __future__ import annotations

from helmflow import versions
from helmflow.plan.records import PerturbedFrom, ScenarioPlan
from helmflow.plan.spec import OFF, ON, BoardError, GroupColumn, MetricGroup
from helmflow.records import Deployment

PERTURBED_MARK = "~"  # a perturbed copy's label: ``<label>~<perturbation>``


def perturbed_plans(scenario: ScenarioPlan) -> list[ScenarioPlan]:
    """One plan per perturbation of a scenario: same data, adapter and metrics, its own scenario_version
    (so its own instances file, prompts and run ids, cached like any run). A perturbation the entry caps
    (``perturbation_instances``) perturbs the first that many of the sampled instances: its adapter's sample
    is the smaller one, which HELM's seeded draw makes a prefix of the entry's."""
    from helmflow.adapters import template_versions
    from helmflow.perturbations import PERTURBATIONS

    out = []
    for name in scenario.perturbations:
        p = PERTURBATIONS.get(name)
        version = p.version_data()
        adapter, prompt_version = scenario.adapter, scenario.prompt_version
        if name in scenario.perturbation_instances:
            cap = scenario.perturbation_instances[name]
            current = adapter.sample.max_eval_instances
            adapter = adapter.override(max_eval_instances=cap if current is None else min(cap, current))
            prompt_version = versions.prompt_version(adapter, template_versions(adapter))
        sv = versions.stable_hash({"original": scenario.scenario_version, "perturbation": version,
                                   "sample": adapter.sample})
        out.append(scenario.model_copy(update={
            "label": f"{scenario.label}{PERTURBED_MARK}{name}",
            "scenario_version": sv,
            "adapter": adapter,
            "prompt_version": prompt_version,
            "perturbations": [],
            "perturbation_instances": {},
            "perturbation": PerturbedFrom(name=name, kind=p.kind, version=version, label=scenario.label,
                                          scenario_version=scenario.scenario_version),
        }))
    return out


def perturbation_groups(scenarios: list[ScenarioPlan], existing: list[MetricGroup]) -> list[MetricGroup]:
    """HELM's robustness and fairness metric groups: one column per scenario that runs that kind of
    perturbation (``<label>/robustness``: the per-instance worst case of the main metric over the
    original and the perturbations, then the mean). A board that names such a group itself keeps its own,
    and a scenario whose perturbed copies' columns the board lays out itself (HEIM's tables of MS-COCO's
    variants) gets none."""
    from helmflow.perturbations import PERTURBATIONS

    groups = []
    taken = {g.name for g in existing}
    laid_out = {c.scenario.partition(PERTURBED_MARK)[0] for g in existing for c in g.columns
                if PERTURBED_MARK in c.scenario}
    scenarios = [s for s in scenarios if s.label not in laid_out]
    for kind, what in (("robustness",
                        "perturbations that keep the meaning (casing, contractions, misspellings, spacing)"),
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

def board_wide(name: str):
    """A metric's board-wide hook (:class:`helmflow.metrics.BoardWide`); a BoardError when it has none."""
    from helmflow.metrics import METRICS

    hook = METRICS.get(name).board_wide if name in METRICS else None
    if hook is None:
        known = [m for m in METRICS.names() if METRICS.get(m).board_wide is not None]
        raise BoardError(f"metric {name!r} is not a board-wide metric; board-wide metrics: {', '.join(known)}")
    return hook


def scorer_template_for(metric: str, scorer: Deployment) -> str:
    """The judge template a board-wide metric's scorer is sent: by whether its client is a classifier
    (Perspective, profanity-check are sent the output as it is; an LLM gets the metric's template)."""
    from helmflow.clients import CLIENTS

    return board_wide(metric).template_for(CLIENTS.get(scorer.client).classifier)


def scored_by_scorer(metrics: list[str]) -> list[str]:
    """The scenario's metrics whose board-wide hook reads a scorer deployment."""
    from helmflow.metrics import METRICS

    return [m for m in metrics if m in METRICS and (h := METRICS.get(m).board_wide) is not None and h.scorer]


def with_board_wide(scenario: ScenarioPlan, names: list[str]) -> ScenarioPlan:
    """The scenario with each board-wide metric of ``names`` (in that order) whose hook attaches to its
    adapter method; a missing extra is named before any request."""
    from helmflow.metrics import METRICS

    added = []
    for name in names:
        if scenario.adapter.method in board_wide(name).methods and name not in scenario.metrics:
            METRICS.get(name).check_installed()
            added.append(name)
    return scenario.model_copy(update={"metrics": [*scenario.metrics, *added]}) if added else scenario


def board_wide_groups(scenarios: list[ScenarioPlan], names: list[str],
                      existing: list[MetricGroup]) -> list[MetricGroup]:
    """The metric group each board-wide metric of ``names`` declares: its columns for every scenario it
    scores, under the group's name, or its fallback name when the board already has a group so named."""
    groups: list[MetricGroup] = []
    for name in names:
        hook = board_wide(name)
        columns = [GroupColumn(scenario=s.label, metric=c.metric, lower_is_better=c.lower_is_better,
                               description=c.description)
                   for s in scenarios if name in s.metrics for c in hook.columns]
        if not hook.group or not columns:
            continue
        taken = {g.name for g in [*existing, *groups]}
        group = hook.group if hook.group not in taken else hook.group_fallback
        if group and group not in taken:
            groups.append(MetricGroup(name=group, description=hook.group_description, columns=columns))
    return groups


def board_wide_on(declared: dict[str, str | bool | None], chosen: dict[str, str], deployments: dict[str, Deployment],
                  check_credentials: bool) -> tuple[dict[str, str | bool], dict[str, Deployment]]:
    """The board-wide metrics a run turns on, in order (the board's, then the selection's others; the
    selection's value wins): metric -> its scorer's name or True, and metric -> scorer deployment."""
    on: dict[str, str | bool] = {}
    scorers: dict[str, Deployment] = {}
    for name, value in {**declared, **chosen}.items():
        hook = board_wide(name)
        if value in (None, False, "", OFF):
            continue
        if hook.scorer:
            if not isinstance(value, str) or value == ON:
                raise BoardError(f"board-wide metric {name!r} needs a scorer deployment, not {value!r}")
            scorer = scorer_for(name, value, deployments, check_credentials)
            if scorer is not None:
                scorers[name] = scorer
                on[name] = scorer.name
        elif value in (True, ON):
            on[name] = True
        else:
            raise BoardError(f"board-wide metric {name!r} reads no scorer: turn it on with {ON!r} (true in YAML) "
                             f"or off with {OFF!r}, not {value!r}")
    return on, scorers


def scorer_for(metric: str, name: str | None, deployments: dict[str, Deployment],
               check_credentials: bool) -> Deployment | None:
    """A board-wide metric's scorer deployment, checked up front (known name, usable credential: a
    missing Perspective key stops the plan here, before any request); ``none``: no scorer."""
    from helmflow.clients import make_client
    from helmflow.clients.base import ClientError

    if name is None or name == OFF:
        return None
    if name not in deployments:
        raise BoardError(f"unknown {metric} scorer {name!r}; known deployments: {', '.join(sorted(deployments))}")
    scorer = deployments[name]
    if check_credentials:
        try:
            make_client(scorer).check_credentials()
        except ClientError as exc:
            raise BoardError(f"{metric} scorer {name!r}: {exc} (or pass --board-wide {metric}=none)") from None
    return scorer
