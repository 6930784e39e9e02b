"""HELM's output tree: its files, how to find and read run folders, and its records as ours and back.

HELM writes one folder per run under ``benchmark_output/runs/<suite>/`` (``run_spec.json``,
``scenario_state.json``, ``stats.json``, ``per_instance_stats.json``; ``instances.json`` after
``helm-summarize``). :mod:`helmflow.helm.importer` reads such folders into runs of our storage
contract, :mod:`helmflow.helm.export` writes our runs as such folders; the mappings both use
(instances, adapter specs, stat names) live here.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from fsspec.core import url_to_fs

from helmflow.errors import HelmflowError
from helmflow.metrics import METRICS
from helmflow.plan.extras import PERTURBED_MARK
from helmflow.records import (
    AdapterSpec,
    ChatMessage,
    EvalSample,
    GenerationParams,
    Input,
    Instance,
    Reference,
)

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
MODEL_ARGS = ("model", "model_deployment")


class BadRun(ValueError):
    """A HELM run folder that cannot be imported whole: the reason names the file and what is wrong."""


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
    if (not entries and not fs.isdir(base)) or (
            entries and all(e["name"].rstrip("/") == base and e.get("type") == "file" for e in entries)):
        raise HelmflowError(f"{url} is not a folder; give a HELM suite folder (benchmark_output/runs/<suite>) "
                            "or one run folder")
    if {_basename(e["name"]) for e in entries} & set(HELM_FILES):
        return fs, [base]
    folders = []
    for entry in sorted(entries, key=lambda e: e["name"]):
        if (entry.get("type") == "directory"
                and {_basename(e["name"]) for e in _listing(fs, entry["name"])} & set(HELM_FILES)):
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


MAX_FILE_ENV = "HELMFLOW_IMPORT_MAX_MB"  # Settings.import_max_mb: a file is parsed whole, at about 7x its size


def max_file_bytes() -> int:
    from helmflow.settings import settings

    return int(settings().import_max_mb * 1e6)


def read_folder(fs: Any, folder: str) -> dict[str, bytes]:
    """The bytes of the HELM files present in ``folder``; a missing required file, or one past the size
    limit (:data:`MAX_FILE_ENV`), is a :class:`BadRun`, refused before it is read."""
    listed = {_basename(e["name"]): e for e in _listing(fs, folder)}
    missing = [n for n in REQUIRED if n not in listed]
    if missing:
        raise BadRun(f"no {' or '.join(missing)}")
    limit = max_file_bytes()
    for n in HELM_FILES:
        size = (listed.get(n) or {}).get("size")
        if isinstance(size, int) and size > limit:
            raise BadRun(f"{n} is {size:,} bytes, over the {limit:,} a HELM file may have here (it is parsed "
                         f"whole, at about 7x its size in memory); {MAX_FILE_ENV} (MB) raises the limit")
    return {n: fs.cat_file(f"{folder}/{n}") for n in HELM_FILES if n in listed}


def parse_json(name: str, data: bytes, kind: type) -> Any:
    def non_finite(token: str) -> float:  # Python's json reads NaN and Infinity; a score cannot be either
        raise BadRun(f"{name} holds {token}, not a finite number; refused (nothing non-finite is published)")

    try:
        value = json.loads(data, parse_constant=non_finite)
    except BadRun:
        raise
    except UnicodeDecodeError as exc:
        raise BadRun(f"{name} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BadRun(f"{name} is not valid JSON (truncated?): {exc.msg} "
                     f"(line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        raise BadRun(f"{name}: {exc}") from None
    if not isinstance(value, kind):
        raise BadRun(f"{name}: expected a JSON {'object' if kind is dict else 'list'}, found {type(value).__name__}")
    return value


def run_label(run_name: str) -> tuple[str, str, dict[str, str]]:
    """(scenario, label, params) from a HELM run name: the model arguments are the deployment, not the cell."""
    head, _, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and a.split("=", 1)[0] not in MODEL_ARGS]
    params = dict(a.split("=", 1) if "=" in a else [a, ""] for a in kept)
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
        references=[Reference(text=(r.get("output") or {}).get("text", ""),
                              correct=CORRECT_TAG in (r.get("tags") or []))
                    for r in raw.get("references") or []],
        split=raw.get("split") or "test",
        sub_split=raw.get("sub_split"),
        extra=extra,
    )


def _strings(value: Any) -> list[str] | None:
    return list(value) if isinstance(value, list) and value and all(isinstance(v, str) for v in value) else None


def our_adapter(h: dict) -> AdapterSpec:
    """HELM's adapter spec as ours (the verbatim spec stays in run.json's ``imported.run_spec``)."""
    texts = ("method", "global_prefix", "instructions", "input_prefix", "input_suffix", "reference_prefix",
             "reference_suffix", "output_prefix", "output_suffix", "instance_prefix", "global_suffix")
    return AdapterSpec(
        **{k: h[k] for k in texts if isinstance(h.get(k), str)},
        # HELM Arabic's option letters and the pattern its metrics read the letter with
        reference_prefix_characters=_strings(h.get("reference_prefix_characters")),
        output_mapping_pattern=pattern if isinstance(pattern := h.get("output_mapping_pattern"), str) else None,
        max_train_instances=max(int(h.get("max_train_instances") or 0), 0),
        generation=GenerationParams(max_tokens=max(int(h.get("max_tokens") or 1), 1),
                                    temperature=float(h.get("temperature") or 0.0),
                                    stop=list(h.get("stop_sequences") or []),
                                    num_outputs=max(int(h.get("num_outputs") or 1), 1)),
        sample=EvalSample(max_eval_instances=h.get("max_eval_instances") or None,
                          trials=max(int(h.get("num_train_trials") or 1), 1)),
    )


def stat_name(entry: Any, where: str) -> tuple[str, str, bool]:
    """(metric, split, plain) of a HELM Stat; ``plain``: no perturbation and no sub-split."""
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, dict) or not isinstance(name.get("name"), str) or not name["name"]:
        raise BadRun(f"{where}: a stat without a metric name")
    return name["name"], str(name.get("split") or ""), not name.get("perturbation") and not name.get("sub_split")


# HELM's generic statistics (``basic_metrics``: counts per split, truncation, finish reasons) and its
# efficiency ones (``efficiency_metrics``): every run has them, helmflow recomputes none of them
HELM_GENERIC = frozenset({
    "num_instances", "num_references", "num_train_trials", "num_train_instances", "prompt_truncated", "max_prob",
    "num_prompt_tokens", "num_completion_tokens", "num_output_tokens", "batch_size", "inference_runtime",
    "inference_denoised_runtime", "inference_idealized_runtime", "training_co2_cost", "training_energy_cost",
})


def generic_stat(name: str) -> bool:
    return name in HELM_GENERIC or name.startswith("finish_reason_")


# --------------------------------------------------------------------------- HELM's perturbation stats
# HELM's ``PerturbationDescription.computed_on``: the perturbed instances, the same instances unperturbed,
# or the per-instance minimum of the two (the robustness/fairness aggregates are always "worst")
COMPUTED_ON = ("perturbed", "original", "worst")
KINDS = ("robustness", "fairness")  # HELM's worst-case aggregates over every perturbation of that kind


def perturbed_stat(metric: str, perturbation: str, computed_on: str) -> str:
    """Our stat name for one of HELM's perturbation stats: ``<metric>~<perturbation>~<computed_on>``
    (``~`` as in a perturbed copy's label), e.g. ``exact_match~robustness~worst``."""
    return f"{metric}{PERTURBED_MARK}{perturbation}{PERTURBED_MARK}{computed_on}"


def split_perturbed(name: str) -> tuple[str, str, str] | None:
    """(metric, perturbation, computed_on) of a name :func:`perturbed_stat` made; None for a plain stat."""
    parts = name.rsplit(PERTURBED_MARK, 2)
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 and parts[2] in COMPUTED_ON and parts[0] else None


# HELM's sub-splits (``Instance.sub_split``: civil_comments' toxic/non-toxic, ...): every stat of such an
# instance names its sub-split, and helm-summarize merges them into the split's number
SUB_SPLIT_MARK = ":sub_split="  # HELM's own spelling of a sub-split group (``<group>:sub_split=<name>``)


def sub_split_stat(metric: str, sub_split: str | None) -> str:
    """Our stat name for a HELM stat of one sub-split: ``<metric>:sub_split=<sub_split>``."""
    return f"{metric}{SUB_SPLIT_MARK}{sub_split}" if sub_split else metric


def split_sub_split(name: str) -> tuple[str, str | None]:
    """(metric, sub_split) of a name :func:`sub_split_stat` made (before any perturbation suffix)."""
    metric, mark, sub = name.partition(SUB_SPLIT_MARK)
    return (metric, sub) if mark and metric and sub else (name, None)


def sub_split_of(entry: dict, where: str) -> str | None:
    """A HELM stat's sub-split (None for the whole split); one our names cannot carry is refused."""
    sub = (entry.get("name") or {}).get("sub_split")
    if sub is None or sub == "":
        return None
    if not isinstance(sub, str) or PERTURBED_MARK in sub or SUB_SPLIT_MARK in sub:
        raise BadRun(f"{where}: sub_split {sub!r} is not a name helmflow can keep")
    return sub


def perturbation_of(entry: dict, where: str) -> dict | None:
    """A HELM stat's perturbation description (name, robustness, fairness, computed_on, its parameters)."""
    name = entry.get("name") or {}
    desc = name.get("perturbation") if isinstance(name, dict) else None
    if desc is None:
        return None
    if not isinstance(desc, dict) or not isinstance(desc.get("name"), str) or not desc["name"]:
        raise BadRun(f"{where}: a perturbation without a name")
    if PERTURBED_MARK in desc["name"]:
        raise BadRun(f"{where}: perturbation name {desc['name']!r} has {PERTURBED_MARK!r}")
    if desc.get("computed_on", "perturbed") not in COMPUTED_ON:
        raise BadRun(f"{where}: perturbation computed_on {desc.get('computed_on')!r} is not one of {COMPUTED_ON}")
    return desc


def perturbation_key(desc: dict) -> str:
    """What identifies a perturbation across its three ``computed_on`` stats: its description without it."""
    return json.dumps({k: v for k, v in desc.items() if k != "computed_on"}, sort_keys=True)


def number(entry: dict, key: str, where: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRun(f"{where}: {key} is {value!r}, not a number")
    return float(value)


def to_helm_instance(inst: Instance) -> dict:
    """HELM's instance from ours; the metrics' ``to_helm`` hooks put back what they read."""
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
    return {"input": inp,
            "references": [{"output": {"text": r.text}, "tags": t} for r, t in zip(inst.references, tags)],
            "split": inst.split, "sub_split": inst.sub_split, "id": inst.id, "extra_data": extra or None}
