"""Download: mirror a scenario's pinned files under ``datasets/`` and verify them; write its instances."""

from __future__ import annotations

import hashlib
import json

from helmflow.records import INSTANCE_SCHEMA, Instance, instance_from_row, instance_to_row, to_table
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.storage import Store, open_url, safe_key

MANIFEST = "manifest.json"


def dataset_prefix(scenario_key: str, revision: str) -> str:
    return f"datasets/{scenario_key}/{safe_key(revision)}"


def instances_key(scenario_key: str, scenario_version: str) -> str:
    return f"instances/{scenario_key}/{scenario_version}.parquet"


def mirror_sources(store: Store, plan) -> dict[str, str]:
    """Copy each pinned file into the store once, verified; returns filename -> mirrored URL."""
    scen = get_scenario(plan.name, plan.params)
    prefix = dataset_prefix(plan.key, plan.dataset_revision)
    manifest = store.read_json(f"{prefix}/{MANIFEST}") if store.exists(f"{prefix}/{MANIFEST}") else {}
    files: dict[str, str] = {}
    for source in scen.sources():
        key = f"{prefix}/{safe_key(source.filename)}"
        expected = plan.checksums[source.filename]
        if manifest.get(source.filename) != expected or not store.exists(key):
            try:
                with open_url(source.url) as fh:
                    data = fh.read()
            except FileNotFoundError:
                raise ScenarioError(f"scenario {plan.name!r}: source file {source.url} does not exist") from None
            digest = hashlib.sha256(data).hexdigest()
            if digest != expected:
                raise ScenarioError(
                    f"scenario {plan.name!r}: checksum mismatch for {source.url}: expected {expected}, got {digest}"
                )
            store.write_bytes(key, data)
            manifest[source.filename] = digest
            store.write_json(f"{prefix}/{MANIFEST}", manifest)
        files[source.filename] = store.url(key)
    if not scen.sources() and not store.exists(f"{prefix}/{MANIFEST}"):
        store.write_json(f"{prefix}/{MANIFEST}", {"generated": True, "loader_version": plan.loader_version})
    return files


def write_instances(store: Store, plan, files: dict[str, str]) -> str:
    scen = get_scenario(plan.name, plan.params)
    instances = scen.load(files)
    if not instances:
        raise ScenarioError(f"scenario {plan.name!r} produced no instances from {sorted(files) or 'its generator'}")
    ids = [i.id for i in instances]
    if len(set(ids)) != len(ids):
        raise ScenarioError(f"scenario {plan.name!r}: instance ids are not unique")
    table = to_table([instance_to_row(i) for i in instances], INSTANCE_SCHEMA)
    key = instances_key(plan.key, plan.scenario_version)
    store.write_parquet(
        key,
        table,
        {
            "helmflow.scenario": plan.name,
            "helmflow.scenario_params": json.dumps(plan.params, sort_keys=True),
            "helmflow.scenario_version": plan.scenario_version,
            "helmflow.dataset_revision": plan.dataset_revision,
            "helmflow.loader_version": plan.loader_version,
        },
    )
    return key


def read_instances(store: Store, key: str) -> list[Instance]:
    return [instance_from_row(r) for r in store.read_parquet(key).to_pylist()]
