"""``helmflow import-helm``: HELM's run folders (:mod:`helmflow.helm.tree`) as runs of our storage contract.

Importing turns each folder into a run (instances, requests, completions, stats, summary,
``run.json`` last, written by :class:`helmflow.publish.RunWriter`) whose versions are marked
``imported-…`` and whose ``run.json`` keeps HELM's run spec verbatim, the source folder and the
sha256 of every file read (``RunManifest.imported``). HELM's numbers are kept as HELM computed them;
where a helmflow metric reproduces one of them (``HelmEquivalent`` in ``metrics/``), the importer
recomputes it on the imported completions and records whether both agree.

A folder is converted entirely in memory before anything is written, and ``run.json`` is written
last, so a malformed folder (a missing file, truncated JSON, no metric helmflow knows) is skipped
whole and never leaves a half run. HELM's perturbation stats (a ``data_augmentation`` run's
robustness/fairness numbers) are imported as stats named ``<metric>~<perturbation>~<computed_on>``,
per instance and in the summary, and give an imported board its ``<label>/robustness`` and
``<label>/fairness`` columns; the perturbed request states themselves are counted, not imported.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from fsspec.core import url_to_fs
from pydantic import ValidationError

import helmflow
from helmflow import layout, releases, versions
from helmflow.aggregate import GroupCells, leaderboard_schema, rank
from helmflow.errors import HelmflowError
from helmflow.helm.tree import (
    CLIENT,
    IMPORTED,
    INSTANCES,
    KINDS,
    PER_INSTANCE_STATS,
    PERTURBED_MARK,
    RUN_SPEC,
    SCENARIO_STATE,
    STATS,
    BadRun,
    generic_stat,
    helm_instance,
    number,
    our_adapter,
    parse_json,
    perturbation_key,
    perturbation_of,
    perturbed_stat,
    read_folder,
    run_folders,
    run_label,
    split_perturbed,
    split_sub_split,
    stat_name,
    sub_split_of,
    sub_split_stat,
)
from helmflow.integrity import sha256_hex
from helmflow.manifests import (
    HelmCheck,
    MetricGroupRecord,
    ReleaseManifest,
    RunCounts,
    RunDataset,
    RunDeployment,
    RunManifest,
    RunScenario,
    RunVersions,
    Tokens,
)
from helmflow.manifests import ImportedRun as ImportSource
from helmflow.metrics import METRICS, MissingExtra, helm_stats, helm_verdicts
from helmflow.pipeline import RUN_ROW_GROUP_ROWS, main_summary, references_table
from helmflow.plan.spec import GroupColumn, MetricGroup, board_names
from helmflow.publish import (
    ReleaseWriter,
    RunWriter,
    existing_release,
    finite,
    lineage,
    parquet_meta,
    release_id,
    run_outcome,
)
from helmflow.records import (
    COMPLETION_SCHEMA,
    INSTANCE_SCHEMA,
    REQUEST_SCHEMA,
    STAT_SCHEMA,
    SUMMARY_SCHEMA,
    AdapterSpec,
    Annotation,
    ChatMessage,
    Completion,
    Instance,
    MetricSummary,
    Request,
    RequestBody,
    Stat,
    instance_to_row,
    models_to_table,
    request_to_row,
    to_table,
)
from helmflow.scoring import score_instances, summarize
from helmflow.stats import mean_ci, pooled_ci, ratio_ci
from helmflow.storage import Store, safe_key

TOLERANCE = 1e-9  # HELM's numbers and ours are both float64 means of the same values
# HELM's reference metrics: a run is ranked on one of these only when no other known metric is present
REFERENCE_METRICS = ("exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "f1_score")


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
    perturbations: dict[str, dict] = field(default_factory=dict)
    checks: list[HelmCheck] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    # HELM's annotator verdicts, as annotations of the judge templates whose metric reads them
    # (``HelmEquivalent.verdict_from_helm``): what recomputing a judged metric reads
    annotations: list[Annotation] = field(default_factory=list)


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
    scenario, label, params = run_label(run_spec["name"])
    try:
        adapter = our_adapter(helm_adapter)
        instances: dict[str, Instance] = {}
        for i, item in enumerate(listed):
            if isinstance(item, dict) and not item.get("perturbation"):
                inst = helm_instance(item, f"{INSTANCES} item {i}")
                instances.setdefault(inst.id, inst)
        requests, completions, perturbed, model = [], [], 0, ""
        annotations: list[Annotation] = []
        verdicts = helm_verdicts()
        states = state.get("request_states")
        if not isinstance(states, list):
            raise BadRun(f"{SCENARIO_STATE}: no request_states list")
        for i, rs in enumerate(states):
            where = f"{SCENARIO_STATE} request state {i}"
            if (not isinstance(rs, dict) or not isinstance(rs.get("instance"), dict)
                    or not isinstance(rs.get("request"), dict)):
                raise BadRun(f"{where}: not a request state (instance, request, result)")
            if rs["instance"].get("perturbation"):
                perturbed += 1  # a perturbed instance
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
            # HELM's separate multiple choice: one echoed request per option, the option appended to the prompt;
            # its binary ranking: one generation per reference (the document it asks about)
            option = rs.get("reference_index")
            about = option if isinstance(option, int) and 0 <= option < len(inst.references) else None
            continuation = inst.references[about].text if about is not None and echo else None
            got = res.get("completions") or []
            for k in range(n):
                sample = int(rs.get("train_trial_index") or 0) * n + k
                digest = versions.request_hash(body, sample)
                requests.append(Request(
                    request_hash=digest, instance_id=inst.id, split=inst.split, sample_index=sample, body=body,
                    num_train_instances=int(rs.get("num_train_instances") or 0),
                    prompt_truncated=bool(rs.get("prompt_truncated")), output_mapping=rs.get("output_mapping") or {},
                    continuation=continuation, reference_index=about if not echo else None,
                    # the answer-free request of HELM's calibrated method, scored as ours is
                    request_mode="calibration" if rs.get("request_mode") == "calibration" else None,
                ))
                completions.append(_completion(digest, inst.id, sample, res, got[k] if k < len(got) else None))
                annotations += _helm_annotations(rs.get("annotations"), verdicts, inst.id, sample, digest)
    except ValidationError as exc:
        raise BadRun(f"{SCENARIO_STATE}: {' '.join(str(exc).split())[:300]}") from None
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, BadRun):
            raise
        raise BadRun(f"{SCENARIO_STATE}: unexpected shape ({type(exc).__name__}: {exc})") from None
    if not requests:
        raise BadRun(f"{SCENARIO_STATE}: no request states to import")

    helm = _summaries(helm_stats_list, per_instance)
    summary, per_values = helm.summary, helm.per_values
    known = helm_stats()
    names = list(dict.fromkeys(s.name for s in summary))
    usable = [n for n in names if n in known]
    if not usable and not any(generic_stat(n) for n in names):
        raise BadRun(f"{STATS}: no metric helmflow knows (found {', '.join(names[:8]) or 'none'}"
                     f"{', …' if len(names) > 8 else ''}; known: {', '.join(sorted(known))})")
    # a run with only HELM's generic and efficiency statistics (simple1) has no main metric and no score
    main = _main_metric(scenario, usable) if usable else ""
    stats = [Stat(instance_id=i, split=sp, name=n, value=sum(v) / len(v)) for (i, sp, n), v in per_values.items()]
    digests = {n: sha256_hex(b) for n, b in sorted(raw.items())}
    model = str(helm_adapter.get("model_deployment") or helm_adapter.get("model") or model or "unknown")
    return Converted(
        run_id=versions.imported_run_id(run_spec["name"], digests),
        scenario=scenario, label=label, params=params, deployment=model,
        model=str(helm_adapter.get("model") or model), run_spec=run_spec, adapter=adapter,
        instances=list(instances.values()), requests=requests, completions=completions, stats=stats,
        summary=summary, main_metric=main, digests=digests, perturbed=perturbed, perturbations=helm.perturbations,
        annotations=annotations,
    )


def _helm_annotations(found: Any, verdicts: dict[str, Callable[[dict], tuple[float | None, dict]]], instance_id: str,
                      sample: int, digest: str) -> list[Annotation]:
    """A request state's annotator verdicts (HELM's ``annotations``: annotator name -> its output) for the judge
    templates helmflow reads them as; HELM's judge is not named, so the judge is ``helm``."""
    if not isinstance(found, dict):
        return []
    out = []
    for name, verdict in found.items():
        if name in verdicts and isinstance(verdict, dict):
            score, details = verdicts[name](verdict)
            out.append(Annotation(instance_id=instance_id, sample_index=sample, request_hash=digest, judge="helm",
                                  template=name, template_version="helm", score=score,
                                  details_json=json.dumps(details, ensure_ascii=False, default=str),
                                  error=None if score is not None else "HELM's annotation has no score"))
    return out


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


Values = dict[tuple[str, int], dict[tuple[str, str, str | None], float]]  # (instance, trial) -> (split, metric, key)
Pick = Callable[[dict[tuple[str, str, str | None], float]], float | None]  # one (instance, trial)'s value


@dataclass
class HelmStats:
    """A HELM run's numbers as ours: summaries (HELM's ``stats.json``), per-instance values averaged over
    train trials (HELM's ``per_instance_stats.json``), and the perturbations they name (our name ->
    HELM's description without ``computed_on``)."""

    summary: list[MetricSummary]
    per_values: dict[tuple[str, str, str], list[float]]
    perturbations: dict[str, dict]


def _summaries(entries: list, per_instance: list) -> HelmStats:
    """HELM's run-level stats (whole split) as summaries, and its per-instance values (averaged over
    train trials). Each summary keeps HELM's mean and ``count`` (in ``stats.json`` the number of train
    trials, not of instances) and gets the interval our own runs get: the bootstrap
    (:func:`helmflow.stats.mean_ci`) over the per-instance values; a stat HELM has no per-instance
    values for (one derived from the whole run) has none.

    A stat with a ``perturbation`` (a ``data_augmentation`` run) is named ``<metric>~<perturbation>~<computed_on>``
    (:func:`~helmflow.helm.tree.perturbed_stat`): each perturbation's value on the perturbed instances, on the
    same instances unperturbed, and the per-instance worst of the two; ``<metric>~robustness~worst`` and
    ``<metric>~fairness~worst`` are HELM's worst case over every perturbation of that kind and the original.
    Their intervals are the bootstrap over the same per-instance values HELM aggregated.

    A stat of one sub-split (instances with ``sub_split``: HELM then writes no whole-split stat at all) is
    named ``<metric>:sub_split=<name>`` (before any perturbation suffix), its interval over that sub-split's
    instances; the whole split's row is helm-summarize's merge of the sub-splits (their sums over their
    counts: the mean of the sub-split means), its interval the same statistic bootstrapped over instances.
    An empty stat (``count`` 0, no mean: HELM's training costs of a model it has no figures for) is kept
    with count 0 and no number (NaN), so it is written back on export."""
    raw: Values = defaultdict(dict)
    subs: dict[str, str] = {}  # instance id -> its sub-split
    descs: dict[str, dict] = {}  # perturbation key -> description without computed_on
    instance_keys: set[str] = set()  # perturbations with per-instance values (not the kind aggregates)
    for i, item in enumerate(per_instance):
        where = f"{PER_INSTANCE_STATS} item {i}"
        if not isinstance(item, dict) or not isinstance(item.get("stats"), list) or "instance_id" not in item:
            raise BadRun(f"{where}: expected instance_id and stats")
        trial = int(item.get("train_trial_index") or 0)
        for entry in item["stats"]:
            metric, split, _ = stat_name(entry, where)
            desc = perturbation_of(entry, where) or (perturbation_of({"name": item}, where)
                                                     if item.get("perturbation") else None)
            mean = number(entry, "mean", where)
            if (sub := sub_split_of(entry, where)) is not None:
                subs[str(item["instance_id"])] = sub  # an instance is in one sub-split: its values keep their name
            if mean is None:
                continue
            key = None
            if desc is not None:
                key = perturbation_key(desc)
                descs.setdefault(key, {k: v for k, v in desc.items() if k != "computed_on"})
                instance_keys.add(key)
            raw[(str(item["instance_id"]), trial)][(split, metric, key)] = mean
    for i, entry in enumerate(entries):
        desc = perturbation_of(entry, f"{STATS} item {i}") if isinstance(entry, dict) else None
        if desc is not None:
            descs.setdefault(perturbation_key(desc), {k: v for k, v in desc.items() if k != "computed_on"})
    short = _short_names(descs)
    # HELM's robustness and fairness worst cases: named after their kind, never an instance's perturbation
    aggregates = {k for k, d in descs.items() if d["name"] in KINDS and k not in instance_keys}
    per_values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for (iid, _), by_key in raw.items():
        for (split, metric, key), v in by_key.items():
            name = metric if key is None else perturbed_stat(metric, short[key], "perturbed")
            per_values[(iid, split, name)].append(v)
    out = []
    whole: set[tuple[str, str]] = set()  # (name, split) HELM wrote for the whole split
    merged: dict[tuple[str, str], _Merged] = {}  # (name, split) HELM wrote only per sub-split
    for i, entry in enumerate(entries):
        where = f"{STATS} item {i}"
        metric, split, _ = stat_name(entry, where)
        mean, count = number(entry, "mean", where), number(entry, "count", where)
        sub = sub_split_of(entry, where)
        desc = perturbation_of(entry, where)
        key, on = (perturbation_key(desc), desc.get("computed_on", "perturbed")) if desc is not None else (None, "")
        base = metric if key is None else perturbed_stat(metric, short[key], on)
        name = base if sub is None else (sub_split_stat(metric, sub) if key is None
                                         else perturbed_stat(sub_split_stat(metric, sub), short[key], on))
        if not count:  # HELM's empty stat: nothing to show, kept so that an export writes it back
            out.append(MetricSummary(name=name, split=split, count=0, mean=math.nan, ci_low=math.nan,
                                     ci_high=math.nan))
            continue
        if mean is None:
            total = number(entry, "sum", where)
            if total is None:
                continue
            mean = total / count
        source = raw if sub is None else {k: v for k, v in raw.items() if subs.get(k[0]) == sub}
        pick: Pick | None
        if key is None:
            pick = _plain(split, metric)
        elif key in aggregates:  # every instance, the worst of the original and that kind's perturbations
            members = [k for k, d in descs.items() if d.get(descs[key]["name"]) and k not in aggregates]
            pick = _worst_of(split, metric, members) if all(k in instance_keys for k in members) else None
        else:
            pick = _pick(split, metric, key, on)
        values = _instance_values(source, pick) if pick is not None else []
        _, low, high = mean_ci(values) if values else (None, math.nan, math.nan)
        exact = False
        if not values and metric in PER_TOKEN and on in ("", "perturbed"):
            low, high = _per_token_interval(source, split, metric, key)
        elif not values and generic_stat(metric) and number(entry, "min", where) == number(entry, "max", where):
            low = high = mean  # a count HELM takes over the whole split (num_instances), the same in every trial
            exact = True
        out.append(MetricSummary(name=name, split=split, count=int(count), mean=mean, ci_low=low, ci_high=high))
        if sub is None:
            whole.add((base, split))
        else:
            m = merged.setdefault((base, split), _Merged(pick=pick if values else None))
            m.counts.append(count)
            m.sums.append(mean * count)
            m.exact = m.exact and exact
    for (base, split), m in merged.items():
        if (base, split) in whole:
            continue
        total = sum(m.counts)
        mean = sum(m.sums) / total
        low, high = (mean, mean) if m.exact else (
            _stratified_interval(raw, m.pick, subs) if m.pick is not None else (math.nan, math.nan))
        out.append(MetricSummary(name=base, split=split, count=int(total), mean=mean, ci_low=low, ci_high=high))
    return HelmStats(out, per_values, {short[k]: d for k, d in descs.items()})


@dataclass
class _Merged:
    """The sub-split stats of one (name, split) that helm-summarize merges into the whole split's number."""

    pick: Pick | None
    counts: list[float] = field(default_factory=list)
    sums: list[float] = field(default_factory=list)
    exact: bool = True


def _stratified_interval(raw: Values, pick: Pick, subs: dict[str, str]) -> tuple[float, float]:
    """The bootstrap interval (:func:`helmflow.stats.pooled_ci`, instances resampled together) of the mean of
    the sub-split means, helm-summarize's number for a split written per sub-split."""
    by_instance: dict[str, list[float]] = defaultdict(list)
    for (iid, _), values in raw.items():
        if (v := pick(values)) is not None and iid in subs:
            by_instance[iid].append(v)
    if not by_instance:
        return math.nan, math.nan
    groups = sorted({subs[i] for i in by_instance})
    columns: dict[str, Sequence[float]] = {}
    for g, name in enumerate(groups):
        columns[f"sum{g}"] = [sum(v) / len(v) if subs[i] == name else 0.0 for i, v in by_instance.items()]
        columns[f"n{g}"] = [1.0 if subs[i] == name else 0.0 for i in by_instance]

    def fn(sums: dict[str, float], _: int) -> float:
        means = [sums[f"sum{g}"] / sums[f"n{g}"] for g in range(len(groups)) if sums[f"n{g}"]]
        return sum(means) / len(means)

    _, low, high = pooled_ci(columns, fn)
    return low, high


# HELM's ``compute_perplexity_metrics``: ratios of per-instance sums, derived per split (and perturbation)
PER_TOKEN = {"perplexity": "num_perplexity_tokens", "logprob_per_byte": "num_bytes", "bits_per_byte": "num_bytes"}


def _per_token_interval(raw: Values, split: str, metric: str, key: str | None) -> tuple[float, float]:
    """The interval of a per-token number by our pooled-ratio bootstrap (:func:`helmflow.stats.ratio_ci`) over
    the per-instance ``logprob`` and its denominator, mapped through HELM's formula (monotone)."""
    pairs = [(v[(split, "logprob", key)], v[(split, PER_TOKEN[metric], key)]) for v in raw.values()
             if (split, "logprob", key) in v and (split, PER_TOKEN[metric], key) in v]
    if not pairs:
        return math.nan, math.nan
    _, low, high = ratio_ci([p[0] for p in pairs], [p[1] for p in pairs])
    if metric == "perplexity":
        return math.exp(-high), math.exp(-low)
    if metric == "bits_per_byte":
        return -high / math.log(2), -low / math.log(2)
    return low, high


def _short_names(descs: dict[str, dict]) -> dict[str, str]:
    """Each perturbation's name in our stat names: HELM's name, with its parameters when two perturbations
    of the run share a name (``misspelling_sweep``: ``misspellings,prob=0.05``)."""
    names = [d["name"] for d in descs.values()]
    out = {}
    for key, d in descs.items():
        params = ",".join(f"{k}={v}" for k, v in sorted(d.items()) if k not in ("name", "robustness", "fairness"))
        out[key] = d["name"] if names.count(d["name"]) == 1 or not params else f"{d['name']},{params}"
        out[key] = out[key].replace(PERTURBED_MARK, "-")
    return out


def _instance_values(raw: Values, pick: Pick) -> list[float]:
    """One value per instance (``pick`` per (instance, trial), None where it has none), averaged over trials."""
    by_instance: dict[str, list[float]] = defaultdict(list)
    for (iid, _), values in raw.items():
        v = pick(values)
        if v is not None:
            by_instance[iid].append(v)
    return [sum(v) / len(v) for v in by_instance.values()]


def _plain(split: str, metric: str) -> Pick:
    def pick(values: dict[tuple[str, str, str | None], float]) -> float | None:
        return values.get((split, metric, None))
    return pick


def _pick(split: str, metric: str, key: str, on: str) -> Pick:
    """HELM's value of one perturbation on one (instance, trial): perturbed, original (only where the
    perturbation changed the instance) or the worst of the two."""
    def pick(values: dict[tuple[str, str, str | None], float]) -> float | None:
        perturbed, original = values.get((split, metric, key)), values.get((split, metric, None))
        if perturbed is None:
            return None
        if on == "perturbed":
            return perturbed
        if on == "original":
            return original
        return perturbed if original is None else min(perturbed, original)
    return pick


def _worst_of(split: str, metric: str, keys: list[str]) -> Pick:
    """HELM's ``compute_worst_case_metrics`` for a kind: the minimum over the original and its perturbations."""
    def pick(values: dict[tuple[str, str, str | None], float]) -> float | None:
        found = [v for k in (None, *keys) if (v := values.get((split, metric, k))) is not None]
        return min(found) if found else None
    return pick


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

    def base(name: str) -> str:  # a sub-split's stat is checked as its metric on that sub-split's instances
        return split_sub_split(name)[0]

    wanted = [s for s in run.summary if base(s.name) in known and s.count]
    run.unchecked = sorted({s.name for s in run.summary if base(s.name) not in known and not split_perturbed(s.name)})
    metric_names = sorted({known[base(s.name)] for s in wanted})
    runnable = []
    for name in metric_names:
        try:
            METRICS.get(name).check_installed()
            runnable.append(name)
        except MissingExtra as exc:
            helm = METRICS.get(name).helm
            run.unchecked += [f"{s} ({exc})" for s in (helm.stats if helm else [])]
    try:
        scored = score_instances(run.instances, run.requests, run.completions, run.adapter, runnable, run.annotations)
        mine = {(s.name, s.split): s for s in summarize(scored)}
        mine.update(_sub_split_summaries(run, scored))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        run.checks = [HelmCheck(metric=s.name, split=s.split, helm=s.mean, helmflow=None, equal=False) for s in wanted]
        run.unchecked.append(f"recomputation failed: {type(exc).__name__}: {exc}")
        return
    run.checks = []
    for s in wanted:
        if known[base(s.name)] not in runnable:
            continue
        found = mine.get((s.name, s.split))
        value = found.mean if found else None
        equal = value is not None and math.isclose(value, s.mean, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
        run.checks.append(HelmCheck(metric=s.name, split=s.split, helm=s.mean, helmflow=value, equal=equal))
        if equal and found and math.isnan(s.ci_low):
            # a stat HELM computes over the whole run (BBQ's accuracy): the interval of our equal recomputation
            s.ci_low, s.ci_high = found.ci_low, found.ci_high


def _sub_split_summaries(run: Converted, scored: list[Stat]) -> dict[tuple[str, str], MetricSummary]:
    """Our recomputation as HELM reports a run whose instances have sub-splits: each sub-split's summary
    (``<metric>:sub_split=<name>``), and the whole split as helm-summarize merges them (the mean of the
    sub-split means, not of the instances)."""
    subs = {i.id: i.sub_split for i in run.instances if i.sub_split}
    if not subs:
        return {}
    by_sub: dict[str, list[Stat]] = defaultdict(list)
    for st in scored:
        if st.instance_id in subs:
            by_sub[subs[st.instance_id]].append(st)
    out: dict[tuple[str, str], MetricSummary] = {}
    parts: dict[tuple[str, str], list[float]] = defaultdict(list)
    for sub, group in sorted(by_sub.items()):
        for s in summarize(group):
            out[(sub_split_stat(s.name, sub), s.split)] = s
            parts[(s.name, s.split)].append(s.mean)
    written = {(s.name, s.split) for s in run.summary}
    for (name, split), means in parts.items():
        if (name, split) in written and any((sub_split_stat(name, g), split) in written for g in by_sub):
            out[(name, split)] = MetricSummary(name=name, split=split, count=len(means), mean=sum(means) / len(means),
                                               ci_low=math.nan, ci_high=math.nan)
    return out


# --------------------------------------------------------------------------- writing an imported run
def publish_imported(store: Store, run: Converted, source: str) -> bool:
    """Write the run's files, then ``run.json`` (:class:`~helmflow.publish.RunWriter`); False when this
    exact import is already published."""
    if store.exists(layout.run_json(run.run_id)):
        try:
            existing = RunManifest.model_validate(store.read_json(layout.run_json(run.run_id)))
            if existing.imported and existing.imported.sha256 == run.digests:
                return False
        except (ValueError, ValidationError):
            pass  # an unreadable run.json is replaced
    rows = [instance_to_row(i) for i in run.instances]
    scenario_version = f"{IMPORTED}-{versions.stable_hash(rows)}"
    meta = parquet_meta(run_id=run.run_id, scenario_version=scenario_version, imported=CLIENT)
    instances_key = layout.instances(safe_key(run.scenario), scenario_version)
    if not store.exists(instances_key):
        store.write_parquet(instances_key, to_table(rows, INSTANCE_SCHEMA), meta)
    writer = RunWriter(store, run.run_id, run.deployment, run.label, meta)
    writer.write("requests.parquet", to_table([request_to_row(r) for r in run.requests], REQUEST_SCHEMA),
                 rows_per_group=RUN_ROW_GROUP_ROWS)
    writer.write("completions.parquet", models_to_table(run.completions, COMPLETION_SCHEMA),
                 rows_per_group=RUN_ROW_GROUP_ROWS)
    writer.write("stats.parquet", models_to_table(run.stats, STAT_SCHEMA))
    writer.write("summary.parquet", models_to_table(run.summary, SUMMARY_SCHEMA))
    ids = pa.array(sorted({r.instance_id for r in run.requests}), pa.string())
    writer.write(layout.RUN_REFERENCES, references_table(store, instances_key, ids))
    main = main_summary(run.summary, run.main_metric)
    errors = sum(1 for c in run.completions if not c.ok)
    writer.commit(RunManifest(
        run_id=run.run_id,
        status="errors" if errors else "complete",
        scenario=RunScenario(name=safe_key(run.scenario), label=run.label, params=run.params),
        deployment=RunDeployment(name=run.deployment, client=CLIENT, model=run.model),
        adapter=run.adapter.model_dump(mode="json"),
        metrics={s.name: IMPORTED for s in run.summary if s.name in helm_stats()},
        main_metric=run.main_metric,
        score=main.mean if main else None,
        ci=(finite(main.ci_low), finite(main.ci_high)) if main else (None, None),
        counts=RunCounts(requests=len(run.requests), errors=errors),
        error_rate=errors / len(run.completions),
        tokens=Tokens(prompt=0, output=sum(c.output_tokens for c in run.completions)),
        versions=RunVersions(
            scenario_version=scenario_version,
            prompt_version=f"{IMPORTED}-{versions.stable_hash(run.run_spec.get('adapter_spec') or {})}",
            model_version=f"{IMPORTED}-{versions.stable_hash(run.deployment)}",
            metric_version=f"{IMPORTED}-{versions.stable_hash(run.run_spec.get('metric_specs') or [])}",
            run_id=run.run_id,
        ),
        dataset=RunDataset(revision=IMPORTED),
        lineage=lineage(IMPORTED, IMPORTED),
        imported=ImportSource(source=source, run_spec=run.run_spec, sha256=run.digests, checks=run.checks,
                              unchecked=run.unchecked, skipped_request_states=run.perturbed,
                              perturbations=run.perturbations),
    ))
    return True


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
        report.release_id, report.release_uri = publish_imported_board(store, board,
                                                                       [r.run_id for r in report.runs], base)
    return report


# --------------------------------------------------------------------------- an imported board
BOARD_VERSION = f"{IMPORTED}-{CLIENT}"


def check_board(store: Store, board: str, tool: str = "HELM") -> ReleaseManifest | None:
    """The imported board's current release (None for a new board); a board of runs made here is refused."""
    name = safe_key(board)
    refusal = (f"import {tool}'s runs into a board of their own (--board {tool.lower()}-{name}) so they show "
               f"beside it, labelled as imported")
    if name in board_names():
        raise HelmflowError(f"{board!r} is a helmflow board; {refusal}")
    current = releases.latest_release_id(store, name)
    if not current:
        return None
    info = ReleaseManifest.model_validate(store.read_json(layout.release_json(name, current)))
    if not info.imported_from:
        raise HelmflowError(f"board {board!r} holds runs made by helmflow; {refusal}")
    return info


def publish_imported_board(store: Store, board: str, run_ids: list[str], source: str,
                           tool: str = "HELM") -> tuple[str, str]:
    """A release of ``board`` over these runs and those of its current release (imports accumulate);
    ``tool`` names where they came from (``HELM``, ``Inspect``) in messages and the board version.

    A board that holds runs made here is refused: imported numbers are shown beside ours on a board
    of their own, never mixed into one."""
    name = safe_key(board)
    sources = [source]
    board_version = BOARD_VERSION if tool == "HELM" else f"{IMPORTED}-{tool.lower()}"
    current = check_board(store, board, tool)
    if current:
        run_ids = [*current.run_ids, *run_ids]
        sources = [*current.imported_from, *(s for s in sources if s not in current.imported_from)]
    manifests = {rid: RunManifest.model_validate(store.read_json(layout.run_json(rid)))
                 for rid in dict.fromkeys(run_ids)}
    # one cell per (label, deployment): a later import of the same cell replaces the earlier one
    cells = {(m.scenario.label, m.deployment.name): run_outcome(store, m) for m in manifests.values()}
    ids = sorted(c.run_id for c in cells.values())
    digest = versions.release_hash(board_version, ids)
    if (rid := existing_release(store, name, digest)) is not None:
        info = ReleaseManifest.model_validate(store.read_json(layout.release_json(name, rid)))
        uri = store.url(layout.release_dir(name, rid))
        releases.point(store, name, info, uri)
        return rid, uri
    labels = list(dict.fromkeys(label for label, _ in cells))
    models = sorted({d for _, d in cells})
    by_cell = {(m.scenario.label, m.deployment.name): m for m in manifests.values()}
    groups, metric_cells = perturbation_columns(store, [by_cell[c] for c in cells])
    rows = rank(models, labels, {(d, label): c for (label, d), c in cells.items()}, metric_groups=groups,
                metric_cells=metric_cells)
    now = datetime.now(UTC)
    rid = release_id(digest, now)
    writer = ReleaseWriter(store, name, rid, parquet_meta(board=board, board_version=board_version, release_id=rid,
                                                          created_at=now.isoformat(), status="complete",
                                                          imported=tool.lower()))
    writer.leaderboard(rows, leaderboard_schema(labels, metric_groups=[g.name for g in groups],
                                                columns=[c.key for g in groups for c in g.columns]))
    writer.runs(sorted(cells.values(), key=lambda c: c.run_id))
    release = writer.commit(ReleaseManifest(
        board=board, board_version=board_version, release_id=rid, created_at=now.isoformat(),
        helmflow_version=helmflow.__version__, git_commit=versions.git_commit(), status="complete",
        scenarios=labels, models=models, run_ids=ids, imported_from=sources,
        metric_groups=[MetricGroupRecord(**g.model_dump(mode="json")) for g in groups],
    ))
    releases.point(store, name, release, writer.uri)
    return rid, writer.uri


def perturbation_columns(store: Store, manifests: list[RunManifest]) -> tuple[list[MetricGroup], GroupCells]:
    """The robustness and fairness columns our own perturbation runs give a board (``<label>/robustness``,
    ``<label>/fairness``, :func:`helmflow.plan.extras.perturbation_groups`), from HELM's worst case of each
    imported run's main metric (``<main>~robustness~worst``), with its interval: for a run with a perturbation
    of that kind, as on our boards (HELM writes both worst cases for every run, the original's value when
    nothing was perturbed; they stay in the run's summary)."""
    columns: dict[str, list[GroupColumn]] = {kind: [] for kind in KINDS}
    cells: GroupCells = {}
    for m in manifests:
        if not m.imported or not m.imported.perturbations or not m.main_metric:
            continue
        table = store.read_parquet(layout.run_file(m.run_id, "summary.parquet"), columns=list(SUMMARY_SCHEMA.names))
        rows = [MetricSummary.model_validate(r) for r in table.to_pylist()]
        for kind in KINDS:
            found = main_summary(rows, perturbed_stat(m.main_metric, kind, "worst"))
            perturbed = [p for p, d in m.imported.perturbations.items() if d.get(kind) and d.get("name") not in KINDS]
            if found is None or not perturbed:  # HELM writes both worst cases for every run, even unperturbed
                continue
            column = GroupColumn(scenario=m.scenario.label, metric=kind, description=(
                f"{m.main_metric}, HELM's worst case per instance over the original and its {kind} perturbations "
                f"({', '.join(perturbed)}), then the mean"))
            if column.key not in {c.key for c in columns[kind]}:
                columns[kind].append(column)
            cells[(m.deployment.name, column.key)] = (finite(found.mean), finite(found.ci_low), finite(found.ci_high))
    groups = [MetricGroup(name=kind, description=f"the main metric under HELM's {kind} perturbations; higher is better",
                          columns=cols) for kind, cols in columns.items() if cols]
    return groups, cells
