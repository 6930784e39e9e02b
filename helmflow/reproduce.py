"""``helmflow reproduce capabilities [--variant v1|v2]``: HELM's published configuration, pinned, and what differs.

It runs the board spec in ``flows/capabilities.yaml`` as HELM runs its leaderboard: at most 1,000
evaluation instances per scenario (HELM's seeded sample), the pinned dataset revisions, the
scenario variant (v1: HELM Capabilities v1; v2: its reasoning_v2 token budget and answer-format
suffix), and the judges as configured (the board's ``judges:`` or ``--judge``). Before running, it
prints every known difference from HELM's published setup, so a number is never compared blind.
"""

from __future__ import annotations

import argparse
from typing import Any

# What HELM Capabilities v1 was published with (HELM's run entries and annotators; see the README).
HELM_V1_JURY = ["openai/gpt-4o-2024-05-13", "together/llama-3.1-405b-instruct-turbo", "anthropic/claude-3-5-sonnet-20241022"]
HELM_HEAD_JURY = ["openai/gpt-4o-2024-05-13"]
MAX_INSTANCES = 1000
REPRODUCIBLE = ("capabilities",)


def add_parser(sub) -> None:
    from helmflow.cli import _csv, budget_usd, judge_args

    p = sub.add_parser(
        "reproduce",
        help="run a board in HELM's published configuration and say what differs from HELM's setup",
        description="Run HELM's pinned official configuration of a board (max 1000 instances, HELM's sampling, "
                    "revisions, judges as configured) and print what differs from HELM's published setup.",
    )
    p.add_argument("board", choices=REPRODUCIBLE)
    p.add_argument("--variant", choices=["v1", "v2"], default="v1",
                   help="v1: HELM Capabilities v1; v2: HELM's reasoning_v2 entries (more output tokens, letter-only suffix)")
    p.add_argument("--models", type=_csv, help="comma-separated deployments (default: the board's)")
    p.add_argument("--storage", help="storage root URL (default $HELMFLOW_STORAGE or ./helmflow-store)")
    p.add_argument("--models-file", help="extra deployments YAML (also $HELMFLOW_MODELS)")
    p.add_argument("--budget-usd", type=budget_usd, metavar="USD", help="stop sending new priced requests (model and judge) past USD")
    p.add_argument("--explain", action="store_true", help="print the configuration and the differences only; run nothing")
    p.add_argument("-v", "--verbose", action="store_true", help="show Prefect's own log lines")
    judge_args(p)
    p.set_defaults(func=cmd_reproduce)


def has_variant(scenario: str) -> bool:
    """Whether a scenario's parameters include ``variant`` (the HELM entries whose prompt/budget it changes)."""
    from helmflow.scenarios import SCENARIOS

    return "variant" in SCENARIOS.get(scenario).Params.model_fields


def judged_templates(spec: dict[str, Any]) -> dict[str, list[str]]:
    """Scenario label -> the judge templates its metrics read (only the judged scenarios of the board)."""
    from helmflow.board import judge_template_names
    from helmflow.scenarios import get_scenario

    out = {}
    for entry in spec["scenarios"]:
        metrics = entry.get("metrics") or get_scenario(entry["name"], entry.get("params")).metrics
        if templates := judge_template_names(metrics):
            out[entry.get("label") or entry["name"]] = templates
    return out


def with_variant(board: str | dict[str, Any], variant: str) -> dict[str, Any]:
    """The board spec as data with ``variant`` on every scenario that has one. A non-default variant
    is its own board (``<name>-<variant>``), so its releases never mix with v1's."""
    from helmflow.board import load_board

    spec = load_board(board).model_dump(mode="json")
    for entry in spec["scenarios"]:
        if has_variant(entry["name"]):
            entry["params"] = {**entry["params"], "variant": variant}
    if variant != "v1" and not spec["name"].endswith(f"-{variant}"):  # idempotent: reproduce then run
        spec["name"] = f"{spec['name']}-{variant}"
    return spec


def official_spec(board: str, variant: str) -> dict[str, Any]:
    """The board spec as data, at HELM's sample size, with the variant on every scenario that has one."""
    return {**with_variant(board, variant), "max_instances": MAX_INSTANCES}


def differences(spec: dict[str, Any], judges: list[str], variant: str, no_judge: bool) -> list[str]:
    """What differs from HELM's published setup, one sentence each (an empty list would mean none known)."""
    out = []
    by_label = judged_templates(spec)
    judged = set(by_label)
    if judged and no_judge:
        out.append(f"--no-judge: {', '.join(sorted(judged))} have no main metric, so the mean score covers the other scenarios only")
    elif judged:
        if judges == HELM_HEAD_JURY:
            out.append("judges: GPT-4o (2024-05-13) alone, as HELM's current code; HELM Capabilities v1 was published with "
                       "a jury of GPT-4o, Llama-3.1-405B-Instruct-Turbo and Claude 3.5 Sonnet (the latter two retired since)")
        elif sorted(judges) != sorted(HELM_V1_JURY):
            out.append(f"judges: {', '.join(judges)}; HELM v1 used {', '.join(HELM_V1_JURY)}")
        templates = sorted({t for names in by_label.values() for t in names})
        out.append(f"judge templates: helmflow's own {', '.join(templates)} judge prompts (same task, scale, output "
                   "shape and parsing as HELM's, different wording), so judged scores are comparable, not identical")
    if variant == "v2":
        labels = [e.get("label") or e["name"] for e in spec["scenarios"]]
        changed = [label for label, e in zip(labels, spec["scenarios"], strict=True) if has_variant(e["name"])]
        kept = [label for label in labels if label not in changed]
        out.append(f"variant v2: HELM's reasoning_v2 entries (10,000 more output tokens, letter-only answer suffix) "
                   f"applied to {', '.join(changed)} only; {', '.join(kept) or 'no other scenario'} keep their v1 budgets")
    out.append("models: HELM's numbers come from its own deployments of each model; a provider's model behind "
               "another endpoint, revision or decoding setting can differ")
    return out


def cmd_reproduce(args: argparse.Namespace) -> int:
    from rich.console import Console

    from helmflow.board import load_board
    from helmflow.cli import UsageError, _parser, cmd_run

    if args.judges and args.no_judge:
        raise UsageError("--judge and --no-judge exclude each other")
    spec = official_spec(args.board, args.variant)
    judges = [] if args.no_judge else (args.judges or load_board(args.board).judges)
    console = Console()
    console.print(f"[bold]reproducing {args.board} ({args.variant})[/]: at most {MAX_INSTANCES} instances per scenario "
                  f"(HELM's seeded sample), pinned dataset revisions, judges: {', '.join(judges) or 'none'}")
    console.print("differences from HELM's published setup:")
    for line in differences(spec, judges, args.variant, args.no_judge):
        console.print(f"  - {line}")
    if args.explain:
        return 0
    run_args = _parser().parse_args(["run", args.board])  # every `run` option at its default
    for key, value in vars(args).items():
        if hasattr(run_args, key) and key not in ("func", "board"):
            setattr(run_args, key, value)
    run_args.board, run_args.board_file = spec, None
    return cmd_run(run_args)
