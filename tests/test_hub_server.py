"""The real hf:// path: huggingface_hub's HfFileSystem over HTTP against the local Hub (HF_ENDPOINT)."""

from __future__ import annotations

import hashlib

import pytest

from helmflow.datasets import fetch, sha256_of
from helmflow.scenarios import ScenarioError
from tests.support.capabilities_fixtures import mmlu_pro_files
from tests.support.hub_server import HubServer

MMLU_REV = "3373e0b32277875b8db2aa555a333b78a08477ea"
GPQA_REV = "90b8e5be2b1d3d2dbfe016cdab47981150600c4a"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with HubServer(tmp_path / "hub", gated={"Idavidrein/gpqa": "hf_fixture_token"}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield server


def test_literal_hf_url_is_read_through_hffilesystem(hub):
    data = mmlu_pro_files(n_test=50)["test.parquet"]
    hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/test-00000-of-00001.parquet", data)
    url = f"hf://datasets/TIGER-Lab/MMLU-Pro@{MMLU_REV}/data/test-00000-of-00001.parquet"
    assert fetch("mmlu_pro", url) == data
    assert sha256_of("mmlu_pro", url) == hashlib.sha256(data).hexdigest()
    # HfFileSystem's own calls: revision info, then the resolve endpoint
    assert f"GET /api/datasets/TIGER-Lab/MMLU-Pro/revision/{MMLU_REV}" in hub.requests
    assert f"GET /datasets/TIGER-Lab/MMLU-Pro/resolve/{MMLU_REV}/data/test-00000-of-00001.parquet" in hub.requests


def test_range_reads_and_paths_info(hub):
    from huggingface_hub import HfFileSystem

    hub.add_file("org/ds", MMLU_REV, "a/b.bin", bytes(range(256)) * 40)
    fs = HfFileSystem(endpoint=hub.url, skip_instance_cache=True)
    with fs.open(f"datasets/org/ds@{MMLU_REV}/a/b.bin", "rb", block_size=100) as fh:
        fh.seek(300)
        assert fh.read(4) == bytes([44, 45, 46, 47])
    info = fs.info(f"datasets/org/ds@{MMLU_REV}/a/b.bin")
    assert info["size"] == 10240 and info["type"] == "file"
    assert [p.rsplit("/", 1)[-1] for p in fs.ls(f"datasets/org/ds@{MMLU_REV}/a", detail=False)] == ["b.bin"]


def test_gated_repo_needs_hf_token(hub, monkeypatch):
    hub.add_file("Idavidrein/gpqa", GPQA_REV, "gpqa_main.csv", b"Question\nq\n")
    url = f"hf://datasets/Idavidrein/gpqa@{GPQA_REV}/gpqa_main.csv"
    with pytest.raises(ScenarioError) as err:
        fetch("gpqa", url)
    msg = str(err.value)
    assert "scenario 'gpqa'" in msg and url in msg and "gated" in msg and "HF_TOKEN is not set" in msg
    assert any(r.startswith("GET /api/datasets/Idavidrein/gpqa/") for r in hub.requests)

    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    with pytest.raises(ScenarioError, match="HF_TOKEN is set but was refused") as err:
        fetch("gpqa", url)
    assert "hf_wrong" not in str(err.value)  # the secret itself never appears

    monkeypatch.setenv("HF_TOKEN", "hf_fixture_token")
    assert fetch("gpqa", url) == b"Question\nq\n"


@pytest.mark.parametrize(
    "url, why",
    [
        (f"hf://datasets/org/ds@{MMLU_REV}/missing.parquet", "does not exist"),
        ("hf://datasets/org/ds@0000000000000000000000000000000000000000/x.parquet", "revision not found"),
        (f"hf://datasets/nobody/nothing@{MMLU_REV}/x.parquet", "repository not found"),
    ],
)
def test_missing_file_revision_or_repo_is_one_clear_error(hub, url, why):
    hub.add_file("org/ds", MMLU_REV, "x.parquet", b"PAR1")
    with pytest.raises(ScenarioError) as err:
        fetch("mmlu_pro", url)
    assert str(err.value).startswith(f"scenario 'mmlu_pro': {url} does not exist")
    assert why in str(err.value)


def test_empty_file_is_refused(hub):
    url = hub.add_file("org/ds", MMLU_REV, "empty.csv", b"")
    with pytest.raises(ScenarioError, match="is empty"):
        fetch("gpqa", url)
    with pytest.raises(ScenarioError, match="is empty"):
        sha256_of("gpqa", url)


def test_scenario_downloads_from_its_declared_hf_urls(hub, tmp_path, monkeypatch):
    """No mirror: plan pins checksums and the download stage reads the scenario's own hf:// URLs."""
    from helmflow.pipeline import download_scenario
    from helmflow.plan.compile import plan_scenario
    from helmflow.plan.spec import ScenarioEntry
    from helmflow.storage import Store

    for var in ("HELMFLOW_MIRROR", "HELMFLOW_MIRROR_MMLU_PRO"):
        monkeypatch.delenv(var, raising=False)
    files = mmlu_pro_files(n_test=25)
    hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/test-00000-of-00001.parquet", files["test.parquet"])
    hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/validation-00000-of-00001.parquet", files["validation.parquet"])
    plan = plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    assert plan.checksums["test.parquet"] == hashlib.sha256(files["test.parquet"]).hexdigest()
    store = Store(str(tmp_path / "store"))
    data = download_scenario(store, plan)
    assert store.read_parquet(data.instances_key).num_rows == 95
    resolves = [r for r in hub.requests if "/resolve/" in r]
    assert len(resolves) == 2  # plan time took the Parquet (LFS) sha256 from the Hub's metadata


def test_server_never_serves_outside_its_root(hub, tmp_path):
    import httpx

    (tmp_path / "secret.txt").write_text("not for the Hub")
    hub.add_file("org/ds", MMLU_REV, "ok.txt", b"ok")
    base = f"{hub.url}/datasets/org/ds/resolve/{MMLU_REV}"
    assert httpx.get(f"{base}/ok.txt").content == b"ok"
    escaped = httpx.get(f"{base}/%2E%2E/%2E%2E/%2E%2E/%2E%2E/secret.txt")
    assert escaped.status_code == 404 and escaped.headers["X-Error-Code"] == "EntryNotFound"
