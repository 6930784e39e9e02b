"""HELM's published item difficulties for adaptive runs: ``helmflow fetch-assets reeval``.

HELM's REEval runner (``benchmark/reeval_runner.py``) reads the Hugging Face dataset
``stair-lab/reeval-difficulty``, one split per scenario name (``dyck_language_np_3`` for
``dyck_language``), columns ``request.prompt`` and ``z``, and keeps the requests whose prompt string
equals one of the table's exactly; the others are never asked. HELM reads the table unpinned.

:func:`fetch_reeval` downloads each split a board's scenarios name through fsspec's ``hf://``
(huggingface_hub, honouring ``HF_ENDPOINT`` and ``HF_TOKEN``) at :data:`REVISION` (``--revision`` for
another), stores the file under ``assets/reeval/`` with its sha256 recorded at the first fetch (a later
fetch whose bytes differ is refused and changes nothing, as ``fetch-assets perturbations``), matches the
rows to the scenario's instances, and writes the matched items' z where ``helmflow calibrate-items``
writes its own (:func:`helmflow.layout.item_easiness`), so ``run --adaptive`` reads them the same way.

Matching: by the exact prompt text our adapter builds for the instance (any deployment of the board)
where our wording equals HELM's; for a scenario listed in :data:`INSTANCE_ID_MAPS`, by the instance id
that declared mapping gives each of HELM's rows instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow import layout, versions
from helmflow.errors import HelmflowError
from helmflow.plan.records import BoardPlan, ScenarioPlan
from helmflow.storage import Store

KIND = "reeval"
COMMAND = f"helmflow fetch-assets {KIND}"
REPO = "stair-lab/reeval-difficulty"
# HELM pins no revision of the table. This is the revision helmflow reads by default; no commit of the
# repository could be verified offline, so it is declared unverified (printed as PIN UNVERIFIED).
REVISION = "main"
REVISION_UNVERIFIED = f"HELM reads {REPO} unpinned and no commit of it could be verified here"
# the split's file in the repository (the Hub's layout of a Parquet dataset with one file per split)
SPLIT_PATH = "data/{split}-00000-of-00001.parquet"
# our scenario name -> HELM's split name, where they differ (HELM's own special case); else the same name
SPLITS: dict[str, str] = {"dyck_language": "dyck_language_np_3"}
# scenario name -> the instance id of a HELM row (its prompt), for scenarios whose wording differs from
# HELM's; None for a row with no instance of ours. Scenarios not listed match by exact prompt text.
INSTANCE_ID_MAPS: dict[str, Callable[[str], str | None]] = {}


class ReevalError(HelmflowError, ValueError):
    """A table that could not be read, has the wrong columns, or differs from its first fetch."""


@dataclass(frozen=True)
class Matched:
    scenario: str  # the board's label
    split: str
    url: str
    sha256: str | None  # None: the table has no such split (HELM skips the scenario)
    check: str  # "recorded", "same as first fetch" or "no split"
    rows: int = 0
    pool: int = 0
    matched: int = 0
    by: str = "prompt"
    version: str | None = None


def split_name(scenario: ScenarioPlan) -> str:
    return SPLITS.get(scenario.name, scenario.name)


def split_url(split: str, revision: str) -> str:
    return f"hf://datasets/{REPO}@{revision}/{SPLIT_PATH.format(split=split)}"


def _filename(split: str, revision: str) -> str:
    return f"{split}.{revision}.parquet"


def recorded(store: Store) -> dict[str, dict]:
    key = layout.assets_manifest(KIND)
    return store.read_json(key).get("files", {}) if store.exists(key) else {}


def _download(url: str) -> bytes | None:
    """The file's bytes, or None when the repository has no such file (no split for the scenario)."""
    import fsspec

    from helmflow.datasets import _storage_options

    try:
        with fsspec.open(url, "rb", **_storage_options(url)) as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - one line naming the URL, whatever the transport raised
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ReevalError(f"cannot read {url} ({type(exc).__name__}: {first}); offline? set HF_ENDPOINT to a "
                          f"mirror of the Hub") from None
    if not data:
        raise ReevalError(f"{url} is empty (0 bytes); refusing to use it")
    return data


def _table(url: str, data: bytes) -> dict[str, float]:
    """HELM's row dict: prompt -> z (a repeated prompt keeps its last z, as HELM's dict comprehension)."""
    try:
        table = pq.read_table(pa.BufferReader(data))
    except Exception as exc:  # noqa: BLE001
        raise ReevalError(f"{url} is not a Parquet file ({exc})") from None
    missing = [c for c in ("request.prompt", "z") if c not in table.column_names]
    if missing:
        raise ReevalError(f"{url} has no column {', '.join(map(repr, missing))} (columns: {table.column_names})")
    return dict(zip(table["request.prompt"].to_pylist(), table["z"].to_pylist(), strict=True))


def pool_prompts(plan: BoardPlan, scenario: ScenarioPlan) -> dict[str, str]:
    """prompt text -> instance id over the scenario's pool: every prompt our adapter builds for it, for
    each deployment of the board (a prompt fitted to a smaller window is its own text)."""
    from helmflow.adapters import iter_prompts
    from helmflow.dryrun import load_instances
    from helmflow.request_builder import build_requests, prompt_text

    instances = load_instances(scenario)
    deployments = {r.deployment.name: r.deployment for r in plan.runs if r.scenario.label == scenario.label}
    out: dict[str, str] = {}
    for dep in deployments.values():
        for prompt in iter_prompts(scenario.adapter, instances):
            for r in build_requests([prompt], scenario.adapter, dep):
                out.setdefault(prompt_text(r.body), r.instance_id)
    return out


def match(plan: BoardPlan, scenario: ScenarioPlan, table: dict[str, float]) -> tuple[dict[str, float], str, int]:
    """instance id -> z of the pool's items found in HELM's table, how they were matched, the pool's size."""
    prompts = pool_prompts(plan, scenario)
    pool = set(prompts.values())
    mapping = INSTANCE_ID_MAPS.get(scenario.name)
    out: dict[str, float] = {}
    if mapping is not None:
        for prompt, z in table.items():
            instance_id = mapping(prompt)
            if instance_id in pool:
                out[instance_id] = float(z)
        return out, "instance id", len(pool)
    for prompt, z in table.items():
        if prompt in prompts:
            out[prompts[prompt]] = float(z)
    return out, "prompt", len(pool)


def fetch_reeval(store: Store, plan: BoardPlan, revision: str = REVISION) -> list[Matched]:
    """Download every split the board's scenarios name, check each against its first fetch, match it, then
    store the files, the record of their sha256 (last but one) and each scenario's matched difficulties.
    Every split is downloaded and checked before anything is stored, so a changed one changes nothing."""
    before = recorded(store)
    fetched: list[tuple[ScenarioPlan, Matched, bytes | None, dict[str, float]]] = []
    downloads: dict[str, bytes | None] = {}
    for scenario in plan.scenarios:  # originals: HELM's table holds the unperturbed prompts
        split = split_name(scenario)
        url = split_url(split, revision)
        if url not in downloads:
            downloads[url] = _download(url)
        data = downloads[url]
        if data is None:
            fetched.append((scenario, Matched(scenario.label, split, url, None, "no split"), None, {}))
            continue
        digest = hashlib.sha256(data).hexdigest()
        first = before.get(_filename(split, revision), {}).get("sha256")
        if first and digest != first:
            raise ReevalError(f"{url}: sha256 {digest} differs from the first fetch into this storage ({first}); "
                              f"nothing was stored")
        table = _table(url, data)
        easiness, by, pool = match(plan, scenario, table)
        version = versions.stable_hash({"source": REPO, "revision": revision, "sha256": digest})
        fetched.append((scenario, Matched(scenario.label, split, url, digest,
                                          "same as first fetch" if first else "recorded", len(table), pool,
                                          len(easiness), by, version if easiness else None), data, easiness))
    files = dict(before)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for _, m, data, _ in fetched:
        if data is not None:
            name = _filename(m.split, revision)
            store.write_bytes(layout.asset_file(KIND, name), data)
            files.setdefault(name, {"sha256": m.sha256, "url": m.url, "revision": revision, "fetched_at": now})
    store.write_json(layout.assets_manifest(KIND), {"files": files})
    from helmflow.calibration import EASINESS_SCHEMA

    for scenario, m, _, easiness in fetched:
        if m.version is None:
            continue
        items = sorted(easiness)
        store.write_parquet(layout.item_easiness(scenario.key, scenario.scenario_version, m.version),
                            pa.table({"instance_id": items, "z": [easiness[i] for i in items]},
                                     schema=EASINESS_SCHEMA))
        store.write_json(layout.item_easiness_latest(scenario.key, scenario.scenario_version),
                         {"version": m.version, "source": f"hf://datasets/{REPO}", "revision": revision,
                          "split": m.split, "sha256": m.sha256, "matched_by": m.by, "matched": m.matched,
                          "pool": m.pool})
    return [m for _, m, _, _ in fetched]
