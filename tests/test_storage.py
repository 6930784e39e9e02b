"""Atomic writes, temporaries ignored by readers, and storage keys that cannot escape the root."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from helmflow.storage import TMP_PREFIX, StorageError, Store, resolve_root, safe_key


def test_atomic_write_leaves_no_temporaries_and_readers_skip_them(store):
    store.write_json("a/b.json", {"x": 1})
    assert store.read_json("a/b.json") == {"x": 1}
    # a killed writer's leftover temporary is invisible to listings
    with open(os.path.join(store.path("a"), f"{TMP_PREFIX}dead.b.json"), "w") as fh:
        fh.write("partial")
    assert store.ls("a") == ["a/b.json"]
    assert store.find("") == ["a/b.json"]


def test_parquet_metadata_round_trips(store):
    table = pa.table({"x": pa.array([1, 2], pa.int64())})
    store.write_parquet("t.parquet", table, {"helmflow.run_id": "abc"})
    assert store.read_parquet("t.parquet").equals(table.replace_schema_metadata(store.read_parquet("t.parquet").schema.metadata))
    assert store.parquet_metadata("t.parquet")["helmflow.run_id"] == "abc"


def test_parquet_reads_chosen_columns_and_refuse_a_column_the_file_lacks(store):
    store.write_parquet("t.parquet", pa.table({"x": [1, 2], "y": [[{"z": "a"}], []]}), {"helmflow.run_id": "abc"})
    assert store.read_parquet("t.parquet", columns=["y"]).to_pylist() == [{"y": [{"z": "a"}]}, {"y": []}]
    assert store.read_parquet("t.parquet").schema.metadata[b"helmflow.run_id"] == b"abc"
    with pytest.raises(pa.ArrowInvalid, match="no column w"):
        store.read_parquet("t.parquet", columns=["x", "w"])
    with pytest.raises(FileNotFoundError):
        store.read_parquet("missing.parquet")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        store.read_bytes("missing.json")


@pytest.mark.parametrize(
    ("name", "key"),
    [("openai/gpt-4o", "openai--gpt-4o"), ("../../etc/passwd", "--..--etc--passwd"), ("a b:c", "a_b_c")],
)
def test_safe_key(name, key):
    assert safe_key(name) == key
    assert "/" not in safe_key(name)


def test_safe_key_rejects_empty():
    with pytest.raises(ValueError):
        safe_key("..")


def test_root_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("HELMFLOW_STORAGE", str(tmp_path / "env"))
    assert resolve_root(None) == str(tmp_path / "env")
    assert resolve_root(str(tmp_path / "flag")) == str(tmp_path / "flag")
    assert resolve_root("s3://bucket/prefix/") == "s3://bucket/prefix"
    monkeypatch.delenv("HELMFLOW_STORAGE")
    monkeypatch.chdir(tmp_path)
    assert resolve_root(None) == str(tmp_path / "helmflow-store")


def test_unwritable_root_is_a_storage_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match="not writable"):
        Store(str(blocker / "store")).check_writable()
