"""``helmflow import-inspect``: Inspect AI's eval logs (``.eval`` or ``.json``) as runs of our storage contract.

Each log is read with Inspect's own reader (``inspect_ai.log.read_eval_log``, the ``inspect`` extra) and
becomes one run, written as ``import-helm`` writes HELM's (:class:`helmflow.publish.RunWriter`, ``run.json``
last):

- the task is the scenario (label: its display name, with its task arguments), the log's model the
  deployment (client ``inspect``);
- each sample is an instance (its input as text or chat messages, its targets as correct references, or
  its choices with the target letters marked correct), each sample epoch a request and its completion
  (output text, stop reason, tokens, time, error);
- each scorer's per-sample value (Inspect's ``value_to_float``: C=1, I=0, P=0.5, N=0; a dict value gives
  ``<scorer>.<key>``), averaged over epochs, is a stat named after the scorer, summarised with helmflow's
  bootstrap interval; Inspect's own reported metrics are kept as ``<scorer>:<metric>`` (no interval);
- versions are ``imported-inspect-<hash>`` of the samples, the plan and generate config, the model and
  its arguments, and the scorers (with the task version); ``run.json`` keeps the log's task, model,
  versions and packages verbatim (``imported.run_spec``) and the sha256 of the log file.

Numbers are checked as ``import-helm`` checks HELM's: each scorer's mean (or accuracy) is recomputed
from the per-sample values, and where a helmflow metric is Inspect's scorer (:data:`EQUIVALENTS`) it is
scored again on the imported completions; both checks are recorded in ``run.json`` and printed.

A log is converted in memory before anything is written; a file that is not a whole log (not readable by
Inspect, a log that did not finish, no samples) is skipped and listed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from fsspec.core import url_to_fs

from helmflow import layout, versions
from helmflow.errors import HelmflowError, install_command
from helmflow.helm.importer import (
    TOLERANCE,
    Converted,
    ImportedRun,
    ImportReport,
    Skipped,
    check_board,
    publish_imported_board,
)
from helmflow.helm.tree import IMPORTED
from helmflow.integrity import sha256_hex
from helmflow.manifests import HelmCheck, RunCounts, RunDataset, RunDeployment, RunManifest, RunScenario, RunVersions
from helmflow.manifests import ImportedRun as ImportSource
from helmflow.metrics import METRICS
from helmflow.pipeline import RUN_ROW_GROUP_ROWS, main_summary, references_table
from helmflow.publish import RunWriter, finite, lineage, parquet_meta
from helmflow.records import (
    COMPLETION_SCHEMA,
    INSTANCE_SCHEMA,
    REQUEST_SCHEMA,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    AdapterSpec,
    ChatMessage,
    Completion,
    GenerationParams,
    Input,
    Instance,
    MetricSummary,
    Reference,
    Request,
    RequestBody,
    Stat,
    instance_to_row,
    models_to_table,
    request_to_row,
    to_table,
)
from helmflow.scoring import score_instances, summarize
from helmflow.storage import Store, safe_key

CLIENT = "inspect"  # the deployment "client" of an imported run: Inspect queried the model, not helmflow
FORMAT = "inspect"
MARK = f"{IMPORTED}-{CLIENT}"  # versions of an imported Inspect run: imported-inspect-<hash>
EXTENSIONS = (".eval", ".json")
# Inspect's built-in scorers that a helmflow metric computes the same way (recomputed on import, compared)
EQUIVALENTS = {"exact": "quasi_exact_match"}
SOURCE_METRICS = ("accuracy", "mean")  # Inspect's metrics that are the mean of the per-sample values


def _reader():
    try:
        from inspect_ai.log import read_eval_log
        from inspect_ai.scorer import value_to_float
    except ImportError:
        raise HelmflowError(f"reading Inspect logs needs the inspect extra: {install_command('inspect')}") from None
    return read_eval_log, value_to_float()


def log_files(url: str) -> list[str]:
    """The log files at ``url``: the file itself, or every ``.eval``/``.json`` under the folder (sorted)."""
    fs, path = url_to_fs(url)
    if not fs.exists(path):
        raise HelmflowError(f"{url}: no such file or folder")
    if fs.isdir(path):
        found = sorted(p for p in fs.find(path) if p.endswith(EXTENSIONS) and not p.rsplit("/", 1)[-1].startswith("."))
        if not found:
            raise HelmflowError(f"{url}: no Inspect log (.eval or .json) in that folder")
        return [fs.unstrip_protocol(p) if "://" in url else p for p in found]
    if not path.endswith(EXTENSIONS):
        raise HelmflowError(f"{url}: not an Inspect log (.eval or .json)")
    return [url]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(c, "text", "") or "" for c in content or [])


def _messages(messages: list) -> list[ChatMessage]:
    return [ChatMessage(role=m.role, content=_text(m.content)) for m in messages
            if m.role in ("system", "user", "assistant")]


def _instance(sample: Any) -> Instance:
    targets = [sample.target] if isinstance(sample.target, str) else list(sample.target or [])
    if isinstance(sample.input, str):
        given = Input(text=sample.input)
    else:
        given = Input(messages=_messages(sample.input))
    if sample.choices:
        letters = {t.strip().upper() for t in targets}
        refs = [Reference(text=c, correct=chr(65 + i) in letters) for i, c in enumerate(sample.choices)]
    else:
        refs = [Reference(text=t, correct=True) for t in targets]
    return Instance(id=str(sample.id), input=given, references=refs, split="test")


def _values(value: Any, to_float) -> dict[str, float]:
    """One sample's score as named numbers: a dict value gives one per key."""
    if isinstance(value, dict):
        return {f".{k}": to_float(v) for k, v in value.items() if not isinstance(v, list | dict)}
    if isinstance(value, list):
        return {}
    return {"": to_float(value)}


@dataclass
class InspectRun:
    converted: Converted
    log: Any
    source_metrics: list[MetricSummary] = field(default_factory=list)
    tokens: tuple[int, int] = (0, 0)


def convert(location: str, data: bytes, read_eval_log, to_float) -> InspectRun:
    try:
        log = read_eval_log(location)
    except Exception as exc:  # Inspect raises many kinds on a bad file; the file is skipped, named
        raise _Bad(f"Inspect could not read it ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
    if log.status != "success":
        raise _Bad(f"the eval did not finish (status {log.status!r})")
    if not log.samples:
        raise _Bad("the log has no samples (written with log_samples=False?)")
    ev = log.eval
    config = log.plan.config if log.plan else None
    max_tokens = getattr(config, "max_tokens", None) or ev.model_generate_config.max_tokens
    temperature = getattr(config, "temperature", None)
    if temperature is None:
        temperature = ev.model_generate_config.temperature
    instances: dict[str, Instance] = {}
    requests, completions = [], []
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    prompt_tokens = output_tokens = 0
    for sample in log.samples:
        inst = instances.setdefault(str(sample.id), _instance(sample))
        history = list(sample.messages or [])
        while history and history[-1].role == "assistant":  # the prompt: what came before the scored output
            history.pop()
        messages = _messages(history) or ([ChatMessage(role="user", content=inst.input.text or "")])
        body = RequestBody(model=ev.model, messages=messages, max_tokens=int(max_tokens or 0),
                           temperature=float(temperature or 0.0))
        index = max(int(sample.epoch or 1) - 1, 0)
        digest = versions.request_hash(body, index)
        requests.append(Request(request_hash=digest, instance_id=inst.id, split="test", sample_index=index,
                                body=body))
        out = sample.output
        usage = out.usage if out else None
        choice = out.choices[0] if out and out.choices else None
        prompt_tokens += int(getattr(usage, "input_tokens", 0) or 0)
        output_tokens += int(getattr(usage, "output_tokens", 0) or 0)
        error = sample.error.message if sample.error else None
        completions.append(Completion(
            request_hash=digest, instance_id=inst.id, sample_index=index, text=(out.completion if out else "") or "",
            finish_reason=str(choice.stop_reason) if choice else "",
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            latency_s=float(out.time or 0.0) if out and out.time else 0.0,
            error=" ".join(error.split())[:500] if error else None))
        for scorer, score in (sample.scores or {}).items():
            for suffix, v in _values(score.value, to_float).items():
                if not math.isnan(v):
                    per[(inst.id, scorer + suffix)].append(v)
    stats = [Stat(instance_id=i, split="test", name=n, value=sum(v) / len(v)) for (i, n), v in per.items()]
    summary = summarize(stats) if stats else []
    source_metrics = []
    for score in (log.results.scores if log.results else []):
        for metric in score.metrics.values():
            if isinstance(metric.value, int | float) and not isinstance(metric.value, bool):
                source_metrics.append(MetricSummary(
                    name=f"{score.name}:{metric.name}", split="test", count=int(score.scored_samples or 0),
                    mean=float(metric.value), ci_low=math.nan, ci_high=math.nan))
    headline = log.results.headline.scorer if log.results and getattr(log.results, "headline", None) else None
    scorers = [s.name for s in (log.results.scores if log.results else [])]
    main = headline if headline in {s.name for s in summary} else next(
        (n for n in scorers if n in {s.name for s in summary}), summary[0].name if summary else "")
    if not main:
        raise _Bad("no sample has a score")
    task = ev.task_display_name or ev.task
    args = {k: str(v) for k, v in sorted((ev.task_args or {}).items())}
    label = task + (":" + ",".join(f"{k}={v}" for k, v in args.items()) if args else "")
    run_spec = {"task": ev.task, "task_version": ev.task_version, "task_args": ev.task_args or {},
                "task_id": ev.task_id, "eval_id": ev.eval_id, "run_id": ev.run_id, "created": ev.created,
                "model": ev.model, "model_base_url": ev.model_base_url,
                "packages": ev.packages or {}, "revision": ev.revision.model_dump(mode="json") if ev.revision else None,
                "dataset": ev.dataset.model_dump(mode="json"),
                "scorers": [s.model_dump(mode="json") for s in ev.scorers or []],
                "plan": log.plan.model_dump(mode="json") if log.plan else None,
                "epochs": ev.config.epochs, "epochs_reducer": ev.config.epochs_reducer}
    digests = {location.rsplit("/", 1)[-1]: sha256_hex(data)}
    adapter = AdapterSpec(method="generation", instructions="", input_prefix="", output_prefix="",
                          max_train_instances=0,
                          generation=GenerationParams(max_tokens=max(int(max_tokens or 100), 1),
                                                      temperature=float(temperature or 0.0)))
    converted = Converted(
        run_id=versions.imported_run_id(f"{ev.task}@{ev.eval_id}", digests, FORMAT),
        scenario=safe_key(ev.task), label=label, params=args, deployment=ev.model, model=ev.model,
        run_spec=run_spec, adapter=adapter, instances=list(instances.values()), requests=requests,
        completions=completions, stats=stats, summary=summary, main_metric=main, digests=digests, perturbed=0)
    run = InspectRun(converted, log, source_metrics, (prompt_tokens, output_tokens))
    _check(run)
    return run


class _Bad(Exception):
    pass


def _check(run: InspectRun) -> None:
    """Inspect's mean (accuracy) of each scorer against the mean of its per-sample values, and each
    scorer with a helmflow equivalent against that metric scored again on the imported completions."""
    c = run.converted
    ours = {s.name: s for s in c.summary}
    checks, unchecked = [], []
    for m in run.source_metrics:
        scorer, metric = m.name.split(":", 1)
        if metric not in SOURCE_METRICS:
            unchecked.append(m.name)
            continue
        found = ours.get(scorer)
        value = found.mean if found else None
        checks.append(HelmCheck(metric=m.name, split="test", helm=m.mean, helmflow=value,
                                equal=value is not None and math.isclose(value, m.mean, rel_tol=TOLERANCE,
                                                                         abs_tol=TOLERANCE)))
        equivalent = EQUIVALENTS.get(scorer)
        if not equivalent or equivalent not in METRICS.names():
            continue
        stats = score_instances(c.instances, c.requests, c.completions, c.adapter, [equivalent])
        mine = [s for s in stats if s.name == equivalent]
        recomputed = main_summary(summarize(mine), equivalent) if mine else None
        value = recomputed.mean if recomputed else None
        checks.append(HelmCheck(metric=f"{m.name} as {equivalent}", split="test", helm=m.mean, helmflow=value,
                                equal=value is not None and math.isclose(value, m.mean, rel_tol=TOLERANCE,
                                                                         abs_tol=TOLERANCE)))
        if recomputed and equivalent not in ours:  # helmflow's own metric, beside Inspect's scorer
            c.stats += mine
            c.summary.append(recomputed)
            ours[equivalent] = recomputed
    c.checks, c.unchecked = checks, unchecked


def publish(store: Store, run: InspectRun, source: str) -> bool:
    """Write the run's files, then ``run.json``; False when this exact log is already imported."""
    c = run.converted
    if store.exists(layout.run_json(c.run_id)):
        try:
            existing = RunManifest.model_validate(store.read_json(layout.run_json(c.run_id)))
            if existing.imported and existing.imported.sha256 == c.digests:
                return False
        except ValueError:
            pass  # an unreadable run.json is replaced
    rows = [instance_to_row(i) for i in c.instances]
    scenario_version = f"{MARK}-{versions.stable_hash([rows, c.run_spec['task_version']])}"
    meta = parquet_meta(run_id=c.run_id, scenario_version=scenario_version, imported=CLIENT)
    instances_key = layout.instances(safe_key(c.scenario), scenario_version)
    if not store.exists(instances_key):
        store.write_parquet(instances_key, to_table(rows, INSTANCE_SCHEMA), meta)
    writer = RunWriter(store, c.run_id, c.deployment, c.label, meta)
    writer.write("requests.parquet", to_table([request_to_row(r) for r in c.requests], REQUEST_SCHEMA),
                 rows_per_group=RUN_ROW_GROUP_ROWS)
    writer.write("completions.parquet", models_to_table(c.completions, COMPLETION_SCHEMA),
                 rows_per_group=RUN_ROW_GROUP_ROWS)
    writer.write("stats.parquet", models_to_table(c.stats, STAT_SCHEMA))
    writer.write("summary.parquet", models_to_table(c.summary + run.source_metrics, SUMMARY_SCHEMA))
    ids = pa.array(sorted({r.instance_id for r in c.requests}), pa.string())
    writer.write(layout.RUN_REFERENCES, references_table(store, instances_key, ids))
    main = main_summary(c.summary, c.main_metric)
    errors = sum(1 for x in c.completions if not x.ok)
    spec = c.run_spec
    ev = run.log.eval
    model_args = ev.model_dump(mode="json").get("model_args") or {}
    generate_config = ev.model_generate_config.model_dump(mode="json")
    writer.commit(RunManifest(
        run_id=c.run_id,
        status="errors" if errors else "complete",
        scenario=RunScenario(name=c.scenario, label=c.label, params=c.params),
        deployment=RunDeployment(name=c.deployment, client=CLIENT, model=c.model),
        adapter=c.adapter.model_dump(mode="json"),
        metrics={s.name: f"{MARK}" for s in c.summary},
        main_metric=c.main_metric,
        score=main.mean if main else None,
        ci=(finite(main.ci_low), finite(main.ci_high)) if main else (None, None),
        counts=RunCounts(requests=len(c.requests), errors=errors),
        error_rate=errors / len(c.completions),
        tokens={"prompt": run.tokens[0], "output": run.tokens[1]},
        instances=len(c.instances),
        versions=RunVersions(
            scenario_version=scenario_version,
            prompt_version=f"{MARK}-{versions.stable_hash([spec['plan'], generate_config])}",
            model_version=f"{MARK}-{versions.stable_hash([ev.model, ev.model_base_url, model_args])}",
            metric_version=f"{MARK}-{versions.stable_hash(spec['scorers'])}",
            run_id=c.run_id,
        ),
        dataset=RunDataset(revision=str((spec.get("dataset") or {}).get("location") or MARK)),
        lineage=lineage(MARK, MARK),
        imported=ImportSource(format=FORMAT, source=source, run_spec=spec, sha256=c.digests, checks=c.checks,
                              unchecked=c.unchecked),
    ))
    return True


def import_logs(store: Store, url: str, board: str | None = None) -> ImportReport:
    """Import every whole Inspect log at ``url``; with ``board``, publish them as a release of it."""
    if board:
        check_board(store, board, tool="Inspect")  # before any work
    files = log_files(url)
    read_eval_log, to_float = _reader()
    report = ImportReport()
    for location in files:
        fs, path = url_to_fs(location)
        name = path.rsplit("/", 1)[-1]
        try:
            with fs.open(path, "rb") as fh:
                data = fh.read()
            run = convert(location, data, read_eval_log, to_float)
        except (_Bad, OSError) as exc:
            report.skipped.append(Skipped(name, str(exc)))
            continue
        wrote = publish(store, run, location)
        c = run.converted
        main = main_summary(c.summary, c.main_metric)
        report.runs.append(ImportedRun(
            run_id=c.run_id, label=c.label, deployment=c.deployment, main_metric=c.main_metric,
            score=main.mean if main else None, source=location, wrote=wrote, checks=c.checks,
            unchecked=c.unchecked, perturbed=0))
    if board and report.runs:
        report.release_id, report.release_uri = publish_imported_board(
            store, board, [r.run_id for r in report.runs], url.rstrip("/"), tool="Inspect")
    return report
