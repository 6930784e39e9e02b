"""HELM's published configuration of a board, pinned, and what differs (``helmflow reproduce``).

It runs the board spec in ``flows/<board>.yaml`` as HELM runs its leaderboard: at most 1,000
evaluation instances per scenario (HELM's seeded sample), the pinned dataset revisions, the
scenario variant (v1: HELM Capabilities v1; v2: its reasoning_v2 token budget and answer-format
suffix), and the judges as configured (the board's ``judges:`` or ``--judge``). Before running, it
prints every known difference from HELM's published setup, so a number is never compared blind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `helmflow --help` imports this module: no pydantic
    from helmflow.plan.selection import Selection
    from helmflow.records import Deployment

# What HELM Capabilities v1 was published with (HELM's run entries and annotators; see docs/boards/capabilities.md).
HELM_V1_JURY = ["openai/gpt-4o-2024-05-13", "together/llama-3.1-405b-instruct-turbo",
                "anthropic/claude-3-5-sonnet-20241022"]
HELM_HEAD_JURY = ["openai/gpt-4o-2024-05-13"]
MAX_INSTANCES = 1000
REPRODUCIBLE = ("capabilities", "safety", "lite", "mmlu", "enterprise", "medhelm", "classic", "heim", "torr", "finance",
                "ewok", "thai", "air-bench", "arabic", "long-context")
#: boards HELM ran with a --max-eval-instances of its own (ToRR: 100 per run, run_entries_torr.conf's flags)
HELM_CAPS = {"torr": 100}
#: boards whose HELM conf caps each entry itself (run expanders such as HEIM's ``heim_default``): their
#: scenarios' default adapters carry those caps, so reproducing them sets no board-wide cap
PER_ENTRY_CAPS = ("heim",)


#: what an adaptive reproduction (``--adaptive``, HELM's REEval runner) does differently from HELM's; docs/adaptive.md
REEVAL_DIFFERENCES = (
    "adaptive (REEval): item easiness comes from `helmflow calibrate-items` over your published full runs of this "
    "board, matched by instance id; HELM reads stair-lab/reeval-difficulty (unpinned) and matches by exact prompt "
    "string",
    "adaptive (REEval): items are drawn from the board's seeded sample above, not from every instance of the split",
    "adaptive (REEval): the ability is refit with scipy's L-BFGS-B on HELM's mean Bernoulli loss and gradient "
    "tolerance (HELM: torch's LBFGS), so abilities agree to the tolerance, not bit for bit",
    "adaptive (REEval): each scenario's main metric is the board entry's, not HELM's scenario_to_metric_name",
)


def judged_templates(spec: dict[str, Any]) -> dict[str, list[str]]:
    """Scenario label -> the judge templates its metrics read (only the judged scenarios of the board)."""
    from helmflow.plan.spec import judge_template_names
    from helmflow.scenarios import get_scenario

    out = {}
    for entry in spec["scenarios"]:
        metrics = entry.get("metrics") or get_scenario(entry["name"], entry.get("params")).metrics
        if templates := judge_template_names(metrics):
            out[entry.get("label") or entry["name"]] = templates
    return out


def official_spec(board: str, variant: str) -> dict[str, Any]:
    """The board spec as data, at HELM's sample size (1,000, or the board's own cap when HELM ran more, as
    HELM MMLU's 10,000), with the variant on every scenario that has one."""
    from helmflow.plan.spec import with_variant

    spec = with_variant(board, variant)
    if board in PER_ENTRY_CAPS:
        return spec
    if board in HELM_CAPS:
        return {**spec, "max_instances": HELM_CAPS[board]}
    return {**spec, "max_instances": max(spec.get("max_instances") or 0, MAX_INSTANCES)}


def wording(scen: Any, prompts: dict[str, str]) -> str:
    """How a scenario's prompt wording compares with HELM's (its ``helm_wording``), and which of its
    texts a prompts file replaced (keys are per scenario, so is this line)."""
    replaced = sorted(k for k in prompts if k.startswith(f"{scen.name}."))
    known = scen.helm_wording or "not compared with HELM's"
    if not replaced:
        return f"wording, {scen.name}: {known}"
    return (f"wording, {scen.name}: {', '.join(replaced)} from your prompts file "
            "(the comparison with HELM's is yours); "
            f"helmflow's defaults: {known}")


def token_budgets(spec: dict[str, Any], models: list[str], deployments: dict[str, Deployment],
                  variant: str) -> list[str]:
    """One sentence per model whose requests get more output tokens than the adapters ask for (HELM's
    ``increase_max_tokens`` run expander: on by default for deployments with ``reasoning``)."""
    from helmflow.plan.compile import with_increase

    out = []
    for name in models:
        dep = deployments.get(name)
        if dep is None:
            continue
        dep = with_increase(dep, spec.get("increase_max_tokens"))
        n = dep.max_tokens_increase
        options = (", ".join(f"{k}={v}" for k, v in dep.reasoning.model_dump(exclude_none=True).items())
                   if dep.reasoning is not None else "")
        stacked = " on top of the v2 entries' own 10,000" if variant == "v2" else ""
        if dep.reasoning is not None and n:
            out.append(f"token budget, {name}: reasoning ({options}); every request's max_tokens is raised by {n:,}"
                       f"{stacked} (HELM's increase_max_tokens run expander, as in its reasoning run entries)")
        elif dep.reasoning is not None:
            out.append(f"token budget, {name}: reasoning ({options}) with increase_max_tokens 0; a max_tokens sized "
                       f"for a plain model can run out while it reasons (the board shows the truncated share)")
        elif n:
            out.append(f"token budget, {name}: every request's max_tokens is raised by {n:,}{stacked} "
                       f"(increase_max_tokens)")
    return out


def differences(spec: dict[str, Any], judges: list[str], variant: str, selection: Selection | None = None,
                deployments: dict[str, Deployment] | None = None) -> list[str]:
    """What differs from HELM's published setup, one sentence each (an empty list would mean none known).

    Board facts come from the board spec (``helm_jury``: the judges HELM published it with) and the
    scenarios (``helm_differences``: their data and loading differences)."""
    from helmflow.plan.spec import has_variant
    from helmflow.scenarios import get_scenario

    unjudged = bool(selection and selection.unjudged_allowed)
    out = []
    prompts = spec.get("prompts") or {}
    by_label = judged_templates(spec)
    judged = set(by_label)
    published = spec.get("helm_jury") or []
    if judged and unjudged:
        out.append(f"--no-judge: {', '.join(sorted(judged))} have no main metric, "
                   "so the mean score covers the other scenarios only")
    elif judged:
        if not judges:  # a board whose judged metrics run without a judge (Metric.without_judge)
            out.append(f"judges: none given (pass --judge <deployment>), so {', '.join(sorted(judged))} are not "
                       "scored: their cells are not available, with the reason")
        elif published:
            if sorted(judges) != sorted(published):
                out.append(f"judges: {', '.join(judges) or 'none'}; HELM published {spec['name']} with a jury of "
                           f"{', '.join(published)}")
        elif judges == HELM_HEAD_JURY:
            out.append("judges: GPT-4o (2024-05-13) alone, as HELM's current code; "
                       "HELM Capabilities v1 was published with "
                       "a jury of GPT-4o, Llama-3.1-405B-Instruct-Turbo and Claude 3.5 Sonnet "
                       "(the latter two retired since)")
        elif sorted(judges) != sorted(HELM_V1_JURY):
            out.append(f"judges: {', '.join(judges)}; HELM v1 used {', '.join(HELM_V1_JURY)}")
        templates = sorted({t for names in by_label.values() for t in names})
        replaced = [t for t in templates if any(k == f"judge.{t}" or k.startswith(f"judge.{t}.") for k in prompts)]
        ours = [t for t in templates if t not in replaced]
        if ours:
            out.append(f"judge templates: helmflow's own {', '.join(ours)} judge prompts (same task, scale, output "
                       "shape and parsing as HELM's, different wording), "
                       "so judged scores are comparable, not identical")
        if replaced:
            out.append(f"judge templates: {', '.join(replaced)} worded by your prompts file "
                       "(same parsing as helmflow's)")
    out.extend(spec.get("helm_differences") or [])
    for entry in spec["scenarios"]:
        scen = get_scenario(entry["name"], entry.get("params"))
        for line in [*scen.helm_differences, wording(scen, prompts)]:
            if line not in out:  # one scenario in several entries (MMLU's subjects) says it once
                out.append(line)
    from helmflow.plan.extras import board_wide
    from helmflow.plan.spec import OFF, load_board

    chosen = {**load_board(spec).board_wide, **(selection.board_wide if selection else {})}
    for name, value in chosen.items():  # a board-wide metric HELM's board does not have says so itself
        note = board_wide(name).helm_difference
        if note and value not in (None, False, "", OFF):
            out.append(note.format(scorer=value))
    if variant == "v2":
        labels = [e.get("label") or e["name"] for e in spec["scenarios"]]
        changed = [label for label, e in zip(labels, spec["scenarios"], strict=True) if has_variant(e["name"])]
        kept = [label for label in labels if label not in changed]
        out.append(f"variant v2: HELM's reasoning_v2 entries (10,000 more output tokens, letter-only answer suffix) "
                   f"applied to {', '.join(changed)} only; "
                   f"{', '.join(kept) or 'no other scenario'} keep their v1 budgets")
    if deployments:
        out.extend(token_budgets(spec, (selection.models if selection else None) or spec.get("models") or [],
                                 deployments, variant))
    if selection is not None and selection.adaptive:
        out.extend(REEVAL_DIFFERENCES)
    out.append("models: HELM's numbers come from its own deployments of each model; a provider's model behind "
               "another endpoint, revision or decoding setting can differ")
    return out
