"""Board specs are data (YAML); planning turns one into the versioned runs it stands for.

Everything here is validated up front, before a single request is sent: unknown scenarios, models,
adapter fields or metrics are one clear error each.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmflow import prompts as prompt_module
from helmflow import versions
from helmflow.adapters import ADAPTERS, template_versions
from helmflow.errors import HelmflowError, format_validation_error, read_yaml_file
from helmflow.records import AdapterSpec, Deployment
from helmflow.storage import safe_key

BOARDS_DIR = Path(importlib.import_module("helmflow.flows").__file__).resolve().parent


class BoardError(HelmflowError, ValueError):
    """A board, scenario or model selection that cannot be run; the message says which and why."""


class ScenarioEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the scenario's registered name (`helmflow list scenarios`)")
    params: dict[str, Any] = Field(default_factory=dict, description="the scenario's parameters (part of its version), "
                                                                     "e.g. `{subject: anatomy}`")
    adapter: dict[str, Any] = Field(default_factory=dict, description="adapter fields replacing the scenario's "
                                                                      "defaults (see Adapter fields below)")
    main_metric: str | None = Field(None, description="the stat shown in the board's cell (default: the scenario's)")
    metrics: list[str] | None = Field(None, description="the metrics computed (default: the scenario's)")
    label: str | None = Field(None, description="the board's name for this entry (default: the spec string "
                                                "`name:k=v,…`); its leaderboard column")
    group: str | None = Field(None, description="a leaderboard column averaging several entries (HELM's run group, "
                                                "e.g. 30 MMMU subjects)")
    # perturbation sets or names (helmflow.perturbations): ``robustness``, ``fairness`` or a list. Each
    # perturbation is its own run of the perturbed instances; the board gets robustness/fairness columns
    perturbations: str | list[str] | None = Field(None, description="perturbation sets or names (`robustness`, "
                                                                    "`fairness`, or a list): each is a run of the "
                                                                    "perturbed instances, giving robustness and "
                                                                    "fairness columns")


class GroupColumn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: str = Field(description="a scenario entry's label, or a group (the unweighted mean over its entries' "
                                      "runs, HELM's cell)")
    metric: str = Field(description="a stat of that scenario's runs, e.g. `safety_score`, `toxic_fraction`")
    lower_is_better: bool = Field(False, description="the column ranks lower values first (marked ↓)")
    description: str = Field("", description="one line the report shows with the column (what it measures)")

    @property
    def key(self) -> str:
        """The leaderboard column: ``<scenario label>/<metric>``."""
        return f"{self.scenario}/{self.metric}"


class MetricGroup(BaseModel):
    """A set of leaderboard columns shown together (HELM's metric groups), with its own mean win rate."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="the group's name (lower case, digits, `_`)")
    description: str = Field("", description="one line the report shows with the group")
    columns: list[GroupColumn] = Field(min_length=1, description="the group's columns")


class BoardSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the board's name: its flow, its folder under `leaderboards/`")
    version: str = Field(description="bump it when you change the board")
    description: str = Field("", description="one line shown by `helmflow list boards` and `show`")
    models: list[str] = Field(description="deployment names run by default (`--models` replaces them)")
    scenarios: list[ScenarioEntry] = Field(description="the board's scenario entries")
    max_instances: int | None = Field(None, ge=1, description="at most this many instances per scenario "
                                                             "(HELM's seeded sample)")
    aggregation: list[Literal["mean", "win_rate"]] = Field(
        default_factory=lambda: ["mean", "win_rate"],
        description="the board's summary columns: mean score (HELM Capabilities), mean win rate (HELM Classic)")
    judges: list[str] = Field(default_factory=list, description="the jury (deployment names) for LLM-judged "
                                                                "metrics (`--judge` replaces it)")
    # HELM's aspects (VHELM: perception, reasoning, ...): aspect -> the groups (or labels) it ranks
    aspects: dict[str, list[str]] = Field(default_factory=dict, description="HELM's aspects (VHELM: perception, "
                                                                            "reasoning, ...): aspect → the groups "
                                                                            "or labels it ranks")
    # the deployment that scores toxicity on the generation scenarios (None: no toxicity metric)
    toxicity: str | None = Field(None, description="the deployment that scores the toxicity of the generation "
                                                   "scenarios' replies (null: no toxicity metric)")
    # HELM's demographic bias metrics on every generation scenario's outputs (a "bias" metric group)
    bias: bool = Field(False, description="HELM's demographic bias metrics on every generation scenario's "
                                          "outputs (a `bias` metric group)")
    metric_groups: list[MetricGroup] = Field(default_factory=list, description="sets of columns shown together, "
                                                                               "each with its own mean win rate")
    helm_jury: list[str] = Field(default_factory=list, description="the judges HELM published this board with "
                                                                   "(`helmflow reproduce`)")
    # what this board does differently from HELM's published setup, one sentence each (``reproduce --explain``)
    helm_differences: list[str] = Field(default_factory=list, description="what this board does differently from "
                                                                          "HELM's published setup, one sentence "
                                                                          "each (`reproduce --explain`)")
    # prompt wording replaced: ``<scenario>.<text>`` or ``judge.<template>`` -> text (helmflow.prompts)
    prompts: dict[str, str] = Field(default_factory=dict, description="prompt wording replaced: "
                                                                      "`<scenario>.<text>` or `judge.<template>` "
                                                                      "→ text (`helmflow prompts` lists the keys)")

    def version_data(self) -> dict[str, Any]:
        """What the board version hashes: fields added later count only when used (old versions stay put)."""
        data = self.model_dump(mode="json")
        for key in ("aspects", "toxicity", "metric_groups", "helm_jury", "helm_differences", "prompts", "bias"):
            if not data[key]:
                del data[key]
        for entry in data["scenarios"]:
            for key in ("group", "perturbations"):
                if entry[key] is None:
                    del entry[key]
        for group in data.get("metric_groups", []):
            for column in group["columns"]:
                if not column["description"]:
                    del column["description"]
        return data


class PerturbedFrom(BaseModel):
    """A perturbed scenario plan: the original it copies and the perturbation applied to its evaluated
    instances. Its scenario_version hashes the original's, the perturbation's version (algorithm,
    parameters, data sha256) and the evaluation sample (only sampled instances are perturbed)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Literal["robustness", "fairness"]
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
    perturbations: list[str] = Field(default_factory=list)  # an original's perturbations (their runs: BoardPlan.perturbed)
    perturbation: PerturbedFrom | None = None  # set on a perturbed copy: what it perturbs and how


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
    scorer: Deployment | None = None  # the toxicity scorer, when the scenario has the toxicity metric
    scorer_template: str | None = None


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
    # How this run narrows its board (models, scenarios, max_instances, judges, no_judge); empty for
    # the board as written. A release with a selection is a subset: it never moves ``latest.json``.
    selection: dict[str, Any] = Field(default_factory=dict)

    @property
    def subset(self) -> bool:
        return bool(self.selection)

    @property
    def all_scenarios(self) -> list[ScenarioPlan]:
        """Every scenario to prepare: the board's columns and their perturbed copies."""
        return [*self.scenarios, *self.perturbed]


# --------------------------------------------------------------------------- loading
def board_names() -> list[str]:
    return sorted(p.stem for p in BOARDS_DIR.glob("*.yaml"))


def load_board(board: str | dict[str, Any] | BoardSpec) -> BoardSpec:
    """A board spec from a name (``flows/<name>.yaml``), a YAML file path, or the spec itself as data
    (``helmflow eval`` builds one; a dict keeps the flow parameter JSON)."""
    if isinstance(board, BoardSpec):
        return board
    if isinstance(board, dict):
        return _validate(board, "board spec")
    path = Path(board)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise BoardError(f"board file {path} does not exist")
    else:
        path = BOARDS_DIR / f"{board}.yaml"
        if not path.exists():
            raise BoardError(f"unknown board {board!r}; known: {', '.join(board_names())}")
    return _validate(read_yaml_file(path, "board file", BoardError), f"board file {path}")


def _validate(data: Any, where: str) -> BoardSpec:
    try:
        return BoardSpec.model_validate(data)
    except ValidationError as exc:
        raise BoardError(f"{where}: {format_validation_error(exc)}") from None


def _unverified(scen, checksums: dict[str, str]) -> dict[str, str]:
    from helmflow.datasets import unverified_reason

    reasons = {s.filename: unverified_reason(scen, s, checksums[s.filename]) for s in scen.sources()}
    return {name: why for name, why in reasons.items() if why}


def _sha256_url(scen, source) -> str:
    """Pin a ``sha256=None`` source at plan time, read from where the run will read it (mirrors too)."""
    from helmflow.datasets import source_sha256

    return source_sha256(scen, source)


# --------------------------------------------------------------------------- planning
def plan_scenario(entry: ScenarioEntry, max_instances: int | None, prompts: dict[str, str] | None = None) -> ScenarioPlan:
    """``prompts``: the board's replaced wording (checked keys); the entry's own ``adapter:`` still wins."""
    from helmflow.metrics import METRICS
    from helmflow.scenarios import SCENARIOS, ScenarioError

    if entry.name not in SCENARIOS:
        raise BoardError(f"unknown scenario {entry.name!r}; known: {', '.join(SCENARIOS.names())}")
    scen = SCENARIOS.get(entry.name)(**entry.params)
    own = prompt_module.for_scope(prompts or {}, scen.name)
    scen.prompt_overrides = {k: v for k, v in own.items() if k in scen.prompt_texts}
    try:
        worded = scen.default_adapter.override(**{k: v for k, v in own.items() if k not in scen.prompt_texts})
        adapter = worded.override(**entry.adapter)
    except (ValueError, ValidationError) as exc:
        raise BoardError(f"scenario {entry.name!r}: bad adapter override: {exc}") from None
    if max_instances is not None:
        adapter = adapter.override(max_eval_instances=max_instances)
    if adapter.method not in ADAPTERS:
        raise BoardError(f"scenario {entry.name!r}: unknown adapter method {adapter.method!r}; known: {', '.join(ADAPTERS.names())}")
    metrics = entry.metrics or list(scen.metrics)
    for m in metrics:
        if m not in METRICS:
            raise BoardError(f"scenario {entry.name!r}: unknown metric {m!r}; known: {', '.join(METRICS.names())}")
        METRICS.get(m).check_installed()  # a missing extra is named before any work
    try:
        checksums = {s.filename: s.sha256 or _sha256_url(scen, s) for s in scen.sources()}
        unverified = _unverified(scen, checksums)
    except ScenarioError as exc:
        raise BoardError(str(exc)) from None  # already names the scenario and the URL
    except OSError as exc:
        raise BoardError(f"scenario {entry.name!r}: cannot read its source: {exc}") from None
    revision = scen.dataset_revision()
    sv = versions.scenario_version(scen.name, scen.param_dict, revision, checksums, scen.VERSION)
    perturbations = _perturbations(entry)
    return ScenarioPlan(
        name=scen.name,
        label=entry.label or scen.spec_string,
        params=scen.param_dict,
        key=safe_key(scen.name),
        dataset_revision=revision,
        checksums=checksums,
        unverified=unverified,
        loader_version=scen.VERSION,
        scenario_version=sv,
        adapter=adapter,
        prompt_version=versions.prompt_version(adapter, template_versions(adapter)),
        main_metric=entry.main_metric or scen.main_metric,
        metrics=metrics,
        group=entry.group,
        unsafe_text=scen.unsafe_text,
        perturbations=perturbations,
    )


def _perturbations(entry: ScenarioEntry) -> list[str]:
    from helmflow.perturbations import PerturbationError, resolve

    if entry.perturbations is None:
        return []
    try:
        return [p.name for p in resolve(entry.perturbations)]
    except PerturbationError as exc:
        raise BoardError(f"scenario {entry.label or entry.name!r}: {exc}") from None


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


def check_extras(entries: list[ScenarioEntry]) -> None:
    """Every known metric of these entries has its modules installed (else one line naming the extra);
    unknown names are left to :func:`plan_scenario`, which says what exists."""
    from helmflow.metrics import METRICS
    from helmflow.scenarios import SCENARIOS, ScenarioError

    for entry in entries:
        if entry.name not in SCENARIOS:
            continue
        try:
            metrics = entry.metrics or list(SCENARIOS.get(entry.name)(**entry.params).metrics)
        except ScenarioError:
            continue  # bad parameters: plan_scenario reports them
        for m in metrics:
            if m in METRICS:
                METRICS.get(m).check_installed()


def judge_template_names(metrics: list[str]) -> list[str]:
    """The judge templates a scenario's metrics read (none for rule-scored scenarios)."""
    from helmflow.metrics import METRICS

    return sorted({METRICS.get(m).judge for m in metrics if METRICS.get(m).judge})


def plan_run(scenario: ScenarioPlan, deployment: Deployment, judges: list[Deployment] | None = None,
             scorer: Deployment | None = None, prompts: dict[str, str] | None = None) -> RunPlan:
    """``judges`` apply only if the scenario has judge-backed metrics, ``scorer`` only if it has the
    toxicity metric; both are part of metric_version, and so is a judge template's replaced text
    (``prompts``' ``judge.<template>``: its hash joins the template VERSION)."""
    from helmflow.judges import judges_version, template_versions
    from helmflow.metrics import metric_versions
    from helmflow.tokenizers import TOKENIZER_KINDS

    gen = scenario.adapter.generation
    max_tokens = min(gen.max_tokens, deployment.max_output_tokens or gen.max_tokens)
    if max_tokens >= deployment.context_window:
        raise BoardError(
            f"{scenario.label} x {deployment.name}: max_tokens {max_tokens} leaves no room for a prompt in the "
            f"deployment's context_window {deployment.context_window}; raise context_window or set max_output_tokens"
        )
    kind = deployment.tokenizer.partition(":")[0]
    if kind not in TOKENIZER_KINDS:
        raise BoardError(
            f"deployment {deployment.name!r}: unknown tokenizer {deployment.tokenizer!r}; "
            f"kinds: {', '.join(TOKENIZER_KINDS.names())}"
        )
    mv = metric_versions(scenario.metrics)
    texts = prompt_module.for_scope(prompts or {}, prompt_module.JUDGE_SCOPE)
    templates = worded_versions(template_versions(judge_template_names(scenario.metrics)), texts)
    jury = list(judges or []) if templates else []
    model_v = versions.model_version(deployment)
    judging = judges_version(jury, templates)
    scorer_template = None
    if TOXICITY_METRIC in scenario.metrics:
        if scorer is None:
            raise BoardError(f"{scenario.label}: the toxicity metric needs a scorer: set the board's `toxicity:` or pass "
                             f"--toxicity <deployment> (--toxicity none drops the metric)")
        scorer_template = scorer_template_for(scorer)
        scorer_versions = worded_versions(template_versions([scorer_template]), texts)
        judging[f"toxicity scorer {scorer.name}"] = judges_version([scorer], scorer_versions)[scorer.name]
    metric_v = versions.metric_version(mv, judging)
    qk = versions.query_key(scenario.scenario_version, scenario.prompt_version, model_v)
    return RunPlan(
        scenario=scenario,
        deployment=deployment,
        model_version=model_v,
        metric_version=metric_v,
        metric_versions=mv,
        run_id=versions.run_id(scenario.scenario_version, scenario.prompt_version, model_v, metric_v),
        query_key=qk,
        score_key=versions.score_key(qk, metric_v),
        judges=jury,
        judge_templates=templates,
        judge_texts={n: t for n, t in texts.items() if n in templates or n == scorer_template},
        scorer=scorer if scorer_template else None,
        scorer_template=scorer_template,
    )


def worded_versions(templates: dict[str, str], texts: dict[str, str]) -> dict[str, str]:
    """Template name -> VERSION, with a replaced text's hash on the ones the board rewords."""
    return {n: prompt_module.judge_version(v, texts.get(n)) for n, v in templates.items()}


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


def check_groups(spec: BoardSpec, labels: list[str], groups: list[str] | None = None) -> None:
    """Each group column names a scenario or a scenario group of the board (metrics are checked against run summaries)."""
    for group in spec.metric_groups:
        for column in group.columns:
            if column.scenario not in labels and column.scenario not in (groups or []):
                raise BoardError(f"board {spec.name!r}: group {group.name!r} names scenario {column.scenario!r}, "
                                 f"which the board does not run; it runs: {', '.join(labels)}")


def plan_board(
    spec: BoardSpec,
    deployments: dict[str, Deployment],
    models: list[str] | None = None,
    scenarios: list[str] | None = None,
    max_instances: int | None = None,
    judges: list[str] | None = None,
    no_judge: bool = False,
    check_credentials: bool = True,
    toxicity: str | None = None,
) -> BoardPlan:
    """``toxicity``: the scorer deployment (``none``: no toxicity metric; None: the board's ``toxicity:``)."""
    chosen_models = models or spec.models
    unknown = [m for m in chosen_models if m not in deployments]
    if unknown:
        raise BoardError(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(sorted(deployments))}")
    entries = spec.scenarios
    if scenarios:
        known = {e.name for e in entries} | {e.label for e in entries if e.label}
        missing = [s for s in scenarios if s not in known]
        if missing:
            raise BoardError(f"board {spec.name!r} has no scenario {', '.join(missing)}; it has: {', '.join(sorted(known))}")
        entries = [e for e in entries if e.name in scenarios or e.label in scenarios]
    effective = spec.model_copy(update={"models": chosen_models, "scenarios": entries})
    if max_instances is not None:
        effective = effective.model_copy(update={"max_instances": max_instances})
    check_extras(entries)  # a missing extra is named before any scenario reads its data
    scorer = _scorer(toxicity if toxicity is not None else spec.toxicity, deployments, check_credentials)
    effective = effective.model_copy(update={"toxicity": scorer.name if scorer else None})
    check_prompts(spec)
    scenario_plans = [with_bias(with_toxicity(plan_scenario(e, effective.max_instances, spec.prompts), scorer), spec.bias)
                      for e in entries]
    labels = [s.label for s in scenario_plans]
    if len(set(labels)) != len(labels):
        raise BoardError(f"board {spec.name!r}: two scenario entries share a label; set 'label:' to tell them apart")
    columns = {s.group or s.label for s in scenario_plans}
    for aspect, members in spec.aspects.items():
        unknown_members = [m for m in members if m not in columns and not scenarios]
        if unknown_members:
            raise BoardError(f"board {spec.name!r}: aspect {aspect!r} names {', '.join(unknown_members)}, which is no "
                             f"scenario group or label of the board")
    group_names = sorted({s.group for s in scenario_plans if s.group})
    if scenarios:  # a selection keeps the group columns of the scenarios it runs
        groups = [g.model_copy(update={"columns": [c for c in g.columns if c.scenario in labels or c.scenario in group_names]})
                  for g in spec.metric_groups]
        effective = effective.model_copy(update={"metric_groups": [g for g in groups if g.columns]})
    perturbed = [p for s in scenario_plans for p in perturbed_plans(s)]
    effective = effective.model_copy(update={"metric_groups": [
        *effective.metric_groups, *perturbation_groups(scenario_plans, effective.metric_groups)]})
    effective = effective.model_copy(update={"metric_groups": [
        *effective.metric_groups, *bias_group(scenario_plans, effective.metric_groups)]})
    check_groups(effective, labels, group_names)
    judged = [s for s in scenario_plans + perturbed if judge_template_names(s.metrics)]
    jury = [] if no_judge else list(judges if judges is not None else spec.judges)
    judge_deployments = _jury(spec.name, jury, deployments, judged, no_judge, check_credentials)
    # the jury is part of the effective spec (and its version) only when something is judged
    effective = effective.model_copy(update={"judges": [j.name for j in judge_deployments] if judged else []})
    runs = [plan_run(s, deployments[m], judge_deployments, scorer, spec.prompts) for s in scenario_plans + perturbed
            for m in chosen_models]
    return BoardPlan(
        spec=effective,
        board_version=versions.stable_hash(effective.version_data()),
        scenarios=scenario_plans,
        perturbed=perturbed,
        runs=runs,
        selection=selection_of(spec, effective, bool(judged) and no_judge),
    )


def selection_of(spec: BoardSpec, effective: BoardSpec, dropped_judges: bool) -> dict[str, Any]:
    """What a run changed from its board as written (models, scenarios, max_instances, judges): the
    fields that differ, with their values. A run with any of these is a subset of the board."""
    out: dict[str, Any] = {}
    if set(effective.models) != set(spec.models):
        out["models"] = effective.models
    if effective.scenarios != spec.scenarios:
        out["scenarios"] = [e.label or e.name for e in effective.scenarios]
    if effective.max_instances != spec.max_instances:
        out["max_instances"] = effective.max_instances
    if dropped_judges:
        out["no_judge"] = True
    elif effective.judges and effective.judges != spec.judges:
        out["judges"] = effective.judges
    return out


def _jury(board: str, names: list[str], deployments: dict[str, Deployment], judged: list[ScenarioPlan],
          no_judge: bool, check_credentials: bool = True) -> list[Deployment]:
    """The judge deployments, checked up front: known names, and a usable credential each (before any
    request). Judge-backed scenarios without a judge are an error unless ``--no-judge``."""
    from helmflow.clients import make_client
    from helmflow.clients.base import ClientError

    unknown = [n for n in names if n not in deployments]
    if unknown:
        raise BoardError(f"unknown judge deployment(s) {', '.join(unknown)}; known: {', '.join(sorted(deployments))}")
    if len(set(names)) != len(names):
        raise BoardError(f"a judge is named twice in {', '.join(names)}")
    if not judged:
        return [deployments[n] for n in names]
    labels = ", ".join(s.label for s in judged)
    if not names and not no_judge:
        raise BoardError(f"board {board!r}: {labels} need(s) a judge: pass --judge <deployment>[,<deployment>...], "
                         f"or --no-judge to leave judge-only metrics missing")
    jury = [deployments[n] for n in names]
    for judge in jury if check_credentials else []:
        try:
            make_client(judge).check_credentials()
        except ClientError as exc:
            raise BoardError(f"judge {judge.name!r} for {labels}: {exc} (or pass --no-judge)") from None
    return jury


def prepare(
    board: str | dict[str, Any] | BoardSpec,
    models: list[str] | None = None,
    scenarios: list[str] | None = None,
    max_instances: int | None = None,
    models_file: str | None = None,
    plugins: list[str] | None = None,
    judges: list[str] | None = None,
    no_judge: bool = False,
    check_credentials: bool = True,
    toxicity: str | None = None,
) -> BoardPlan:
    """Validate everything and plan the runs (no Prefect, no network): the CLI calls this first."""
    from helmflow.clients import load_deployments
    from helmflow.datasets import hash_once
    from helmflow.registry import add_plugins

    add_plugins(plugins or [])
    with hash_once():  # each source file is read once per plan
        return plan_board(load_board(board), load_deployments(models_file), models, scenarios, max_instances, judges,
                          no_judge, check_credentials, toxicity)


# --------------------------------------------------------------------------- prompt wording
def scenario_prompt_texts(name: str, params: dict[str, Any], adapter: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The declared texts of one scenario entry (default wording, what it is); see helmflow.prompts."""
    from helmflow.scenarios import SCENARIOS

    scen = SCENARIOS.get(name)(**params)
    method = adapter.get("method", scen.default_adapter.method)
    texts = ADAPTERS.get(method).texts if method in ADAPTERS else ()
    return prompt_module.scenario_texts(scen, texts)


def judge_template_texts() -> dict[str, tuple[str, str]]:
    """``template -> (text, what it is)`` for every registered judge template that renders a prompt."""
    from helmflow.judges import TEMPLATES

    out = {}
    for name in TEMPLATES.names():
        t = TEMPLATES.get(name)
        fields = sorted(set(prompt_module.PLACEHOLDER.findall(t.text)))
        if t.text.strip() != "{$answer}":  # a classifier is sent the output as it is: no wording to replace
            out[name] = (t.text, f"judge prompt; placeholders: {', '.join('{$' + f + '}' for f in fields)}")
    return out


def board_prompt_texts(spec: BoardSpec, everything: bool = False) -> list[tuple[str, dict[str, tuple[str, str]]]]:
    """Scope -> declared texts: the board's scenarios (with their parameters) and the judge templates
    they use; with ``everything``, every registered scenario and judge template too (a prompts file may
    serve several boards)."""
    from helmflow.scenarios import SCENARIOS, ScenarioError

    out: dict[str, dict[str, tuple[str, str]]] = {}
    for entry in spec.scenarios:
        if entry.name in SCENARIOS:
            out.setdefault(entry.name, {}).update(scenario_prompt_texts(entry.name, entry.params, entry.adapter))
    for name in SCENARIOS.names() if everything else []:
        if name not in out:
            try:
                out[name] = scenario_prompt_texts(name, {}, {})
            except ScenarioError:
                continue  # needs parameters (a file-backed scenario): its keys are known when a board runs it
    judged = judge_template_texts()
    if not everything:
        used: set[str] = set()
        for entry in spec.scenarios:
            if entry.name in SCENARIOS:
                try:
                    used.update(judge_template_names(entry.metrics or list(SCENARIOS.get(entry.name)(**entry.params).metrics)))
                except HelmflowError:
                    continue  # unknown metrics or bad parameters: planning names them
        judged = {n: t for n, t in judged.items() if n in used}
    sections = [(scope, texts) for scope, texts in out.items() if texts]
    return sections + ([(prompt_module.JUDGE_SCOPE, judged)] if judged else [])


def check_prompts(spec: BoardSpec, source: str | None = None) -> None:
    """Every key of the board's ``prompts:`` is a declared text; a judge template keeps its placeholders."""
    if not spec.prompts:
        return
    where = source or f"board {spec.name!r}"
    sections = dict(board_prompt_texts(spec, everything=True))
    try:
        prompt_module.check(spec.prompts, sections, where)
        for name, text in prompt_module.for_scope(spec.prompts, prompt_module.JUDGE_SCOPE).items():
            prompt_module.check_judge_text(name, sections[prompt_module.JUDGE_SCOPE][name][0], text, where)
    except prompt_module.PromptError as exc:
        raise BoardError(str(exc)) from None


def with_prompts(board: str | dict[str, Any], path: str) -> dict[str, Any]:
    """The board spec as data with a prompts file's texts over its ``prompts:`` (the file wins per key),
    checked now. Like a variant, it is its own board (``<name>-<file stem>``), so its releases never
    mix with the board's own wording."""
    from helmflow.storage import safe_key

    texts = prompt_module.read_file(path)
    spec = load_board(board)
    data = spec.model_dump(mode="json")
    data["prompts"] = {**spec.prompts, **texts}
    data["name"] = f"{spec.name}-{safe_key(Path(path).stem)}"
    check_prompts(load_board(data), f"prompts file {path}")
    return data


# --------------------------------------------------------------------------- planned once per command
_PLANNED: dict[str, BoardPlan] = {}
#: the flow parameters a plan is made from and handed over under (the others, storage and budget, do not change it)
PLAN_PARAMETERS = ("board", "models", "scenarios", "max_instances", "models_file", "plugins", "judges", "no_judge",
                   "toxicity")


def _plan_key(**params: Any) -> str:
    return versions.canonical_json(params)


def hand_over(plan: BoardPlan, **params: Any) -> None:
    """Keep the plan the CLI just made for the flow it starts in this process with the same
    ``params`` (see :func:`prepare_once`), so a board is planned once per ``helmflow run``."""
    _PLANNED.clear()
    _PLANNED[_plan_key(**params)] = plan


def handed_over(**params: Any) -> BoardPlan | None:
    """The plan waiting for the flow started with ``params``, left in place (the flow takes it)."""
    return _PLANNED.get(_plan_key(**params))


def prepare_once(**params: Any) -> BoardPlan:
    """The plan handed over for exactly these parameters (taken, so it is used once), else a fresh
    :func:`prepare`: a worker starting the flow plans for itself."""
    return _PLANNED.pop(_plan_key(**params), None) or prepare(**params)


# --------------------------------------------------------------------------- variants
def has_variant(scenario: str) -> bool:
    """Whether a scenario's parameters include ``variant`` (HELM entries whose prompt/budget it changes)."""
    from helmflow.scenarios import SCENARIOS

    return "variant" in SCENARIOS.get(scenario).Params.model_fields


def with_variant(board: str | dict[str, Any], variant: str) -> dict[str, Any]:
    """The board spec as data with ``variant`` on every scenario that has one. A non-default variant
    is its own board (``<name>-<variant>``), so its releases never mix with v1's."""
    spec = load_board(board).model_dump(mode="json")
    for entry in spec["scenarios"]:
        if has_variant(entry["name"]):
            entry["params"] = {**entry["params"], "variant": variant}
    if variant != "v1" and not spec["name"].endswith(f"-{variant}"):  # idempotent: reproduce then run
        spec["name"] = f"{spec['name']}-{variant}"
    return spec
