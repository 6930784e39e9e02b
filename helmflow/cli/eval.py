"""``helmflow eval <scenario>[:k=v,...] --models a,b [--adapter k=v,...]``: run what you want.

A path ending in ``.yaml`` is a benchmark described in a file (MedHELM's configurable benchmark,
``helmflow.scenarios.medhelm_configurable``): its ``name`` labels the board row and its jury's judges
are the board's (``--judge`` still chooses).

In HELM's run-entry spirit: the scenario specs, models and adapter overrides become an ad-hoc board
spec (data, like any board file) that goes through the same ``evaluate`` flow, caches and storage
layout as a registered board; its release lands under ``leaderboards/eval-<scenario>-<hash>/``,
where the hash covers the specs, models, adapter, metrics and max instances: two different
evaluations never share a board (or its ``latest.json``).
"""

from __future__ import annotations

import argparse
from typing import Any

from helmflow.cli.options import (
    UsageError,
    apply_data_paths,
    batch_arg,
    csv_list,
    data_path_arg,
    dry_run_arg,
    ephemeral_arg,
    force_flow_arg,
    judge_args,
    max_instances_arg,
    models_file_arg,
    prompts_arg,
    storage_arg,
    verbose_arg,
)


def _pairs(value: str) -> dict[str, Any]:
    """``k=v,k2=v2`` with YAML-typed values (``max_tokens=5`` is an int, ``method=chat`` a string)."""
    import yaml

    out: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in value.split(","))):
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected key=value, got {item!r}")
        out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
    return out


def add_parser(sub) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate scenario specs on models (an ad-hoc board through the same flow)",
        description="Evaluate one or more scenario specs (name:k=v,...) on the given models as an ad-hoc board.",
    )
    p.add_argument("scenario", nargs="+", metavar="SCENARIO[:k=v,...]",
                   help="scenario spec, e.g. dyck_language:num_parenthesis_pairs=3,label=dyck-3 (label= names the "
                        "board row; default: the spec itself), or a benchmark YAML (a path ending in .yaml: "
                        "MedHELM's configurable benchmark, its prompt, dataset, metrics and jury)")
    p.add_argument("--models", type=csv_list, help="comma-separated deployments (required; see `helmflow list models`)")
    max_instances_arg(p)
    storage_arg(p)
    models_file_arg(p)
    p.add_argument("--adapter", type=_pairs, default={}, metavar="k=v,...",
                   help="adapter overrides for every scenario, e.g. method=chat,max_train_instances=0,max_tokens=20")
    p.add_argument("--metrics", type=csv_list, help="comma-separated metrics (default: each scenario's own)")
    p.add_argument("--main-metric", help="the metric that fills the board cell (default: each scenario's own)")
    p.add_argument("--increase-max-tokens", type=int, metavar="N",
                   help="add N to every request's max_tokens (HELM's increase_max_tokens; default: 10000 for "
                        "deployments with reasoning, 0 for the others; 0 turns it off)")
    p.add_argument("--name", help="board name (default: eval-<first scenario>-<8 hex of the evaluation's spec>)")
    prompts_arg(p)
    data_path_arg(p)
    judge_args(p)
    verbose_arg(p)
    ephemeral_arg(p)
    dry_run_arg(p)
    force_flow_arg(p)
    batch_arg(p)
    p.set_defaults(func=cmd_eval)


def _file_stem(params: dict[str, Any]) -> str | None:
    """``quiz`` for a spec reading ``path=/data/quiz.jsonl``; None for a spec without a file."""
    from pathlib import PurePosixPath

    path = params.get("path")
    return (PurePosixPath(str(path).split("?")[0].rstrip("/")).stem or None) if path else None


def is_config_file(given: str) -> bool:
    """A benchmark YAML (``helmflow eval my_benchmark.yaml``) rather than a ``name:k=v`` spec."""
    return given.split("?")[0].lower().endswith((".yaml", ".yml"))


def _configured(given: str) -> tuple[str, dict[str, Any], str, list[str]]:
    """(scenario name, params, label, judges) of a benchmark YAML, checked (the file, its prompts and its
    dataset's columns) before anything is sent."""
    import os

    from helmflow.scenarios import get_scenario
    from helmflow.scenarios.medhelm_configurable import NAME, MedHELMConfigurable

    path = given if "://" in given else os.path.abspath(given)
    scen = get_scenario(NAME, {"config_path": path})
    assert isinstance(scen, MedHELMConfigurable)
    scen.check_dataset()
    return NAME, {"config_path": path}, scen.label, scen.judges


def board_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The ad-hoc board spec: JSON data, so it is a valid flow parameter and its hash is stable."""
    from helmflow.scenarios import parse_spec
    from helmflow.storage import safe_key
    from helmflow.versions import stable_hash

    if not args.models:
        raise UsageError("eval needs --models (see `helmflow list models`)")
    entries = []
    configured = {given: _configured(given) for given in args.scenario if is_config_file(given)}
    judges = list(dict.fromkeys(j for *_, js in configured.values() for j in js))
    parsed = [configured[given][:2] if given in configured else parse_spec(given) for given in args.scenario]
    stems = [configured[given][2] if given in configured else _file_stem(params)
             for given, (_, params) in zip(args.scenario, parsed, strict=True)]
    for given, (name, params), stem in zip(args.scenario, parsed, stems, strict=True):
        # `label=` names the board row (it is not a scenario parameter); by default a file's stem (a benchmark
        # YAML's `name`), unless two specs share it, else the spec itself. The full spec stays in the run's
        # parameters either way.
        label = params.pop("label", None) or (stem if stem and stems.count(stem) == 1 else given)
        entry: dict[str, Any] = {"name": name, "params": params, "adapter": dict(args.adapter), "label": label}
        if args.metrics:
            entry["metrics"] = args.metrics
        if args.main_metric:
            entry["main_metric"] = args.main_metric
        entries.append(entry)
    spec: dict[str, Any] = {
        "version": "eval",
        "description": "ad-hoc board from `helmflow eval`",
        "models": args.models,
        "scenarios": entries,
        "max_instances": args.max_instances,  # part of the ad-hoc board, not a subset of it
    }
    if judges:  # the juries the benchmark YAMLs name; --judge still chooses (it is the selection's)
        spec["judges"] = judges
    if args.increase_max_tokens is not None:
        if args.increase_max_tokens < 0:
            raise UsageError(f"--increase-max-tokens must be 0 or more (got {args.increase_max_tokens})")
        spec["increase_max_tokens"] = args.increase_max_tokens
    # Distinct evaluations are distinct boards, so one never moves another's latest.json.
    default = f"eval-{safe_key(entries[0]['label'] if stems[0] else parsed[0][0])[:40]}-{stable_hash(spec, 8)}"
    return {"name": args.name or default, **spec}


def cmd_eval(args: argparse.Namespace) -> int:
    from helmflow.cli.runner import request_from, run_board

    apply_data_paths(args)
    return run_board(request_from(args, board=board_spec(args), scenarios=None, max_instances=None))  # in the spec
