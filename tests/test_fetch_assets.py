"""``helmflow fetch-assets perturbations`` against a local HTTP server with stand-in files: the files land
in the storage root's assets, unpinned hashes are recorded at the first fetch and enforced after it,
and the perturbations read them from there."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from helmflow import layout
from helmflow.perturbations import PERTURBATIONS, PerturbationError, assets_from, data_bytes, resolve
from helmflow.perturbations.assets import ASSETS
from helmflow.records import Input, Instance
from helmflow.storage import Store
from tests.support.cli import run_cli
from tests.support.lite_fixtures import serve

STAND_INS = {  # HELM's folder layout under its bucket, with files we write
    "dialect_perturbation/SAE_to_AAVE_mapping.json": json.dumps({"brother": ["brotha"], "going": ["gon"]}).encode(),
    "synonym_perturbation/wordnet_synonyms.json": json.dumps({"good:s": ["dependable"]}).encode(),
    "person_name_perturbation/person_names.txt": b"greg,first_name,race,white_american,gender,male\n"
                                                 b"jamal,first_name,race,black_american,gender,male\n",
}


def _bucket(root: Path) -> Path:
    for path, data in STAND_INS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def test_every_asset_is_one_of_helms_published_files():
    assert {a.path for a in ASSETS} == set(STAND_INS)
    assert all(a.sha256 is None for a in ASSETS)  # HELM publishes none: recorded at the first fetch


def test_dialect_is_refused_until_fetched_with_a_message_naming_the_command(tmp_path):
    with assets_from(str(tmp_path / "empty-store")), pytest.raises(PerturbationError) as err:
        resolve("dialect")
    assert "SAE_to_AAVE_mapping.json is missing" in str(err.value)
    assert "helmflow fetch-assets perturbations" in str(err.value)


@pytest.mark.slow
def test_fetch_assets_records_then_verifies_and_the_perturbations_read_the_fetched_files(tmp_path):
    bucket = _bucket(tmp_path / "bucket")
    store_root = tmp_path / "store"
    with serve(bucket) as server:
        env = {"HELMFLOW_ASSETS_URL": server.url, "HELMFLOW_STORAGE": str(store_root)}
        first = run_cli("fetch-assets", "perturbations", env=env)
        assert first.returncode == 0, first.stderr
        assert sorted(server.requests) == sorted(f"/{p}" for p in STAND_INS)
        store = Store(str(store_root))
        for asset in ASSETS:
            assert store.read_bytes(layout.asset_file("perturbations", asset.filename)) == STAND_INS[asset.path]
        files = store.read_json(layout.assets_manifest("perturbations"))["files"]
        assert set(files) == {a.filename for a in ASSETS}
        assert "UNPINNED" in first.stdout and first.stdout.count("recorded") == 3

        again = run_cli("fetch-assets", "perturbations", env=env)
        assert again.returncode == 0 and again.stdout.count("same as first fetch") == 3, again.stderr

        # the bucket's mapping changes: refused, and nothing stored changes
        (bucket / "dialect_perturbation/SAE_to_AAVE_mapping.json").write_text('{"brother": ["bro"]}')
        changed = run_cli("fetch-assets", "perturbations", env=env)
        assert changed.returncode == 2 and changed.stderr.count("\n") == 1
        assert "differs from the first fetch" in changed.stderr
        assert store.read_bytes(layout.asset_file("perturbations", "SAE_to_AAVE_mapping.json")) == \
            STAND_INS["dialect_perturbation/SAE_to_AAVE_mapping.json"]
        assert store.read_json(layout.assets_manifest("perturbations"))["files"] == files

    with assets_from(str(store_root)):
        assert [p.name for p in resolve("dialect")] == ["dialect"]
        dialect = dataclasses.replace(PERTURBATIONS.get("dialect"))  # a fresh text_fn, not the registry's
        version = dialect.version_data()["data"]["SAE_to_AAVE_mapping.json"]
        assert version == files["SAE_to_AAVE_mapping.json"]["sha256"]
        out = dialect.apply(Instance(id="i1", input=Input(text="My brother is going home.")))
        assert out.input.text == "My brotha is gon home."
        # HELM's own person-name list, once fetched, is the one person_name reads
        assert data_bytes("person_names.txt") == STAND_INS["person_name_perturbation/person_names.txt"]


def test_a_fetched_file_changed_in_the_store_is_refused(tmp_path):
    store = Store(str(tmp_path / "store"))
    store.write_bytes(layout.asset_file("perturbations", "SAE_to_AAVE_mapping.json"), b'{"brother": ["bro"]}')
    store.write_json(layout.assets_manifest("perturbations"),
                     {"files": {"SAE_to_AAVE_mapping.json": {"sha256": "0" * 64, "url": "http://x", "fetched_at": ""}}})
    with assets_from(store.root), pytest.raises(PerturbationError, match="changed since it was fetched"):
        resolve("dialect")
