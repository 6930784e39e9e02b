"""``helmflow export --format every-eval-ever``: a release in the Every Eval Ever schema (v0.2.2).

Every Eval Ever (https://github.com/evaleval/every_eval_ever) keeps one JSON file per model, laid out
as ``data/<benchmark>/<developer>/<model>/<uuid>.json``. Here the benchmark is the board, so a release
becomes one file per deployment holding:

- one result per summary number of each of the model's runs (its main split: ``test``, else the only
  one), named by the scenario label, the metric as ``metric_id``, the bootstrap interval in
  ``score_details.uncertainty``; the run's main metric is marked ``main_metric: "true"``;
- one result per board-level leaderboard cell (mean win rate, the metric groups' columns and their
  win rates, grouped columns), with the interval where the leaderboard has one.

The file's uuid is a uuid5 of the board, release and deployment, and ``retrieved_timestamp`` is the
release's creation time, so exporting the same release twice writes the same bytes. Every file is
validated against the vendored schema (``helmflow/helm/data/every_eval_ever/``) before any is written.

Schema 0.2.2 reads a metric without ``score_type`` as ``levels``, and asks a continuous one for its
bounds. A metric's range is known only where it is declared: :data:`PROPORTIONS` are ``continuous`` in
[0, 1], :data:`NON_NEGATIVE` (latency, cost, token counts) in [0, the largest double]; any other is
``continuous`` over the whole double range with ``additional_details.range = "not declared"``, so a
reader can tell a real bound from a placeholder.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.storage import Store, safe_key

SCHEMA_VERSION = "0.2.2"
#: where the vendored schema lives, inside the package
SCHEMA_RESOURCE = ("helmflow.helm", "data/every_eval_ever/eval.schema.json")
#: the namespace of the files' uuid5 names (fixed: the same release and deployment always get the same name)
NAMESPACE = uuid.UUID("9b1f6f0e-3c2a-5d4e-8f7a-6b5c4d3e2f10")

# Declared data: the metrics known to be proportions in [0, 1], and those where lower is better.
PROPORTIONS = frozenset({
    "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "f1_score",
    "rouge_l", "rouge_1", "rouge_2", "error", "robustness", "fairness", "mean_win_rate", "win_rate",
    "classification_macro_f1", "classification_micro_f1", "math_equiv",
    "math_equiv_chain_of_thought", "final_number_exact_match",
})
LOWER_IS_BETTER = frozenset({"latency_s", "cost_usd", "error", "num_output_tokens", "judge_cost_usd",
                             "expected_max_toxicity", "toxic_frac", "ece_10_bin", "ece_1_bin"})
NON_NEGATIVE = frozenset({"latency_s", "cost_usd", "judge_cost_usd", "num_output_tokens", "num_prompt_tokens",
                          "num_requests", "num_train_instances", "num_completions", "reasoning_tokens",
                          "prompt_tokens", "output_tokens", "inference_runtime", "training_co2_cost"})
DOUBLE_MAX = 1.7976931348623157e308
CONFIDENCE = 0.95  # helmflow's intervals: percentile bootstrap (helmflow.stats.mean_ci)


@dataclass
class EEEFile:
    key: str  # where it goes under the export root
    record: dict[str, Any]
    deployment: str


@cache
def schema() -> dict[str, Any]:
    package, name = SCHEMA_RESOURCE
    return json.loads(resources.files(package).joinpath(name).read_text())


def validate(record: dict[str, Any]) -> None:
    """Raise :class:`HelmflowError` naming the first place ``record`` breaks the schema."""
    import jsonschema

    validator = jsonschema.Draft7Validator(schema())
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise HelmflowError(f"Every Eval Ever record for {record.get('model_info', {}).get('name')} breaks "
                            f"schema {SCHEMA_VERSION} at {where}: {e.message}")


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _epoch(iso: str) -> str:
    return repr(datetime.fromisoformat(iso).timestamp())


def _metric_config(metric: str, description: str, lower: bool | None = None) -> dict[str, Any]:
    base = metric.split("~", 1)[0]
    config: dict[str, Any] = {"evaluation_description": description, "metric_id": metric, "metric_name": metric,
                              "lower_is_better": base in LOWER_IS_BETTER if lower is None else lower}
    if base in PROPORTIONS:
        config.update(score_type="continuous", min_score=0.0, max_score=1.0, metric_unit="proportion")
    elif base in NON_NEGATIVE or base.startswith("num_"):
        config.update(score_type="continuous", min_score=0.0, max_score=DOUBLE_MAX,
                      additional_details={"range": "non-negative, unbounded above"})
    else:
        config.update(score_type="continuous", min_score=-DOUBLE_MAX, max_score=DOUBLE_MAX,
                      additional_details={"range": "not declared"})
    return config


def _score(value: float, low: float | None, high: float | None, count: int | None,
           details: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"score": value, "details": details}
    uncertainty: dict[str, Any] = {}
    if low is not None and high is not None:
        uncertainty["confidence_interval"] = {"lower": low, "upper": high, "confidence_level": CONFIDENCE,
                                              "method": "percentile bootstrap"}
    if count is not None:
        uncertainty["num_samples"] = int(count)
    if uncertainty:
        out["uncertainty"] = uncertainty
    return out


def _main_split(splits: set[str]) -> str | None:
    return "test" if "test" in splits or not splits else sorted(splits)[0] if len(splits) == 1 else None


def _source(manifest: RunManifest) -> dict[str, Any]:
    details = {"scenario": manifest.scenario.name, "scenario_params": json.dumps(manifest.scenario.params,
                                                                                 sort_keys=True),
               "dataset_revision": manifest.dataset.revision,
               "scenario_version": manifest.versions.scenario_version}
    if manifest.instances is not None:
        details["instances"] = str(manifest.instances)
    return {"dataset_name": manifest.scenario.label, "source_type": "other", "additional_details": details}


def _generation(manifest: RunManifest) -> dict[str, Any]:
    gen = (manifest.adapter or {}).get("generation") or {}
    args: dict[str, Any] = {}
    if isinstance(gen.get("temperature"), int | float):
        args["temperature"] = float(gen["temperature"])
    if isinstance(gen.get("max_tokens"), int) and gen["max_tokens"] >= 1:
        args["max_tokens"] = gen["max_tokens"]
    if manifest.deployment.reasoning:
        args["reasoning"] = True
    details = {"method": str((manifest.adapter or {}).get("method", "")),
               "stop": json.dumps(gen.get("stop") or []), "num_outputs": str(gen.get("num_outputs", 1)),
               "prompt_version": manifest.versions.prompt_version,
               "adapter": json.dumps(manifest.adapter, sort_keys=True)}
    return {"generation_args": args, "additional_details": details}


def _run_results(store: Store, manifest: RunManifest) -> list[dict[str, Any]]:
    rows = store.read_parquet(layout.run_file(manifest.run_id, "summary.parquet")).to_pylist()
    split = _main_split({r["split"] for r in rows})
    label = manifest.scenario.label
    out = []
    for r in rows:
        value = _num(r["mean"])
        if r["split"] != split or value is None:
            continue
        name = r["name"]
        details = {"split": r["split"], "run_id": manifest.run_id, "run_status": manifest.status,
                   "main_metric": str(name == manifest.main_metric).lower(),
                   "metric_version": manifest.metrics.get(name.split("~", 1)[0], "")}
        out.append({
            "evaluation_result_id": f"{label}/{name}/{r['split']}",
            "evaluation_name": label,
            "source_data": _source(manifest),
            "evaluation_timestamp": manifest.lineage.published_at,
            "metric_config": _metric_config(name, f"{name} on {label} ({r['split']} split)"),
            "score_details": _score(value, _num(r.get("ci_low")), _num(r.get("ci_high")), r.get("count"), details),
            "generation_config": _generation(manifest),
        })
    return out


def _board_columns(info: ReleaseManifest) -> list[tuple[str, str, bool]]:
    """(leaderboard column, description, lower is better) of the board-level cells."""
    cols = [("mean_win_rate", "the share of other models this model beats, averaged over the board's scenarios",
             False)]
    for g in info.metric_groups:
        cols.append((f"{g.name} mean_win_rate", f"mean win rate over {g.name}: {g.description}", False))
        if "mean" in g.aggregation:
            cols.append((f"{g.name} mean", f"mean over {g.name}: {g.description}",
                         any(c.lower_is_better for c in g.columns)))
        for c in g.columns:
            cols.append((f"{c.scenario}/{c.metric}", c.description or f"{c.metric} on {c.scenario}",
                         bool(c.lower_is_better)))
    for column, labels in info.groups.items():
        cols.append((column, "the mean of " + ", ".join(labels), False))
    once: dict[str, tuple[str, str, bool]] = {}
    for entry in cols:  # each column once, where it first comes
        once.setdefault(entry[0], entry)
    return list(once.values())


def _board_results(info: ReleaseManifest, row: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for column, description, lower in _board_columns(info):
        value = _num(row.get(column))
        if value is None:
            continue
        metric = column.rsplit("/", 1)[-1].rsplit(" ", 1)[-1]
        details = {"leaderboard_column": column, "release_id": info.release_id}
        if note := row.get(f"{column} note"):
            details["note"] = str(note)
        config = _metric_config(metric, description, lower)
        config["metric_id"] = f"helmflow.{safe_key(info.board)}.{column}"
        out.append({
            "evaluation_result_id": f"{info.board}/{column}",
            "evaluation_name": f"{info.board} {column}",
            "source_data": {"dataset_name": info.board, "source_type": "other",
                            "additional_details": {"scenarios": ", ".join(info.scenarios),
                                                   "board_version": info.board_version}},
            "evaluation_timestamp": info.created_at,
            "metric_config": config,
            "score_details": _score(value, _num(row.get(f"{column} ci_low")), _num(row.get(f"{column} ci_high")),
                                    None, details),
        })
    return out


def _model_info(info: ReleaseManifest, deployment: str, manifest: RunManifest | None) -> dict[str, Any]:
    meta = info.model_metadata.get(deployment) or {}
    developer = str(meta.get("creator") or (deployment.split("/", 1)[0] if "/" in deployment else "unknown"))
    out: dict[str, Any] = {"name": deployment, "id": deployment, "developer": developer}
    details = {k: str(v) for k, v in meta.items() if v is not None and not isinstance(v, dict | list)}
    if manifest:
        d = manifest.deployment
        out["inference_platform"] = d.client
        details.update({"provider_model": d.model, "revision": d.revision,
                        "model_version": manifest.versions.model_version})
        if d.tokenizer:
            details["tokenizer"] = d.tokenizer
        if d.context_window:
            details["context_window"] = str(d.context_window)
    out["additional_details"] = details
    return out


def _path_part(name: str) -> str:
    return safe_key(name.replace("/", "_")) or "unknown"


def eee_files(store: Store, info: ReleaseManifest, runs: list[RunManifest], organization: str,
              relationship: str) -> list[EEEFile]:
    """One validated Every Eval Ever record per deployment of the release."""
    name = safe_key(info.board)
    board_rows = {r["deployment"]: r for r in
                  store.read_parquet(layout.release_file(name, info.release_id, "leaderboard.parquet")).to_pylist()}
    retrieved = _epoch(info.created_at)
    files = []
    for deployment in info.models:
        mine = [m for m in runs if m.deployment.name == deployment]
        if not mine and deployment not in board_rows:
            continue
        order = {label: i for i, label in enumerate(info.scenarios)}
        mine.sort(key=lambda m: order.get(m.scenario.label, len(order)))
        results = [r for m in mine for r in _run_results(store, m)]
        results += _board_results(info, board_rows.get(deployment, {}))
        if not results:
            continue
        model = _model_info(info, deployment, mine[0] if mine else None)
        imported = sorted({m.imported.format for m in mine if m.imported})
        library_details = {"board_version": info.board_version, "declared_version": info.declared_version,
                           "release_id": info.release_id, "release_status": info.status,
                           "run_ids": ",".join(m.run_id for m in mine)}
        if info.git_commit:
            library_details["git_commit"] = info.git_commit
        if imported:
            library_details["imported_from"] = ",".join(imported)
        record = {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": f"{info.board}/{deployment}/{retrieved}",
            "evaluation_timestamp": info.created_at,
            "retrieved_timestamp": retrieved,
            "source_metadata": {"source_name": f"helmflow {info.board} board", "source_type": "evaluation_run",
                                "source_organization_name": organization,
                                "evaluator_relationship": relationship,
                                "additional_details": {"board": info.board, "release_id": info.release_id,
                                                       "subset": str(info.subset).lower()}},
            "eval_library": {"name": "helmflow", "version": info.helmflow_version,
                             "additional_details": library_details},
            "model_info": model,
            "evaluation_results": results,
        }
        validate(record)
        developer, _, model_name = deployment.partition("/") if "/" in deployment else ("unknown", "", deployment)
        file_id = uuid.uuid5(NAMESPACE, f"{info.board}\n{info.release_id}\n{deployment}")
        key = f"data/{_path_part(info.board)}/{_path_part(developer)}/{_path_part(model_name)}/{file_id}.json"
        files.append(EEEFile(key=key, record=record, deployment=deployment))
    return files


def export_every_eval_ever(store: Store, info: ReleaseManifest, runs: list[RunManifest], dest: Store,
                           organization: str, relationship: str = "third_party") -> list[EEEFile]:
    """Write the release's records under ``dest`` (each validated first; nothing written if one fails)."""
    files = eee_files(store, info, runs, organization, relationship)
    for f in files:
        dest.write_bytes(f.key, (json.dumps(f.record, indent=2, ensure_ascii=False) + "\n").encode())
    return files
