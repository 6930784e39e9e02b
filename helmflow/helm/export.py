"""``helmflow export --format helm``: published runs as HELM run folders, so tools that read only
HELM's tree can read ours; what is exported imports back (``helmflow import-helm``) to the same stats.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from helmflow import layout
from helmflow.helm.tree import (
    INSTANCES,
    PER_INSTANCE_STATS,
    RUN_SPEC,
    SCENARIO_STATE,
    STATS,
    our_adapter,
    perturbed_stat,
    split_perturbed,
    split_sub_split,
    to_helm_instance,
)
from helmflow.manifests import RunManifest
from helmflow.records import (
    COMPLETION_SCHEMA,
    REQUEST_SCHEMA,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    AdapterSpec,
    Completion,
    MetricSummary,
    Request,
    Stat,
    instance_from_row,
    request_from_row,
)
from helmflow.storage import Store, safe_key


def _helm_stat(name: str, split: str, values: list[float], count: int | None = None, mean: float | None = None,
               perturbations: dict[str, dict] | None = None, sub_split: str | None = None) -> dict:
    """HELM's ``Stat``; a ``<metric>~<perturbation>~<computed_on>`` name gets HELM's perturbation back
    (the description the import kept in ``perturbations``), a ``<metric>:sub_split=<name>`` name (or a
    per-instance value of an instance with a sub-split) its ``sub_split``."""
    n = count if count is not None else len(values)
    helm_name: dict[str, Any] = {"name": name, "split": split}
    if (parts := split_perturbed(name)) and parts[1] in (perturbations or {}):
        metric, perturbation, on = parts
        helm_name = {"name": metric, "split": split, "perturbation": {**(perturbations or {})[perturbation],
                                                                       "computed_on": on}}
    metric, sub = split_sub_split(helm_name["name"])
    if sub is not None or sub_split:
        helm_name = {**helm_name, "name": metric, "sub_split": sub or sub_split}
    if not n:  # HELM's empty stat (count 0): no mean, min or max
        return {"name": helm_name, "count": 0, "sum": 0, "sum_squared": 0}
    mean = mean if mean is not None else (sum(values) / len(values) if values else 0.0)
    total = mean * n
    squares = sum(v * v for v in values) if values and len(values) == n else mean * mean * n
    variance = max(squares / n - mean * mean, 0.0) if n else 0.0
    return {"name": helm_name, "count": n, "sum": total, "sum_squared": squares,
            "min": min(values) if values else mean, "max": max(values) if values else mean, "mean": mean,
            "variance": variance, "stddev": math.sqrt(variance)}


def helm_run_name(manifest: RunManifest) -> str:
    if manifest.imported:
        return str(manifest.imported.run_spec["name"])
    args = [f"{k}={v}" for k, v in sorted(manifest.scenario.params.items())] + [f"model={manifest.deployment.name}"]
    return f"{manifest.scenario.name}:{','.join(args)}"


def helm_files(store: Store, manifest: RunManifest) -> dict[str, bytes]:
    """HELM's five run files for one published run (``run_spec.json`` verbatim for an imported run)."""
    rid = manifest.run_id

    def rows(name: str, schema: pa.Schema) -> list[dict]:  # the record's columns (run files lead with the run's ids)
        table = store.read_parquet(layout.run_file(rid, name))
        # a run stored before a column was added lacks it: the record's default stands in
        return table.select([n for n in schema.names if n in table.schema.names]).to_pylist()

    requests = [request_from_row(r) for r in rows("requests.parquet", REQUEST_SCHEMA)]
    completions = [Completion.model_validate(r) for r in rows("completions.parquet", COMPLETION_SCHEMA)]
    stats = [Stat.model_validate(r) for r in rows("stats.parquet", STAT_SCHEMA)]
    summary = [MetricSummary.model_validate(r) for r in rows("summary.parquet", SUMMARY_SCHEMA)]
    ids = {r.instance_id for r in requests}
    key = layout.instances(safe_key(manifest.scenario.name), manifest.versions.scenario_version)
    instances = {row["id"]: instance_from_row(row) for row in store.read_parquet(key).to_pylist() if row["id"] in ids}
    adapter = AdapterSpec.model_validate(manifest.adapter) if not manifest.imported else our_adapter(
        manifest.imported.run_spec.get("adapter_spec") or {})
    n = adapter.generation.num_outputs
    if manifest.imported:
        run_spec = manifest.imported.run_spec
    else:
        g = adapter.generation
        helm_adapter = {**adapter.model_dump(exclude={"generation", "sample", "train_seed"}),
                        "max_tokens": g.max_tokens, "temperature": g.temperature, "stop_sequences": g.stop,
                        "num_outputs": g.num_outputs, "max_eval_instances": adapter.sample.max_eval_instances,
                        "num_train_trials": adapter.sample.trials, "model": manifest.deployment.model,
                        "model_deployment": manifest.deployment.name}
        run_spec = {"name": helm_run_name(manifest),
                    "scenario_spec": {"class_name": f"helmflow.scenarios.{manifest.scenario.name}",
                                      "args": manifest.scenario.params},
                    "adapter_spec": helm_adapter,
                    "metric_specs": [{"class_name": f"helmflow.metrics.{m}", "args": {}}
                                     for m in sorted(manifest.metrics)],
                    "groups": [manifest.scenario.name]}
    # one HELM request state per (instance, trial), per option for log-likelihood multiple choice, per reference
    # for binary ranking and per window for language modeling
    grouped: dict[tuple, list[tuple[Request, Completion]]] = defaultdict(list)
    for r, c in zip(requests, completions, strict=True):
        window = r.request_hash if r.body.echo and r.continuation is None else None
        grouped[(r.instance_id, r.sample_index // n, r.continuation, r.request_mode, r.reference_index, window)].append(
            (r, c))
    states = []
    for (instance_id, trial, continuation, mode, reference, _), pairs in grouped.items():
        first = pairs[0][0]
        body = first.body
        failed = [c for _, c in pairs if not c.ok]
        options = [ref.text for ref in instances[instance_id].references]
        separate = {"request_mode": mode or "original", "reference_index": options.index(continuation)} \
            if continuation is not None and continuation in options else {}
        if reference is not None and not separate:
            separate = {"request_mode": "original", "reference_index": reference}
        if first.num_conditioning_tokens:
            separate["num_conditioning_tokens"] = first.num_conditioning_tokens
        states.append({
            "instance": to_helm_instance(instances[instance_id]),
            "train_trial_index": trial,
            **separate,
            "output_mapping": first.output_mapping or None,
            "request": {"model_deployment": manifest.deployment.name, "model": body.model, "embedding": False,
                        "prompt": body.prompt or "",
                        "messages": [m.model_dump() for m in body.messages] if body.messages else None,
                        "temperature": body.temperature, "num_completions": len(pairs), "max_tokens": body.max_tokens,
                        "stop_sequences": body.stop, "echo_prompt": bool(body.echo)},
            "result": {"success": not failed, "embedding": [], "cached": True,
                       "request_time": pairs[0][1].latency_s, "error": failed[0].error if failed else None,
                       "completions": [] if failed else [
                           {"text": c.text, "logprob": sum(c.logprobs),
                            "tokens": [{"text": t, "logprob": lp}
                                       for t, lp in zip(c.tokens, c.logprobs or [0.0] * len(c.tokens))],
                            "finish_reason": {"reason": c.finish_reason}} for _, c in pairs]},
            "num_train_instances": first.num_train_instances,
            "prompt_truncated": first.prompt_truncated,
        })
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    perturbations = manifest.imported.perturbations if manifest.imported else {}
    # one HELM PerInstanceStats per instance, and per (instance, perturbation) for its perturbed values
    by_instance: dict[tuple[str, str | None], list[dict]] = defaultdict(list)
    for s in stats:
        values[(s.name, s.split)].append(s.value)
        parts = split_perturbed(s.name)
        perturbation = parts[1] if parts and parts[1] in perturbations else None
        inst = instances.get(s.instance_id)
        by_instance[(s.instance_id, perturbation)].append(
            _helm_stat(s.name, s.split, [s.value], perturbations=perturbations,
                       sub_split=inst.sub_split if inst else None))
    # HELM writes a split whose instances have sub-splits only per sub-split: the whole split's row that
    # the import merged from them is not written back
    by_sub = {(_without_sub_split(s.name), s.split) for s in summary if _without_sub_split(s.name) != s.name}
    helm_stats_out = [_helm_stat(s.name, s.split, values.get((s.name, s.split), []), s.count,
                                 None if math.isnan(s.mean) else s.mean, perturbations)
                      for s in summary if (s.name, s.split) not in by_sub]
    per_instance = [{"instance_id": i,
                     **({"perturbation": {**perturbations[p], "computed_on": "perturbed"}} if p else {}),
                     "train_trial_index": 0, "stats": v} for (i, p), v in by_instance.items()]
    return {RUN_SPEC: _dump(run_spec),
            SCENARIO_STATE: _dump({"adapter_spec": run_spec.get("adapter_spec"), "request_states": states}),
            STATS: _dump(helm_stats_out), PER_INSTANCE_STATS: _dump(per_instance),
            INSTANCES: _dump([to_helm_instance(i) for i in instances.values()])}


def _without_sub_split(name: str) -> str:
    """The whole split's name of a ``<metric>:sub_split=<name>[~<perturbation>~<computed_on>]`` stat."""
    parts = split_perturbed(name)
    metric = split_sub_split(parts[0] if parts else name)[0]
    return perturbed_stat(metric, parts[1], parts[2]) if parts else metric


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def helm_folder_name(run_name: str) -> str:
    """HELM's run folder name: the run name with ``/`` as ``_`` (a name that would still climb or hide
    is made storage-safe)."""
    folder = run_name.replace("/", "_").replace("\\", "_")
    return safe_key(folder) if folder.strip(".") == "" or any(ord(ch) < 32 for ch in folder) else folder


def export_helm(store: Store, manifests: Iterable[RunManifest], dest: Store) -> list[str]:
    """Write each run as a HELM run folder under ``dest`` (a suite folder ``import-helm`` reads back)."""
    written = []
    for manifest in manifests:
        folder = helm_folder_name(helm_run_name(manifest))
        for name, data in helm_files(store, manifest).items():
            dest.write_bytes(f"{folder}/{name}", data)
        written.append(folder)
    return written
