"""Planning: a board spec and the deployments turn into the versioned runs it stands for."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from helmflow import prompts as prompt_module
from helmflow import versions
from helmflow.adapters import ADAPTERS, template_versions
from helmflow.plan.extras import (
    PERTURBED_MARK,
    board_wide_groups,
    board_wide_on,
    perturbation_groups,
    perturbed_plans,
    scored_by_scorer,
    scorer_template_for,
    with_board_wide,
)
from helmflow.plan.records import AdaptivePlan, BoardPlan, RunPlan, ScenarioPlan
from helmflow.plan.selection import Selection
from helmflow.plan.spec import (
    DEFAULT_ADAPTIVE_ITEMS,
    AdaptiveSpec,
    BoardError,
    BoardSpec,
    NothingHere,
    ScenarioEntry,
    check_prompts,
    entry_adaptive,
    judge_required,
    judge_template_names,
    load_board,
)
from helmflow.records import Deployment
from helmflow.storage import safe_key


def _unverified(scen, checksums: dict[str, str]) -> dict[str, str]:
    from helmflow.datasets import unverified_reason

    reasons = {s.filename: unverified_reason(scen, s, checksums[s.filename]) for s in scen.sources()}
    return {name: why for name, why in reasons.items() if why}


def _sha256_url(scen, source) -> str:
    """Pin a ``sha256=None`` source at plan time, read from where the run will read it (mirrors too)."""
    from helmflow.datasets import source_sha256

    return source_sha256(scen, source)


# --------------------------------------------------------------------------- planning
def plan_scenario(entry: ScenarioEntry, max_instances: int | None,
                  prompts: dict[str, str] | None = None) -> ScenarioPlan:
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
        raise BoardError(f"scenario {entry.name!r}: unknown adapter method {adapter.method!r}; "
                         f"known: {', '.join(ADAPTERS.names())}")
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
        perturbation_instances=_perturbation_instances(entry, perturbations),
    )


def _perturbations(entry: ScenarioEntry) -> list[str]:
    from helmflow.perturbations import PerturbationError, resolve

    if entry.perturbations is None:
        return []
    try:
        return [p.name for p in resolve(entry.perturbations)]
    except PerturbationError as exc:
        raise BoardError(f"scenario {entry.label or entry.name!r}: {exc}") from None


def _perturbation_instances(entry: ScenarioEntry, perturbations: list[str]) -> dict[str, int]:
    """The entry's ``perturbation_instances`` by perturbation (a set's cap is each member's)."""
    from helmflow.perturbations import resolve

    caps = {p.name: n for name, n in entry.perturbation_instances.items() for p in resolve(name, check=False)}
    return {name: n for name, n in caps.items() if name in perturbations}


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

def plan_run(scenario: ScenarioPlan, deployment: Deployment, judges: list[Deployment] | None = None,
             scorers: dict[str, Deployment] | None = None, prompts: dict[str, str] | None = None) -> RunPlan:
    """``judges`` apply only if the scenario has judge-backed metrics, ``scorers`` (board-wide metric ->
    its scorer deployment) only to the scenario's metrics whose hook reads a scorer; both are part of
    metric_version, and so is a judge template's replaced text
    (``prompts``' ``judge.<template>``: its hash joins the template VERSION)."""
    from helmflow.judges import judges_version, template_versions
    from helmflow.metrics import metric_versions
    from helmflow.tokenizers import TOKENIZER_KINDS

    gen = scenario.adapter.generation
    max_tokens = deployment.output_budget(gen.max_tokens)
    if max_tokens >= deployment.context_window:
        raised = (f" (raised by increase_max_tokens {deployment.max_tokens_increase})"
                  if deployment.max_tokens_increase else "")
        raise BoardError(
            f"{scenario.label} x {deployment.name}: max_tokens {max_tokens}{raised} leaves no room for a prompt in "
            f"the deployment's context_window {deployment.context_window}; raise context_window or set "
            f"max_output_tokens"
        )
    if deployment.reasoning is not None:
        from helmflow.clients import CLIENTS

        problem = CLIENTS.get(deployment.client).reasoning_request_problem(deployment, max_tokens)
        if problem:
            raise BoardError(f"{scenario.label} x {deployment.name}: {problem}")
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
    scorer = scorer_template = None
    scored_metrics = scored_by_scorer(scenario.metrics)
    if len(scored_metrics) > 1:
        raise BoardError(f"{scenario.label}: {', '.join(scored_metrics)} each read a scorer; a scenario takes one "
                         f"scorer-backed board-wide metric")
    for scored in scored_metrics:
        scorer = (scorers or {}).get(scored)
        if scorer is None:
            raise BoardError(f"{scenario.label}: the {scored} metric needs a scorer: "
                             f"set the board's `{scored}:` or pass "
                             f"--board-wide {scored}=<deployment> ({scored}=none drops the metric)")
        scorer_template = scorer_template_for(scored, scorer)
        scorer_versions = worded_versions(template_versions([scorer_template]), texts)
        judging[f"{scored} scorer {scorer.name}"] = judges_version([scorer], scorer_versions)[scorer.name]
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
        judge_texts={n: t for n, t in texts.items()
                     if any(n == o or n.startswith(f"{o}.") for o in [*templates, scorer_template] if o)},
        scorer=scorer if scorer_template else None,
        scorer_template=scorer_template,
    )


def adaptive_run(plan: RunPlan, adaptive: AdaptivePlan) -> RunPlan:
    """``plan`` asked adaptively: its own run, query and score keys (the requests stay the full run's,
    so the journal answers every item a full or earlier adaptive run asked)."""
    tag = versions.stable_hash(adaptive.model_dump(mode="json"))[:12]
    return plan.model_copy(update={"adaptive": adaptive, "full_run_id": plan.run_id,
                                   "run_id": f"{plan.run_id}-adaptive-{tag}",
                                   "query_key": f"{plan.query_key}-adaptive-{tag}",
                                   "score_key": f"{plan.score_key}-adaptive-{tag}"})


def worded_versions(templates: dict[str, str], texts: dict[str, str]) -> dict[str, str]:
    """Template name -> VERSION, with a replaced text's hash on the ones the board rewords."""
    return {n: prompt_module.judge_version(v, prompt_module.judge_replacement(n, texts)) for n, v in templates.items()}

def with_increase(deployment: Deployment, increase: int | None) -> Deployment:
    """The deployment with the board's ``increase_max_tokens`` in place of its own (None: its own)."""
    if increase is None or increase == deployment.max_tokens_increase:
        return deployment
    return deployment.model_copy(update={"increase_max_tokens": increase})


def check_groups(spec: BoardSpec, labels: list[str], groups: list[str] | None = None) -> None:
    """Each group column names a scenario or a scenario group of the board (metrics are checked
    against run summaries)."""
    for group in spec.metric_groups:
        for column in group.columns:
            if column.scenario not in labels and column.scenario not in (groups or []):
                raise BoardError(f"board {spec.name!r}: group {group.name!r} names scenario {column.scenario!r}, "
                                 f"which the board does not run; it runs: {', '.join(labels)}")


def batch_capable(deployment: Deployment) -> bool:
    from helmflow.clients import CLIENTS

    return deployment.client in CLIENTS and CLIENTS.get(deployment.client).batch_limits[0] > 0


def board_version_data(spec: BoardSpec) -> dict[str, Any]:
    """What the board version hashes: the spec, and the versions of the across-runs statistics its
    metric groups read (their cells are computed at release time, so they are part of the release id)."""
    from helmflow.metrics import ACROSS_RUNS

    data = spec.version_data()
    known = set(ACROSS_RUNS.names())
    used = sorted({c.metric for g in spec.metric_groups for c in g.columns if c.metric in known})
    if used:
        data["across_runs"] = {name: ACROSS_RUNS.get(name).version for name in used}
    return data


def plan_board(
    spec: BoardSpec,
    deployments: dict[str, Deployment],
    selection: Selection | None = None,
    check_credentials: bool = True,
    **fields: Any,
) -> BoardPlan:
    """The runs of ``spec`` narrowed by ``selection`` (or its ``fields``: ``models=...``)."""
    chosen = Selection.of(selection, **fields)
    if chosen.batch:  # --batch: every deployment whose kind has a batch API
        deployments = {n: d.model_copy(update={"batch": True}) if batch_capable(d) else d
                       for n, d in deployments.items()}
    models, scenarios, max_instances = chosen.models, chosen.scenarios, chosen.max_instances
    chosen_models = models or spec.models
    unknown = [m for m in chosen_models if m not in deployments]
    if unknown:
        from helmflow.errors import unknown_models

        raise BoardError(unknown_models(unknown, deployments))
    entries = spec.scenarios
    if scenarios:
        known = {e.name for e in entries} | {e.label for e in entries if e.label}
        missing = [s for s in scenarios if s not in known]
        if missing:
            raise BoardError(f"board {spec.name!r} has no scenario {', '.join(missing)}; "
                             f"it has: {', '.join(sorted(known))}")
        entries = [e for e in entries if e.name in scenarios or e.label in scenarios]
    left_out = gated_left_out(entries)
    entries = [e for e in entries if (e.label or e.name) not in left_out]
    if not entries:
        raise NothingHere(spec, left_out)
    entries = [without_missing_perturbations(e, left_out) for e in entries]
    effective = spec.model_copy(update={"models": chosen_models, "scenarios": entries})
    if max_instances is not None and not chosen.adaptive:  # adaptive: N items asked from the whole pool
        effective = effective.model_copy(update={"max_instances": max_instances})
    check_extras(entries)  # a missing extra is named before any scenario reads its data
    # the board-wide metrics this run turns on, in the order they join each scenario's metrics
    on, scorers = board_wide_on(spec.board_wide, chosen.board_wide, deployments, check_credentials)
    extras = list(on)
    effective = effective.model_copy(update={"board_wide": on})
    check_prompts(spec)
    scenario_plans = [with_board_wide(plan_scenario(e, effective.max_instances, spec.prompts), extras) for e in entries]
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
    copies = [f"{s.label}{PERTURBED_MARK}{n}" for s in scenario_plans for n in s.perturbations]
    if scenarios or left_out:  # a selection (or gated data left out) keeps the group columns of the scenarios it runs
        groups = [g.model_copy(update={"columns": [c for c in g.columns if c.scenario in labels
                                                   or c.scenario in group_names or c.scenario in copies]})
                  for g in spec.metric_groups]
        effective = effective.model_copy(update={"metric_groups": [g for g in groups if g.columns]})
    perturbed = [p for s in scenario_plans for p in perturbed_plans(s)]
    effective = effective.model_copy(update={"metric_groups": [
        *effective.metric_groups, *perturbation_groups(scenario_plans, effective.metric_groups)]})
    effective = effective.model_copy(update={"metric_groups": [
        *effective.metric_groups, *board_wide_groups(scenario_plans, extras, effective.metric_groups)]})
    check_groups(effective, labels + copies, group_names)
    judged = [s for s in scenario_plans + perturbed if judge_template_names(s.metrics)]
    judge_deployments = _jury(spec.name, chosen.jury(spec.judges), deployments, judged, chosen.unjudged_allowed,
                              check_credentials)
    # the jury is part of the effective spec (and its version) only when something is judged
    effective = effective.model_copy(update={"judges": [j.name for j in judge_deployments] if judged else []})
    runs = [plan_run(s, with_increase(deployments[m], spec.increase_max_tokens), judge_deployments, scorers,
                     spec.prompts) for s in scenario_plans + perturbed for m in chosen_models]
    if spec.context_overflow == "refuse":
        runs = [r.model_copy(update={"refuse_overflow": True}) for r in runs]
    if chosen.adaptive:  # --adaptive: every cell, with the command's N and initial ability
        runs = [adaptive_run(r, AdaptivePlan(max_items=max_instances or DEFAULT_ADAPTIVE_ITEMS,
                                             initial_ability=chosen.model_ability)) for r in runs]
    elif chosen.adaptive is None:  # the board's own `adaptive:` (--no-adaptive: full runs)
        declared = {s.label: a for s, e in zip(scenario_plans, entries, strict=True)
                    if (a := entry_adaptive(spec.adaptive, e)) is not None}

        def declared_for(r: RunPlan) -> AdaptiveSpec | None:  # a perturbed copy is asked as its original
            return declared.get(r.scenario.perturbation.label if r.scenario.perturbation else r.scenario.label)

        runs = [adaptive_run(r, AdaptivePlan(max_items=a.max_items, initial_ability=a.model_ability))
                if (a := declared_for(r)) is not None else r for r in runs]
    return BoardPlan(
        spec=effective,
        board_version=versions.stable_hash(board_version_data(effective)),
        scenarios=scenario_plans,
        perturbed=perturbed,
        runs=runs,
        selection=chosen.narrowing(spec, effective, judged=bool(judged)),
        left_out=left_out,
    )


def without_missing_perturbations(entry: ScenarioEntry, left_out: dict[str, str]) -> ScenarioEntry:
    """An entry that leaves out perturbations without their data (``missing_perturbation_data: leave_out``)
    without them; each is named in ``left_out`` as ``<label>~<perturbation>`` with the files it lacks."""
    from helmflow.perturbations import PerturbationError, missing_data, resolve

    if entry.missing_perturbation_data != "leave_out" or entry.perturbations is None:
        return entry
    names = [entry.perturbations] if isinstance(entry.perturbations, str) else list(entry.perturbations)
    kept = []
    for name in names:
        try:
            members = [p.name for p in resolve(name, check=False)]
        except PerturbationError as exc:
            raise BoardError(f"scenario {entry.label or entry.name!r}: {exc}") from None
        from helmflow.perturbations import PERTURBATIONS

        lacking = {m: missing_data(PERTURBATIONS.get(m)) for m in members}
        kept += [m for m, files in lacking.items() if not files]
        for m, files in lacking.items():
            if files:
                how = ("supply the table: `helmflow fetch-assets perturbations --file PATH`"
                       if all(f.startswith("google_translate_") for f in files)
                       else "`helmflow fetch-assets perturbations` fetches it")
                left_out[f"{entry.label or entry.name}{PERTURBED_MARK}{m}"] = (
                    f"{', '.join(files)} is not in the storage root ({how})")
    caps = _perturbation_instances(entry, kept)  # by the members kept, as the list now names them
    return entry.model_copy(update={"perturbations": kept, "perturbation_instances": caps})


def gated_left_out(entries: list[ScenarioEntry]) -> dict[str, str]:
    """Entry label -> why the board runs without it: a credential-gated file of its scenario that is on no
    mirror of this machine (``DataSource.gated``). Scenarios without gated files are never looked at."""
    from helmflow.datasets import gated_missing
    from helmflow.scenarios import get_scenario

    out = {}
    for entry in entries:
        scen = get_scenario(entry.name, entry.params)
        if any(s.gated for s in scen.sources()) and (missing := gated_missing(scen)):
            out[entry.label or entry.name] = "; ".join(missing)
    return out


def _jury(board: str, names: list[str], deployments: dict[str, Deployment], judged: list[ScenarioPlan],
          unjudged_allowed: bool, check_credentials: bool = True) -> list[Deployment]:
    """The judge deployments, checked up front: known names, and a usable credential each (before any
    request). Judge-backed scenarios without a judge are an error unless the selection allows it."""
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
    needing = ", ".join(s.label for s in judged if judge_required(s.metrics))
    if not names and not unjudged_allowed and needing:
        raise BoardError(f"board {board!r}: {needing} need(s) a judge: pass --judge <deployment>[,<deployment>...], "
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
    selection: Selection | None = None,
    *,
    models_file: str | None = None,
    plugins: list[str] | None = None,
    check_credentials: bool = True,
    **fields: Any,
) -> BoardPlan:
    """Validate everything and plan the runs (no Prefect, no network): the CLI calls this first.
    ``fields`` replace the selection's (``prepare("demo", models=[...], max_instances=5)``)."""
    from helmflow.clients import load_deployments
    from helmflow.datasets import hash_once
    from helmflow.registry import add_plugins

    add_plugins(plugins or [])
    chosen = Selection.of(selection, **fields)
    with hash_once():  # each source file is read once per plan
        return plan_board(load_board(board), load_deployments(models_file), chosen, check_credentials)
