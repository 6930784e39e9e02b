"""``--dry-run``: what a board would send and what it could cost, with no model call and no write.

Instances are loaded straight from each scenario's source (or its mirror), prompts are built and
fitted to every deployment's window and priced by the code the query stage uses
(``helmflow.request_builder``), and the worst case is priced: every
prompt token at the input price plus ``max_tokens`` per request at the output price. A deployment
whose provider has a batch API is priced at its batch discount too, side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from helmflow.adapters import iter_prompts
from helmflow.plan.extras import scored_by_scorer
from helmflow.plan.records import BoardPlan, ScenarioPlan
from helmflow.records import Instance, Request
from helmflow.tokenizers import get_tokenizer


@dataclass(frozen=True)
class RunEstimate:
    scenario: str
    deployment: str
    requests: int
    prompt_tokens: int
    max_output_tokens: int
    worst_case_usd: float
    batch_usd: float | None = None  # the same at the batch price (a deployment with a batch API)


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
    from helmflow.plan.compile import batch_capable
    from helmflow.request_builder import build_requests, cost_usd, prompt_text

    # each scenario's instances are loaded for its first run and let go after its last (runs come scenario by
    # scenario), so a board of long-context scenarios holds one scenario's at a time; perturbed copies are made
    # from their originals up front
    scenarios = {s.label: s for s in plan.scenarios}
    last = {run.scenario.label: k for k, run in enumerate(plan.runs)}
    instances = {s.label: load_instances(s) for s in plan.scenarios} if plan.perturbed else {}
    unchanged = set()  # copies that change no sampled instance: the run leaves them out (pipeline.preflight)
    for s in plan.perturbed:  # a perturbed copy sends only the instances its perturbation changed
        assert s.perturbation is not None
        instances[s.label] = perturb_evaluated(s.perturbation.name, instances[s.perturbation.label], s.adapter.sample)
        if all(i.split == "train" for i in instances[s.label]):
            unchanged.add(s.label)
    # one prompt at a time (built again for each deployment, which costs less than holding them): a board
    # with long prompts (a large instructions prefix) is priced without its prompts or requests in memory
    out = []
    for k, run in enumerate(plan.runs):
        label, dep = run.scenario.label, run.deployment
        if label in unchanged:
            continue
        if label not in instances:
            instances[label] = load_instances(scenarios[label])
        asked = [(judge, template, "judging") for judge in run.judges for template in run.judge_templates]
        if run.scorer and run.scorer_template:
            scored = ", ".join(scored_by_scorer(run.scenario.metrics))
            asked.append((run.scorer, run.scorer_template, f"scoring {scored} of"))
        tok = get_tokenizer(dep.tokenizer)
        # per instance: requests, prompt tokens, output tokens, images, and (judged runs) the requests themselves
        per: dict[str, list[Any]] = {}
        for prompt in iter_prompts(run.scenario.adapter, instances[label]):
            for r in build_requests([prompt], run.scenario.adapter, dep):
                row = per.setdefault(r.instance_id, [0, 0, 0, 0, []])
                row[0] += 1
                row[1] += tok.count(prompt_text(r.body))
                row[2] += r.body.max_tokens
                row[3] += r.body.image_generation.n if r.body.image_generation is not None else 0
                if asked:  # only judged runs keep their requests: the judges' worst case reads them
                    row[4].append(r)
        rows = list(per.values())
        if run.adaptive is not None:  # at most max_items items are asked, which ones is known only as it runs:
            rows = sorted(rows, key=lambda v: -(v[1] + v[2]))[:run.adaptive.max_items]  # the costliest, worst case
        n, prompt_tokens, output_tokens, images = (sum(v[k] for v in rows) for k in range(4))
        kept: list[Request] = [r for v in rows for r in v[4]]
        out.append(RunEstimate(label, dep.name, n, prompt_tokens, output_tokens,
                               cost_usd(dep, prompt_tokens, output_tokens, images=images),
                               cost_usd(dep, prompt_tokens, output_tokens, batch=True, images=images)
                               if batch_capable(dep) else None))
        by_id = {i.id: i for i in instances[label]}
        for judge, template, verb in asked:  # judge and scorer requests are paid too (and count in --budget-usd)
            jn, p_tokens, o_tokens = worst_case(judge, template, by_id, kept, run.judge_texts)
            out.append(RunEstimate(label, f"{judge.name} {verb} {dep.name}", jn, p_tokens, o_tokens,
                                   cost_usd(judge, p_tokens, o_tokens),
                                   cost_usd(judge, p_tokens, o_tokens, batch=True) if batch_capable(judge) else None))
        if not plan.perturbed and last[label] == k:
            del instances[label]
    return out
