"""HELM's output tree, in and out: ``helmflow import-helm`` and ``helmflow export --format helm``.

HELM writes one folder per run under ``benchmark_output/runs/<suite>/`` (``run_spec.json``,
``scenario_state.json``, ``stats.json``, ``per_instance_stats.json``; ``instances.json`` after
``helm-summarize``). Importing turns each folder into a run of our storage contract (instances,
requests, completions, stats, summary, ``run.json`` last) whose versions are marked ``imported-…``
and whose ``run.json`` keeps HELM's run spec verbatim, the source folder and the sha256 of every
file read (``RunManifest.imported``). HELM's numbers are kept as HELM computed them; where a
helmflow metric reproduces one of them (``HelmEquivalent`` in ``metrics/``), the importer recomputes
it on the imported completions and records whether both agree.

A folder is converted entirely in memory before anything is written, and ``run.json`` is written
last, so a malformed folder (a missing file, truncated JSON, no metric helmflow knows) is skipped
whole and never leaves a half run. Perturbed request states (robustness/fairness variants) are
counted, not imported: our records have no perturbation axis.

Exporting goes the other way for any published run, so tools that read only HELM's tree can read
ours; what we export imports back to the same stats.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from fsspec.core import url_to_fs
from pydantic import ValidationError

import helmflow
from helmflow import layout, releases, versions
from helmflow.aggregate import RUNS_SCHEMA, leaderboard_schema
from helmflow.errors import HelmflowError
from helmflow.integrity import sha256_hex
from helmflow.manifests import HelmCheck, ReleaseManifest, RunManifest
from helmflow.metrics import METRICS, MissingExtra, helm_stats
from helmflow.pipeline import RUN_ROW_GROUP_ROWS, main_summary, references_table, with_run_ids
from helmflow.plan.spec import board_names
from helmflow.records import (
    COMPLETION_SCHEMA,
    INSTANCE_SCHEMA,
    REQUEST_SCHEMA,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    AdapterSpec,
    ChatMessage,
    Completion,
    EvalSample,
    GenerationParams,
    Input,
    Instance,
    MetricSummary,
    Reference,
    Request,
    RequestBody,
    Stat,
    instance_from_row,
    instance_to_row,
    models_to_table,
    request_from_row,
    request_to_row,
    to_table,
)
from helmflow.scoring import score_instances, summarize
from helmflow.stats import mean_ci, mean_scores, win_rates
from helmflow.storage import Store, encode_parquet, safe_key

RUN_SPEC = "run_spec.json"
SCENARIO_STATE = "scenario_state.json"
STATS = "stats.json"
PER_INSTANCE_STATS = "per_instance_stats.json"
INSTANCES = "instances.json"
HELM_FILES = (RUN_SPEC, SCENARIO_STATE, STATS, PER_INSTANCE_STATS, INSTANCES)
REQUIRED = (RUN_SPEC, SCENARIO_STATE, STATS)
CORRECT_TAG = "correct"
IMPORTED = "imported"
CLIENT = "helm"  # the deployment "client" of an imported run: it was queried by HELM, not by us
TOLERANCE = 1e-9  # HELM's numbers and ours are both float64 means of the same values
# HELM's reference metrics: a run is ranked on one of these only when no other known metric is present
REFERENCE_METRICS = ("exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "f1_score")
MODEL_ARGS = ("model", "model_deployment")


class BadRun(ValueError):
    """A HELM run folder that cannot be imported whole: the reason names the file and what is wrong."""


@dataclass
class Skipped:
    where: str
    why: str


@dataclass
class ImportedRun:
    run_id: str
    label: str
    deployment: str
    main_metric: str
    score: float | None
    source: str
    wrote: bool
    checks: list[HelmCheck]
    unchecked: list[str]
    perturbed: int

    @property
    def mismatches(self) -> list[HelmCheck]:
        return [c for c in self.checks if not c.equal]


@dataclass
class ImportReport:
    runs: list[ImportedRun] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    release_id: str | None = None
    release_uri: str | None = None

    @property
    def ok(self) -> bool:
        return not self.skipped and not any(r.mismatches for r in self.runs)


# --------------------------------------------------------------------------- reading a HELM tree
def run_folders(url: str) -> tuple[Any, list[str]]:
    """The run folders under ``url`` (a suite folder, or one run folder), as fsspec paths.

    A folder with any of HELM's run files is a run folder (the suite's ``groups/`` from
    helm-summarize has none and is ignored)."""
    try:
        fs, base = url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise HelmflowError(f"cannot open {url}: {exc}") from None
    base = base.rstrip("/")
    if not fs.exists(base):
        raise HelmflowError(f"{url} does not exist")
    entries = _listing(fs, base)
    if (not entries and not fs.isdir(base)) or (entries and all(e["name"].rstrip("/") == base and e.get("type") == "file"
                                                              for e in entries)):
        raise HelmflowError(f"{url} is not a folder; give a HELM suite folder (benchmark_output/runs/<suite>) or one run folder")
    if {_basename(e["name"]) for e in entries} & set(HELM_FILES):
        return fs, [base]
    folders = []
    for entry in sorted(entries, key=lambda e: e["name"]):
        if entry.get("type") == "directory" and {_basename(e["name"]) for e in _listing(fs, entry["name"])} & set(HELM_FILES):
            folders.append(entry["name"].rstrip("/"))
    if not folders:
        raise HelmflowError(f"{url} holds no HELM run folder (none has {', '.join(REQUIRED)})")
    return fs, folders


def _basename(path: str) -> str:
    """The last segment of a listed path (HTTP listings give percent-encoded URLs)."""
    return unquote(path.rstrip("/").rsplit("/", 1)[-1])


def _listing(fs: Any, path: str) -> list[dict]:
    try:
        return fs.ls(path, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_folder(fs: Any, folder: str) -> dict[str, bytes]:
    """The bytes of the HELM files present in ``folder``; a missing required file is a :class:`BadRun`."""
    present = {_basename(e["name"]) for e in _listing(fs, folder)}
    missing = [n for n in REQUIRED if n not in present]
    if missing:
        raise BadRun(f"no {' or '.join(missing)}")
    return {n: fs.cat_file(f"{folder}/{n}") for n in HELM_FILES if n in present}


def parse_json(name: str, data: bytes, kind: type) -> Any:
    try:
        value = json.loads(data)
    except UnicodeDecodeError as exc:
        raise BadRun(f"{name} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BadRun(f"{name} is not valid JSON (truncated?): {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(value, kind):
        raise BadRun(f"{name}: expected a JSON {'object' if kind is dict else 'list'}, found {type(value).__name__}")
    return value


def _label(run_name: str) -> tuple[str, str, dict[str, str]]:
    """(scenario, label, params) from a HELM run name: the model arguments are the deployment, not the cell."""
    head, _, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and a.split("=", 1)[0] not in MODEL_ARGS]
    params = dict(a.split("=", 1) if "=" in a else (a, "") for a in kept)
    return head, head + (":" + ",".join(kept) if kept else ""), params


def helm_instance(raw: dict, where: str) -> Instance:
    """Our instance from HELM's; the metrics' ``from_helm`` hooks add what they read to ``extra``."""
    inp = raw.get("input") or {}
    if inp.get("messages"):
        our_input = Input(messages=[ChatMessage(role=m["role"], content=m["content"]) for m in inp["messages"]])
    elif isinstance(inp.get("text"), str):
        our_input = Input(text=inp["text"])
    else:
        raise BadRun(f"{where}: an instance input without text or messages (multimedia is not imported)")
    if not raw.get("id"):
        raise BadRun(f"{where}: an instance without an id")
    extra = dict(raw.get("extra_data") or {})
    for name in METRICS.names():
        equivalent = METRICS.get(name).helm
        if equivalent and equivalent.from_helm:
            extra.update(equivalent.from_helm(raw))
    return Instance(
        id=str(raw["id"]),
        input=our_input,
        references=[Reference(text=(r.get("output") or {}).get("text", ""), correct=CORRECT_TAG in (r.get("tags") or []))
                    for r in raw.get("references") or []],
        split=raw.get("split") or "test",
        sub_split=raw.get("sub_split"),
        extra=extra,
    )


def our_adapter(h: dict) -> AdapterSpec:
    """HELM's adapter spec as ours (the verbatim spec stays in run.json's ``imported.run_spec``)."""
    texts = ("method", "global_prefix", "instructions", "input_prefix", "input_suffix", "reference_prefix",
             "reference_suffix", "output_prefix", "output_suffix", "instance_prefix", "global_suffix")
    return AdapterSpec(
        **{k: h[k] for k in texts if isinstance(h.get(k), str)},
        max_train_instances=max(int(h.get("max_train_instances") or 0), 0),
        generation=GenerationParams(max_tokens=max(int(h.get("max_tokens") or 1), 1),
                                    temperature=float(h.get("temperature") or 0.0),
                                    stop=list(h.get("stop_sequences") or []),
                                    num_outputs=max(int(h.get("num_outputs") or 1), 1)),
        sample=EvalSample(max_eval_instances=h.get("max_eval_instances") or None,
                          trials=max(int(h.get("num_train_trials") or 1), 1)),
    )


def _stat_name(entry: Any, where: str) -> tuple[str, str, bool]:
    """(metric, split, plain) of a HELM Stat; ``plain``: no perturbation and no sub-split."""
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, dict) or not isinstance(name.get("name"), str) or not name["name"]:
        raise BadRun(f"{where}: a stat without a metric name")
    return name["name"], str(name.get("split") or ""), not name.get("perturbation") and not name.get("sub_split")


def _number(entry: dict, key: str, where: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRun(f"{where}: {key} is {value!r}, not a number")
    return float(value)


@dataclass
class Converted:
    """One HELM run folder as our records, before anything is written."""

    run_id: str
    scenario: str
    label: str
    params: dict[str, str]
    deployment: str
    model: str
    run_spec: dict
    adapter: AdapterSpec
    instances: list[Instance]
    requests: list[Request]
    completions: list[Completion]
    stats: list[Stat]
    summary: list[MetricSummary]
    main_metric: str
    digests: dict[str, str]
    perturbed: int
    checks: list[HelmCheck] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)


def convert(raw: dict[str, bytes], source: str) -> Converted:
    run_spec = parse_json(RUN_SPEC, raw[RUN_SPEC], dict)
    state = parse_json(SCENARIO_STATE, raw[SCENARIO_STATE], dict)
    helm_stats_list = parse_json(STATS, raw[STATS], list)
    per_instance = parse_json(PER_INSTANCE_STATS, raw[PER_INSTANCE_STATS], list) if PER_INSTANCE_STATS in raw else []
    listed = parse_json(INSTANCES, raw[INSTANCES], list) if INSTANCES in raw else []
    if not isinstance(run_spec.get("name"), str) or not run_spec["name"]:
        raise BadRun(f"{RUN_SPEC}: no run name")
    helm_adapter = run_spec.get("adapter_spec") or state.get("adapter_spec") or {}
    if not isinstance(helm_adapter, dict):
        raise BadRun(f"{RUN_SPEC}: adapter_spec is not an object")
    scenario, label, params = _label(run_spec["name"])
    try:
        adapter = our_adapter(helm_adapter)
        instances: dict[str, Instance] = {}
        for i, item in enumerate(listed):
            if isinstance(item, dict) and not item.get("perturbation"):
                inst = helm_instance(item, f"{INSTANCES} item {i}")
                instances.setdefault(inst.id, inst)
        requests, completions, perturbed, model = [], [], 0, ""
        states = state.get("request_states")
        if not isinstance(states, list):
            raise BadRun(f"{SCENARIO_STATE}: no request_states list")
        for i, rs in enumerate(states):
            where = f"{SCENARIO_STATE} request state {i}"
            if not isinstance(rs, dict) or not isinstance(rs.get("instance"), dict) or not isinstance(rs.get("request"), dict):
                raise BadRun(f"{where}: not a request state (instance, request, result)")
            if rs["instance"].get("perturbation") or rs.get("request_mode") == "calibration":
                perturbed += 1  # a perturbed instance, or the answer-only request of HELM's calibrated method
                continue
            inst = instances.setdefault(str(rs["instance"].get("id")), helm_instance(rs["instance"], where))
            req, res = rs["request"], rs.get("result") or {}
            model = model or str(req.get("model_deployment") or req.get("model") or "")
            n = max(int(req.get("num_completions") or 1), 1)
            messages = req.get("messages")
            echo = bool(req.get("echo_prompt"))
            body = RequestBody(
                model=str(req.get("model") or ""),
                prompt=None if messages else str(req.get("prompt") or ""),
                messages=[ChatMessage(role=m["role"], content=m["content"]) for m in messages] if messages else None,
                max_tokens=max(int(req.get("max_tokens") or 0), 0),
                temperature=float(req.get("temperature") or 0.0),
                stop=list(req.get("stop_sequences") or []),
                logprobs=echo,
                echo=True if echo else None,
            )
            # HELM's separate multiple choice: one request per option, the option appended to the prompt
            option = rs.get("reference_index")
            continuation = inst.references[option].text if isinstance(option, int) and 0 <= option < len(inst.references) else None
            got = res.get("completions") or []
            for k in range(n):
                sample = int(rs.get("train_trial_index") or 0) * n + k
                digest = versions.request_hash(body, sample)
                requests.append(Request(
                    request_hash=digest, instance_id=inst.id, split=inst.split, sample_index=sample, body=body,
                    num_train_instances=int(rs.get("num_train_instances") or 0),
                    prompt_truncated=bool(rs.get("prompt_truncated")), output_mapping=rs.get("output_mapping") or {},
                    continuation=continuation,
                ))
                completions.append(_completion(digest, inst.id, sample, res, got[k] if k < len(got) else None))
    except ValidationError as exc:
        raise BadRun(f"{SCENARIO_STATE}: {' '.join(str(exc).split())[:300]}") from None
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, BadRun):
            raise
        raise BadRun(f"{SCENARIO_STATE}: unexpected shape ({type(exc).__name__}: {exc})") from None
    if not requests:
        raise BadRun(f"{SCENARIO_STATE}: no request states to import")

    summary, per_values = _summaries(helm_stats_list, per_instance)
    known = helm_stats()
    names = list(dict.fromkeys(s.name for s in summary))
    usable = [n for n in names if n in known]
    if not usable:
        raise BadRun(f"{STATS}: no metric helmflow knows (found {', '.join(names[:8]) or 'none'}"
                     f"{', …' if len(names) > 8 else ''}; known: {', '.join(sorted(known))})")
    main = _main_metric(scenario, usable)
    stats = [Stat(instance_id=i, split=sp, name=n, value=sum(v) / len(v)) for (i, sp, n), v in per_values.items()]
    digests = {n: sha256_hex(b) for n, b in sorted(raw.items())}
    model = str(helm_adapter.get("model_deployment") or helm_adapter.get("model") or model or "unknown")
    return Converted(
        run_id=versions.imported_run_id(run_spec["name"], digests),
        scenario=scenario, label=label, params=params, deployment=model,
        model=str(helm_adapter.get("model") or model), run_spec=run_spec, adapter=adapter,
        instances=list(instances.values()), requests=requests, completions=completions, stats=stats,
        summary=summary, main_metric=main, digests=digests, perturbed=perturbed,
    )


def _completion(digest: str, instance_id: str, sample: int, res: dict, got: dict | None) -> Completion:
    ok = res.get("success", True) and got is not None
    tokens = (got or {}).get("tokens") or []
    reason = (got or {}).get("finish_reason")
    return Completion(
        request_hash=digest, instance_id=instance_id, sample_index=sample,
        text=str((got or {}).get("text") or ""),
        finish_reason=str(reason.get("reason", "")) if isinstance(reason, dict) else str(reason or ""),
        output_tokens=len(tokens), latency_s=float(res.get("request_time") or 0.0),
        tokens=[str(t.get("text", "")) for t in tokens], logprobs=[float(t.get("logprob") or 0.0) for t in tokens],
        error=None if ok else str(res.get("error") or "HELM recorded no completion"),
    )


def _summaries(entries: list, per_instance: list) -> tuple[list[MetricSummary], dict[tuple[str, str, str], list[float]]]:
    """HELM's run-level stats (unperturbed, whole split) as summaries, with intervals from its
    per-instance values where it has them; and those per-instance values (averaged over trials)."""
    per_values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for i, item in enumerate(per_instance):
        where = f"{PER_INSTANCE_STATS} item {i}"
        if not isinstance(item, dict) or not isinstance(item.get("stats"), list) or "instance_id" not in item:
            raise BadRun(f"{where}: expected instance_id and stats")
        if item.get("perturbation"):
            continue
        for entry in item["stats"]:
            metric, split, plain = _stat_name(entry, where)
            mean = _number(entry, "mean", where)
            if plain and mean is not None:
                per_values[(str(item["instance_id"]), split, metric)].append(mean)
    by_stat: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (_, split, metric), values in per_values.items():
        by_stat[(metric, split)].append(sum(values) / len(values))
    out = []
    for i, entry in enumerate(entries):
        where = f"{STATS} item {i}"
        metric, split, plain = _stat_name(entry, where)
        mean, count = _number(entry, "mean", where), _number(entry, "count", where)
        if not plain or mean is None or not count:
            continue
        values = by_stat.get((metric, split), [])
        _, low, high = mean_ci(values) if len(values) == int(count) else (None, math.nan, math.nan)
        out.append(MetricSummary(name=metric, split=split, count=int(count), mean=mean, ci_low=low, ci_high=high))
    return out, per_values


def _main_metric(scenario: str, usable: list[str]) -> str:
    """The scenario's own main metric when helmflow has that scenario, else the first known metric
    that is not plain reference matching, else the first known one."""
    from helmflow.scenarios import SCENARIOS

    if scenario in SCENARIOS and SCENARIOS.get(scenario).main_metric in usable:
        return SCENARIOS.get(scenario).main_metric
    return next((n for n in usable if n not in REFERENCE_METRICS), usable[0])


def check(run: Converted) -> None:
    """Recompute every HELM number a helmflow metric reproduces; record agreement per (metric, split)."""
    known = helm_stats()
    wanted = [s for s in run.summary if s.name in known]
    run.unchecked = sorted({s.name for s in run.summary if s.name not in known})
    metric_names = sorted({known[s.name] for s in wanted})
    runnable = []
    for name in metric_names:
        try:
            METRICS.get(name).check_installed()
            runnable.append(name)
        except MissingExtra as exc:
            run.unchecked += [f"{s} ({exc})" for s in METRICS.get(name).helm.stats]
    try:
        ours = summarize(score_instances(run.instances, run.requests, run.completions, run.adapter, runnable))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        run.checks = [HelmCheck(metric=s.name, split=s.split, helm=s.mean, helmflow=None, equal=False) for s in wanted]
        run.unchecked.append(f"recomputation failed: {type(exc).__name__}: {exc}")
        return
    mine = {(s.name, s.split): s.mean for s in ours}
    run.checks = []
    for s in wanted:
        if known[s.name] not in runnable:
            continue
        value = mine.get((s.name, s.split))
        equal = value is not None and math.isclose(value, s.mean, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
        run.checks.append(HelmCheck(metric=s.name, split=s.split, helm=s.mean, helmflow=value, equal=equal))


# --------------------------------------------------------------------------- writing an imported run
def _meta(run: Converted, scenario_version: str) -> dict[str, str]:
    return {"helmflow.version": helmflow.__version__, "helmflow.run_id": run.run_id,
            "helmflow.scenario_version": scenario_version, "helmflow.imported": CLIENT}


def publish_imported(store: Store, run: Converted, source: str) -> bool:
    """Write the run's files, then ``run.json``; False when this exact import is already published."""
    if store.exists(layout.run_json(run.run_id)):
        try:
            existing = RunManifest.model_validate(store.read_json(layout.run_json(run.run_id)))
            if existing.imported and existing.imported.sha256 == run.digests:
                return False
        except (ValueError, ValidationError):
            pass  # an unreadable run.json is replaced
    rows = [instance_to_row(i) for i in run.instances]
    scenario_version = f"{IMPORTED}-{versions.stable_hash(rows)}"
    meta = _meta(run, scenario_version)
    instances_key = layout.instances(safe_key(run.scenario), scenario_version)
    if not store.exists(instances_key):
        store.write_parquet(instances_key, to_table(rows, INSTANCE_SCHEMA), meta)
    ids = {"run_id": run.run_id, "model": run.deployment, "scenario": run.label}
    tables = {
        "requests.parquet": (to_table([request_to_row(r) for r in run.requests], REQUEST_SCHEMA), RUN_ROW_GROUP_ROWS),
        "completions.parquet": (models_to_table(run.completions, COMPLETION_SCHEMA), RUN_ROW_GROUP_ROWS),
        "stats.parquet": (models_to_table(run.stats, STAT_SCHEMA), None),
        "summary.parquet": (models_to_table(run.summary, SUMMARY_SCHEMA), None),
        layout.RUN_REFERENCES: (references_table(store, instances_key, pa.array(sorted({r.instance_id for r in run.requests}), pa.string())), None),
    }
    encoded = {name: encode_parquet(with_run_ids(table, ids), meta, rows_per_group)
               for name, (table, rows_per_group) in tables.items()}
    files = [*layout.RUN_FILES, layout.RUN_REFERENCES]
    for name in files:
        store.write_bytes(layout.run_file(run.run_id, name), encoded[name])
    main = main_summary(run.summary, run.main_metric)
    helm_spec_hash = versions.stable_hash(run.run_spec.get("adapter_spec") or {})
    manifest = RunManifest.model_validate({
        "run_id": run.run_id,
        "status": "errors" if any(not c.ok for c in run.completions) else "complete",
        "scenario": {"name": safe_key(run.scenario), "label": run.label, "params": run.params},
        "deployment": {"name": run.deployment, "client": CLIENT, "model": run.model},
        "adapter": run.adapter.model_dump(mode="json"),
        "metrics": {s.name: IMPORTED for s in run.summary if s.name in helm_stats()},
        "main_metric": run.main_metric,
        "score": main.mean if main else None,
        "ci": [_finite(main.ci_low) if main else None, _finite(main.ci_high) if main else None],
        "counts": {"requests": len(run.requests), "errors": sum(1 for c in run.completions if not c.ok)},
        "error_rate": sum(1 for c in run.completions if not c.ok) / len(run.completions),
        "tokens": {"prompt": 0, "output": sum(c.output_tokens for c in run.completions)},
        "versions": {
            "scenario_version": scenario_version,
            "prompt_version": f"{IMPORTED}-{helm_spec_hash}",
            "model_version": f"{IMPORTED}-{versions.stable_hash(run.deployment)}",
            "metric_version": f"{IMPORTED}-{versions.stable_hash(run.run_spec.get('metric_specs') or [])}",
            "run_id": run.run_id,
        },
        "dataset": {"revision": IMPORTED, "checksums": {}},
        "lineage": {"helmflow_version": helmflow.__version__, "git_commit": versions.git_commit(),
                    "query_key": IMPORTED, "score_key": IMPORTED, "published_at": datetime.now(UTC).isoformat()},
        "files": [layout.run_file(run.run_id, n) for n in files],
        "sha256": {n: sha256_hex(b) for n, b in encoded.items()},
        "imported": {"source": source, "run_spec": run.run_spec, "sha256": run.digests, "checks": run.checks,
                     "unchecked": run.unchecked, "skipped_request_states": run.perturbed},
    })
    store.write_json(layout.run_json(run.run_id), manifest.to_json())
    return True


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


def import_tree(store: Store, url: str, board: str | None = None) -> ImportReport:
    """Import every whole run folder under ``url``; with ``board``, publish them as a release of it."""
    if board:
        check_board(store, board)  # before any work
    fs, folders = run_folders(url)
    report = ImportReport()
    base = url.rstrip("/")
    single = folders == [url_to_fs(url)[1].rstrip("/")]  # the URL is one run folder
    for folder in folders:
        name = folder.rsplit("/", 1)[-1]
        source = base if single else f"{base}/{name}"
        name = unquote(name)
        try:
            run = convert(read_folder(fs, folder), source)
        except BadRun as exc:
            report.skipped.append(Skipped(name, str(exc)))
            continue
        check(run)
        wrote = publish_imported(store, run, source)
        main = main_summary(run.summary, run.main_metric)
        report.runs.append(ImportedRun(
            run_id=run.run_id, label=run.label, deployment=run.deployment, main_metric=run.main_metric,
            score=main.mean if main else None, source=source, wrote=wrote, checks=run.checks,
            unchecked=run.unchecked, perturbed=run.perturbed,
        ))
    if board and report.runs:
        report.release_id, report.release_uri = publish_imported_board(store, board, [r.run_id for r in report.runs], base)
    return report


# --------------------------------------------------------------------------- an imported board
BOARD_VERSION = f"{IMPORTED}-{CLIENT}"


def check_board(store: Store, board: str) -> ReleaseManifest | None:
    """The imported board's current release (None for a new board); a board of runs made here is refused."""
    name = safe_key(board)
    refusal = (f"import HELM's runs into a board of their own (--board helm-{name}) so they show beside it, "
               f"labelled as imported")
    if name in board_names():
        raise HelmflowError(f"{board!r} is a helmflow board; {refusal}")
    current = releases.latest_release_id(store, name)
    if not current:
        return None
    info = ReleaseManifest.model_validate(store.read_json(layout.release_json(name, current)))
    if not info.imported_from:
        raise HelmflowError(f"board {board!r} holds runs made by helmflow; {refusal}")
    return info


def publish_imported_board(store: Store, board: str, run_ids: list[str], source: str) -> tuple[str, str]:
    """A release of ``board`` over these runs and those of its current release (imports accumulate).

    A board that holds runs made here is refused: imported numbers are shown beside ours on a board
    of their own, never mixed into one."""
    name = safe_key(board)
    sources = [source]
    current = check_board(store, board)
    if current:
        run_ids = [*current.run_ids, *run_ids]
        sources = [*current.imported_from, *(s for s in sources if s not in current.imported_from)]
    manifests = {}
    for rid in dict.fromkeys(run_ids):
        manifests[rid] = RunManifest.model_validate(store.read_json(layout.run_json(rid)))
    # one cell per (label, deployment): a later import of the same cell replaces the earlier one
    cells = {(m.scenario.label, m.deployment.name): m for m in manifests.values()}
    ids = sorted(m.run_id for m in cells.values())
    digest = versions.release_hash(BOARD_VERSION, ids)
    for existing in store.ls(layout.board_dir(name)):
        rid = existing.rsplit("/", 1)[-1]
        if rid.endswith(f"-{digest}") and store.exists(layout.release_json(name, rid)):
            info = ReleaseManifest.model_validate(store.read_json(layout.release_json(name, rid)))
            releases.point(store, name, info, store.url(existing))
            return rid, store.url(existing)
    labels = list(dict.fromkeys(label for label, _ in cells))
    models = sorted({d for _, d in cells})
    table = {m: {lab: _finite(cells[(lab, m)].score) if (lab, m) in cells and cells[(lab, m)].score is not None else None
                 for lab in labels} for m in models}
    means, wins = mean_scores(table), win_rates(table)
    rows = []
    for m in models:
        row: dict[str, Any] = {"deployment": m, "mean_score": means.get(m), "mean_win_rate": wins.get(m)}
        for lab in labels:
            cell = cells.get((lab, m))
            row[lab] = table[m][lab]
            row[f"{lab} ci_low"], row[f"{lab} ci_high"] = (cell.ci[0], cell.ci[1]) if cell else (None, None)
        mine = [cells[(lab, m)] for lab in labels if (lab, m) in cells]
        row.update(cost_usd=0.0, prompt_tokens=sum(c.tokens.prompt for c in mine),
                   output_tokens=sum(c.tokens.output for c in mine), judge_cost_usd=0.0, missing=len(labels) - len(mine))
        rows.append(row)
    rows.sort(key=lambda r: (r["mean_score"] is None, -(r["mean_score"] or 0.0), r["deployment"]))
    now = datetime.now(UTC)
    release_id = f"{now:%Y-%m-%d}-{digest}"
    meta = {"helmflow.version": helmflow.__version__, "helmflow.board": board, "helmflow.board_version": BOARD_VERSION,
            "helmflow.release_id": release_id, "helmflow.created_at": now.isoformat(), "helmflow.status": "complete",
            "helmflow.imported": CLIENT}
    board_bytes = encode_parquet(pa.Table.from_pylist(rows, schema=leaderboard_schema(labels)), meta)
    store.write_bytes(layout.release_file(name, release_id, "leaderboard.parquet"), board_bytes)
    run_rows = [{"deployment": c.deployment.name, "scenario": c.scenario.label, "run_id": c.run_id, "status": c.status,
                 "main_metric": c.main_metric, "score": c.score, "ci_low": c.ci[0], "ci_high": c.ci[1],
                 "error_rate": c.error_rate, "cost_usd": 0.0, "prompt_tokens": c.tokens.prompt,
                 "output_tokens": c.tokens.output, "judge_cost_usd": 0.0, "error": None,
                 "uri": store.url(layout.run_dir(c.run_id))} for c in sorted(cells.values(), key=lambda c: c.run_id)]
    runs_bytes = encode_parquet(pa.Table.from_pylist(run_rows, schema=RUNS_SCHEMA), meta)
    store.write_bytes(layout.release_file(name, release_id, "runs.parquet"), runs_bytes)
    release = ReleaseManifest(
        board=board, board_version=BOARD_VERSION, release_id=release_id, created_at=now.isoformat(),
        helmflow_version=helmflow.__version__, git_commit=versions.git_commit(), status="complete",
        scenarios=labels, models=models, run_ids=ids,
        sha256={"leaderboard.parquet": sha256_hex(board_bytes), "runs.parquet": sha256_hex(runs_bytes)},
        imported_from=sources,
    )
    store.write_json(layout.release_json(name, release_id), release.to_json())
    uri = store.url(layout.release_dir(name, release_id))
    releases.point(store, name, release, uri)
    return release_id, uri


# --------------------------------------------------------------------------- exporting in HELM's shape
def _helm_stat(name: str, split: str, values: list[float], count: int | None = None, mean: float | None = None) -> dict:
    n = count if count is not None else len(values)
    mean = mean if mean is not None else (sum(values) / len(values) if values else 0.0)
    total = mean * n
    squares = sum(v * v for v in values) if values and len(values) == n else mean * mean * n
    variance = max(squares / n - mean * mean, 0.0) if n else 0.0
    return {"name": {"name": name, "split": split}, "count": n, "sum": total, "sum_squared": squares,
            "min": min(values) if values else mean, "max": max(values) if values else mean, "mean": mean,
            "variance": variance, "stddev": math.sqrt(variance)}


def _to_helm_instance(inst: Instance) -> dict:
    extra = dict(inst.extra)
    tags = [[CORRECT_TAG] if r.correct else [] for r in inst.references]
    for name in METRICS.names():
        equivalent = METRICS.get(name).helm
        if equivalent and equivalent.to_helm:
            added = equivalent.to_helm(inst)
            extra.update(added.get("extra_data") or {})
            tags = added.get("tags") or tags
    if inst.input.messages is not None:
        inp: dict[str, Any] = {"text": "", "messages": [m.model_dump() for m in inst.input.messages]}
    else:
        inp = {"text": inst.input.text if inst.input.text is not None else
               "".join(p.text or "" for p in inst.input.parts or [])}
    return {"input": inp, "references": [{"output": {"text": r.text}, "tags": t} for r, t in zip(inst.references, tags)],
            "split": inst.split, "sub_split": inst.sub_split, "id": inst.id, "extra_data": extra or None}


def helm_run_name(manifest: RunManifest) -> str:
    if manifest.imported:
        return str(manifest.imported.run_spec["name"])
    args = [f"{k}={v}" for k, v in sorted(manifest.scenario.params.items())] + [f"model={manifest.deployment.name}"]
    return f"{manifest.scenario.name}:{','.join(args)}"


def helm_files(store: Store, manifest: RunManifest) -> dict[str, bytes]:
    """HELM's five run files for one published run (``run_spec.json`` verbatim for an imported run)."""
    rid = manifest.run_id

    def rows(name: str, schema: pa.Schema) -> list[dict]:  # the record's columns (run files lead with the run's ids)
        return store.read_parquet(layout.run_file(rid, name), columns=list(schema.names)).to_pylist()

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
                    "scenario_spec": {"class_name": f"helmflow.scenarios.{manifest.scenario.name}", "args": manifest.scenario.params},
                    "adapter_spec": helm_adapter,
                    "metric_specs": [{"class_name": f"helmflow.metrics.{m}", "args": {}} for m in sorted(manifest.metrics)],
                    "groups": [manifest.scenario.name]}
    # one HELM request state per (instance, trial), and per option for log-likelihood multiple choice
    grouped: dict[tuple[str, int, str | None], list[tuple[Request, Completion]]] = defaultdict(list)
    for r, c in zip(requests, completions, strict=True):
        grouped[(r.instance_id, r.sample_index // n, r.continuation)].append((r, c))
    states = []
    for (instance_id, trial, continuation), pairs in grouped.items():
        first = pairs[0][0]
        body = first.body
        failed = [c for _, c in pairs if not c.ok]
        options = [ref.text for ref in instances[instance_id].references]
        separate = {"request_mode": "original", "reference_index": options.index(continuation)} \
            if continuation is not None and continuation in options else {}
        states.append({
            "instance": _to_helm_instance(instances[instance_id]),
            "train_trial_index": trial,
            **separate,
            "output_mapping": first.output_mapping or None,
            "request": {"model_deployment": manifest.deployment.name, "model": body.model, "embedding": False,
                        "prompt": body.prompt or "", "messages": [m.model_dump() for m in body.messages] if body.messages else None,
                        "temperature": body.temperature, "num_completions": len(pairs), "max_tokens": body.max_tokens,
                        "stop_sequences": body.stop, "echo_prompt": bool(body.echo)},
            "result": {"success": not failed, "embedding": [], "cached": True,
                       "request_time": pairs[0][1].latency_s, "error": failed[0].error if failed else None,
                       "completions": [] if failed else [
                           {"text": c.text, "logprob": sum(c.logprobs),
                            "tokens": [{"text": t, "logprob": lp} for t, lp in zip(c.tokens, c.logprobs or [0.0] * len(c.tokens))],
                            "finish_reason": {"reason": c.finish_reason}} for _, c in pairs]},
            "num_train_instances": first.num_train_instances,
            "prompt_truncated": first.prompt_truncated,
        })
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_instance: dict[str, list[dict]] = defaultdict(list)
    for s in stats:
        values[(s.name, s.split)].append(s.value)
        by_instance[s.instance_id].append(_helm_stat(s.name, s.split, [s.value]))
    helm_stats_out = [_helm_stat(s.name, s.split, values.get((s.name, s.split), []), s.count, s.mean) for s in summary]
    per_instance = [{"instance_id": i, "train_trial_index": 0, "stats": v} for i, v in by_instance.items()]
    return {RUN_SPEC: _dump(run_spec),
            SCENARIO_STATE: _dump({"adapter_spec": run_spec.get("adapter_spec"), "request_states": states}),
            STATS: _dump(helm_stats_out), PER_INSTANCE_STATS: _dump(per_instance),
            INSTANCES: _dump([_to_helm_instance(i) for i in instances.values()])}


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def helm_folder_name(run_name: str) -> str:
    """HELM's run folder name: the run name with ``/`` as ``_`` (a name that would still climb or hide is made storage-safe)."""
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
