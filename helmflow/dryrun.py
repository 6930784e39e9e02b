"""``--dry-run``: what a board would send and what it could cost, with no model call and no write.

Instances are loaded straight from each scenario's source (or its mirror), prompts are built and
fitted to every deployment's window and priced by the code the query stage uses
(``helmflow.request_builder``), and the worst case is priced: every
prompt token at the input price plus ``max_tokens`` per request at the output price.
"""

from __future__ import annotations

from dataclasses import dataclass

from helmflow.adapters import adapt
from helmflow.plan.extras import scored_by_scorer
from helmflow.plan.records import BoardPlan, ScenarioPlan
from helmflow.records import Instance
from helmflow.tokenizers import get_tokenizer


@dataclass(frozen=True)
class RunEstimate:
    scenario: str
    deployment: str
    requests: int
    prompt_tokens: int
    max_output_tokens: int
    worst_case_usd: float


def load_instances(plan: ScenarioPlan) -> list[Instance]:
    """The scenario's instances read from where a download would fetch them; nothing is stored."""
    from helmflow.datasets import load_checked, resolve_source
    from helmflow.scenarios import get_scenario

    scen = get_scenario(plan.name, plan.params)
    files = {s.filename: resolve_source(plan.name, plan.dataset_revision, s) for s in scen.sources()}
    return load_checked(plan, files, None)


def estimate(plan: BoardPlan) -> list[RunEstimate]:
    from helmflow.judges import worst_case
    from helmflow.perturbations import perturb_evaluated
    from helmflow.request_builder import build_requests, cost_usd, prompt_text

    instances = {s.label: load_instances(s) for s in plan.scenarios}
    unchanged = set()  # copies that change no sampled instance: the run leaves them out (pipeline.preflight)
    for s in plan.perturbed:  # a perturbed copy sends only the instances its perturbation changed
        assert s.perturbation is not None
        instances[s.label] = perturb_evaluated(s.perturbation.name, instances[s.perturbation.label], s.adapter.sample)
        if all(i.split == "train" for i in instances[s.label]):
            unchanged.add(s.label)
    prompts = {s.label: adapt(s.adapter, instances[s.label]) for s in plan.all_scenarios if s.label not in unchanged}
    out = []
    for run in plan.runs:
        if run.scenario.label in unchanged:
            continue
        dep = run.deployment
        requests = build_requests(prompts[run.scenario.label], run.scenario.adapter, dep)
        tok = get_tokenizer(dep.tokenizer)
        prompt_tokens = sum(tok.count(prompt_text(r.body)) for r in requests)
        output_tokens = sum(r.body.max_tokens for r in requests)
        cost = cost_usd(dep, prompt_tokens, output_tokens)
        out.append(RunEstimate(run.scenario.label, dep.name, len(requests), prompt_tokens, output_tokens, cost))
        by_id = {i.id: i for i in instances[run.scenario.label]}
        asked = [(judge, template, "judging") for judge in run.judges for template in run.judge_templates]
        if run.scorer and run.scorer_template:
            scored = ", ".join(scored_by_scorer(run.scenario.metrics))
            asked.append((run.scorer, run.scorer_template, f"scoring {scored} of"))
        for judge, template, verb in asked:  # judge and scorer requests are paid too (and count against --budget-usd)
            n, p_tokens, o_tokens = worst_case(judge, template, by_id, requests, run.judge_texts)
            j_cost = cost_usd(judge, p_tokens, o_tokens)
            out.append(RunEstimate(run.scenario.label, f"{judge.name} {verb} {dep.name}", n, p_tokens, o_tokens,
                                   j_cost))
    return out
