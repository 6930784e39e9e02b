"""The data path: mirror resolution, verified downloads, manifest pinning, schema checks, `helmflow mirror`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest

from helmflow.datasets import mirror_env_var, mirror_sources, resolve_source, write_instances
from helmflow.pipeline import download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import BoardError, ScenarioEntry
from helmflow.scenarios import DataSource, ScenarioError
from helmflow.storage import Store
from tests.support.capabilities_fixtures import (
    GPQA_HEADER,
    MMLU_SCHEMA,
    csv_bytes,
    gpqa_rows,
    mmlu_pro_files,
    mmlu_pro_rows,
    parquet_bytes,
)
from tests.support.hub_server import HubServer
from tests.support.tiny_board import run_board

MMLU_REV = "3373e0b32277875b8db2aa555a333b78a08477ea"
GPQA_REV = "90b8e5be2b1d3d2dbfe016cdab47981150600c4a"


@pytest.fixture(autouse=True)
def _no_mirrors(monkeypatch):
    for var in ("HELMFLOW_MIRROR", "HELMFLOW_MIRROR_MMLU_PRO", "HELMFLOW_MIRROR_GPQA", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)


def write_files(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_mirror_env_var_names():
    assert mirror_env_var("mmlu_pro") == "HELMFLOW_MIRROR_MMLU_PRO"
    assert mirror_env_var("my-bench.v2") == "HELMFLOW_MIRROR_MY_BENCH_V2"


def test_resolution_order(monkeypatch):
    # a source with one name (no Hub path): resolution alone, no listing (the Hub layout: below)
    src = DataSource(filename="test.parquet", url="https://example.org/pinned/rev/test.parquet")
    assert resolve_source("mmlu_pro", "rev", src) == src.url
    monkeypatch.setenv("HELMFLOW_MIRROR", "s3://bucket/mirror/")
    assert resolve_source("mmlu_pro", "rev", src) == "s3://bucket/mirror/mmlu_pro/rev/test.parquet"
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", "/data/mmlu")
    assert resolve_source("mmlu_pro", "rev", src) == "/data/mmlu/test.parquet"
    assert resolve_source("gpqa", "rev", src) == "s3://bucket/mirror/gpqa/rev/test.parquet"


def test_local_root_mirror_feeds_plan_and_download(tmp_path, monkeypatch):
    files = mmlu_pro_files(n_test=30)
    write_files(tmp_path / "mirror" / "mmlu_pro" / MMLU_REV, files)
    monkeypatch.setenv("HELMFLOW_MIRROR", str(tmp_path / "mirror"))
    plan = plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    assert plan.checksums == {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}
    store = Store(str(tmp_path / "store"))
    data = download_scenario(store, plan)
    manifest = store.read_json(f"datasets/mmlu_pro/{MMLU_REV}/manifest.json")
    assert manifest == plan.checksums
    assert store.read_bytes(f"datasets/mmlu_pro/{MMLU_REV}/test.parquet") == files["test.parquet"]
    assert store.read_parquet(data.instances_key).num_rows == 100


def test_checksum_mismatch_and_partial_file(tmp_path, monkeypatch):
    files = mmlu_pro_files(n_test=30)
    mirror = write_files(tmp_path / "m", files)
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(mirror))
    plan = plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    (mirror / "test.parquet").write_bytes(files["test.parquet"][:-100])  # truncated after planning
    store = Store(str(tmp_path / "store"))
    with pytest.raises(ScenarioError) as err:
        mirror_sources(store, plan)
    msg = str(err.value)
    assert "scenario 'mmlu_pro'" in msg and "checksum mismatch" in msg and str(mirror / "test.parquet") in msg
    assert not store.exists(f"datasets/mmlu_pro/{MMLU_REV}/test.parquet")  # nothing partial is kept


def test_manifest_pins_first_download(tmp_path, monkeypatch):
    mirror = write_files(tmp_path / "m", mmlu_pro_files(n_test=30))
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(mirror))
    store = Store(str(tmp_path / "store"))
    mirror_sources(store, plan_scenario(ScenarioEntry(name="mmlu_pro"), None))
    write_files(mirror, {"test.parquet": mmlu_pro_files(n_test=31)["test.parquet"]})  # same revision, new bytes
    with pytest.raises(ScenarioError, match="changed since it was first downloaded"):
        mirror_sources(store, plan_scenario(ScenarioEntry(name="mmlu_pro"), None))


def test_data_changed_under_the_same_storage_is_exit_2_at_plan_time(tmp_path, monkeypatch, cli):
    """Reproduced first: the run failed inside the download task (exit 1, an empty partial release)."""
    mirror = write_files(tmp_path / "m", mmlu_pro_files(n_test=30))
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(mirror))
    root = tmp_path / "store"
    mirror_sources(Store(str(root)), plan_scenario(ScenarioEntry(name="mmlu_pro"), None))  # the first download
    write_files(mirror, {"test.parquet": mmlu_pro_files(n_test=31)["test.parquet"]})  # same revision, new bytes
    out = cli("eval", "mmlu_pro", "--models", "offline/first-option", "--max-instances", "2", "--storage", str(root),
              env={"HELMFLOW_MIRROR_MMLU_PRO": str(mirror)})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "test.parquet at revision" in out.stderr and "changed since it was first downloaded" in out.stderr
    assert not (root / "leaderboards").exists() and not (root / "runs").exists()  # no flow ran


def test_missing_and_empty_files_fail_at_plan_time(tmp_path, monkeypatch):
    mirror = write_files(tmp_path / "m", {"validation.parquet": mmlu_pro_files()["validation.parquet"]})
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(mirror))
    with pytest.raises(BoardError) as err:
        plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    assert str(err.value).startswith(f"scenario 'mmlu_pro': the mirror {mirror} has neither test.parquet nor "
                                     "data/test-00000-of-00001.parquet")
    (mirror / "test.parquet").write_bytes(b"")
    with pytest.raises(BoardError, match="is empty"):
        plan_scenario(ScenarioEntry(name="mmlu_pro"), None)


@pytest.mark.parametrize(
    "schema_change, expected",
    [
        (lambda s: s.remove(s.get_field_index("answer")), "has no column 'answer' (expected string)"),
        (lambda s: s.set(s.get_field_index("question_id"), pa.field("question_id", pa.string())),
         "column 'question_id' has type string, expected integer"),
        (lambda s: s.set(s.get_field_index("options"), pa.field("options", pa.string())),
         "column 'options' has type string, expected list<string>"),
    ],
)
def test_schema_mismatch_names_scenario_url_and_column(tmp_path, monkeypatch, schema_change, expected):
    schema = schema_change(MMLU_SCHEMA)
    rows = [{k: (str(v) if schema.field(k).type == pa.string() and not isinstance(v, str) else v)
             for k, v in r.items() if k in schema.names} for r in mmlu_pro_rows(5)]
    mirror = write_files(tmp_path / "m", {"validation.parquet": parquet_bytes(mmlu_pro_rows(5)),
                                          "test.parquet": parquet_bytes(rows, schema)})
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(mirror))
    plan = plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    store = Store(str(tmp_path / "store"))
    with pytest.raises(ScenarioError) as err:
        write_instances(store, plan, mirror_sources(store, plan))
    msg = str(err.value)
    assert msg.startswith("scenario 'mmlu_pro': ") and expected in msg
    # the file the user can fix (the mirror), not the store's verified copy of it: --dry-run says the same
    assert str(mirror / "test.parquet") in msg and f"datasets/mmlu_pro/{MMLU_REV}/test.parquet" not in msg


def test_csv_schema_mismatch_never_shows_row_text(tmp_path, monkeypatch):
    rows = [{k: v for k, v in r.items() if k != "Incorrect Answer 2"} for r in gpqa_rows(10)]
    header = [h for h in GPQA_HEADER if h != "Incorrect Answer 2"]
    write_files(tmp_path / "m", {"gpqa_main.csv": csv_bytes(rows, header)})
    monkeypatch.setenv("HELMFLOW_MIRROR_GPQA", str(tmp_path / "m"))
    plan = plan_scenario(ScenarioEntry(name="gpqa"), None)
    store = Store(str(tmp_path / "store"))
    with pytest.raises(ScenarioError) as err:
        write_instances(store, plan, mirror_sources(store, plan))
    assert "has no column 'Incorrect Answer 2'" in str(err.value)
    assert "Fixture GPQA-shaped item" not in str(err.value)


@pytest.mark.slow  # two CLI subprocesses
def test_mirror_command_copies_from_the_hub_and_verifies(tmp_path, cli):
    files = mmlu_pro_files(n_test=40)
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/test-00000-of-00001.parquet", files["test.parquet"])
        hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/validation-00000-of-00001.parquet", files["validation.parquet"])
        env = {"HF_ENDPOINT": hub.url}
        out = cli("mirror", "mmlu_pro", "--to", str(tmp_path / "mirror"), env=env)
        assert out.returncode == 0, out.stderr
        assert "verified 2 file(s)" in out.stdout and "HELMFLOW_MIRROR=" in out.stdout
        missing = cli("mirror", "gpqa", "--to", str(tmp_path / "mirror"), env=env)
    for name, data in files.items():
        assert (tmp_path / "mirror" / "mmlu_pro" / MMLU_REV / name).read_bytes() == data
    assert missing.returncode == 2
    assert f"scenario 'gpqa': hf://datasets/Idavidrein/gpqa@{GPQA_REV}/gpqa_main.csv does not exist" in missing.stderr


@pytest.mark.slow
def test_s3_mirror_and_mirror_command_to_s3(tmp_path, s3_root, cli, monkeypatch):
    files = {"gpqa_main.csv": csv_bytes(gpqa_rows(20))}
    local = write_files(tmp_path / "m", files)
    with HubServer(tmp_path / "hub") as hub:  # the copy is verified against the Hub's file at the pinned revision
        hub.add_file("Idavidrein/gpqa", GPQA_REV, "gpqa_main.csv", files["gpqa_main.csv"])
        out = cli("mirror", "gpqa", "--to", s3_root, env={"HELMFLOW_MIRROR_GPQA": str(local), "HF_ENDPOINT": hub.url})
    assert out.returncode == 0, out.stderr
    monkeypatch.setenv("HELMFLOW_MIRROR", s3_root)  # the S3 copy now feeds plan + download
    plan = plan_scenario(ScenarioEntry(name="gpqa"), None)
    assert plan.checksums == {"gpqa_main.csv": hashlib.sha256(files["gpqa_main.csv"]).hexdigest()}
    store = Store(str(tmp_path / "store"))
    data = download_scenario(store, plan)
    assert store.read_parquet(data.instances_key).num_rows == 20
    # a wrong checksum on S3 is caught too
    import fsspec

    with fsspec.open(f"{s3_root}/gpqa/{GPQA_REV}/gpqa_main.csv", "wb") as fh:
        fh.write(files["gpqa_main.csv"].replace(b"keyed", b"KEYED"))
    with pytest.raises(ScenarioError, match="checksum mismatch"):
        mirror_sources(Store(str(tmp_path / "store2")), plan)


# --------------------------------------------------------------------------- verified data, Hub layout
def test_a_mirror_in_the_hub_repository_layout_is_read(tmp_path, monkeypatch):
    """Reproduced first: ``data/test-00000-of-00001.parquet`` (huggingface-cli's --local-dir) "does not exist"."""
    files = mmlu_pro_files(n_test=30)
    write_files(tmp_path / "m" / "data", {"test-00000-of-00001.parquet": files["test.parquet"],
                                          "validation-00000-of-00001.parquet": files["validation.parquet"]})
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(tmp_path / "m"))
    plan = plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    assert plan.checksums["test.parquet"] == hashlib.sha256(files["test.parquet"]).hexdigest()
    store = Store(str(tmp_path / "store"))
    assert store.read_parquet(download_scenario(store, plan).instances_key).num_rows == 100
    (tmp_path / "m" / "data" / "test-00000-of-00001.parquet").unlink()
    with pytest.raises(BoardError, match="has neither test.parquet nor data/test-00000-of-00001.parquet"):
        plan_scenario(ScenarioEntry(name="mmlu_pro"), None)


def test_a_mirror_without_manifest_is_unverified_and_says_so_everywhere(tmp_path, monkeypatch):
    """Reproduced first: a fabricated file was published as the board's latest with HELM's pinned revision."""
    from starlette.testclient import TestClient

    from helmflow import aggregate
    from helmflow.operations import cell_lineage
    from helmflow.plan.compile import prepare
    from helmflow.web.app import create_app

    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(write_files(tmp_path / "m", mmlu_pro_files(n_test=12))))
    board = tmp_path / "b.yaml"
    board.write_text("name: b\nversion: '1'\nmodels: [offline/first-option]\nmax_instances: 3\n"
                     "scenarios:\n  - name: mmlu_pro\n    label: pro\n")
    plan = prepare(str(board))
    assert set(plan.scenarios[0].unverified) == {"test.parquet", "validation.parquet"}
    assert "has no helmflow-mirror.json" in plan.scenarios[0].unverified["test.parquet"]
    store = Store(str(tmp_path / "store"))
    out = aggregate.point_release(store, plan, aggregate.publish_release(store, plan, run_board(store, plan), []))
    run_json = store.read_json(f"runs/{plan.runs[0].run_id}/run.json")
    assert set(run_json["dataset"]["unverified"]) == {"test.parquet", "validation.parquet"}
    release_json = store.read_json(f"leaderboards/b/{out.release_id}/release.json")
    assert set(release_json["unverified_data"]["pro"]) == {"test.parquet", "validation.parquet"}
    page = TestClient(create_app(store.root)).get(f"/boards/b/{out.release_id}/")
    assert 'id="unverified-data"' in page.text and "has no helmflow-mirror.json" in page.text
    (cell,) = cell_lineage(store, "b")
    assert "test.parquet" in cell["unverified"]


def test_mirror_verifies_against_the_hub_lfs_hash_and_writes_a_manifest(tmp_path, monkeypatch):
    from helmflow.datasets import MIRROR_MANIFEST, mirror_scenario
    from helmflow.scenarios import get_scenario

    files = mmlu_pro_files(n_test=30)
    with HubServer(tmp_path / "hub") as hub:
        hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/test-00000-of-00001.parquet", files["test.parquet"])
        hub.add_file("TIGER-Lab/MMLU-Pro", MMLU_REV, "data/validation-00000-of-00001.parquet", files["validation.parquet"])
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        rows = mirror_scenario(get_scenario("mmlu_pro"), str(tmp_path / "mirror"))
        fake = write_files(tmp_path / "fake", mmlu_pro_files(n_test=3))  # a fabricated file in the real schema
        monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(fake))
        with pytest.raises(ScenarioError, match="checksum mismatch"):  # mirror refuses to copy it
            mirror_scenario(get_scenario("mmlu_pro"), str(tmp_path / "mirror2"))
        assert any("paths-info" in r or "tree" in r for r in hub.requests)  # the LFS hash came from the Hub
    assert {r[0] for r in rows} == {"test.parquet", "validation.parquet"}
    manifest = json.loads((tmp_path / "mirror" / "mmlu_pro" / MMLU_REV / MIRROR_MANIFEST).read_text())
    assert manifest["revision"] == MMLU_REV
    assert manifest["files"]["test.parquet"]["sha256"] == hashlib.sha256(files["test.parquet"]).hexdigest()
    assert manifest["files"]["test.parquet"]["verified_against"].startswith("Hub LFS sha256")

    monkeypatch.delenv("HELMFLOW_MIRROR_MMLU_PRO")
    monkeypatch.setenv("HELMFLOW_MIRROR", str(tmp_path / "mirror"))
    assert plan_scenario(ScenarioEntry(name="mmlu_pro"), None).unverified == {}  # the manifest vouches for it
    (tmp_path / "mirror" / "mmlu_pro" / MMLU_REV / "test.parquet").write_bytes(mmlu_pro_files(n_test=3)["test.parquet"])
    assert "matches no hash in" in plan_scenario(ScenarioEntry(name="mmlu_pro"), None).unverified["test.parquet"]


@pytest.mark.parametrize("entry, max_instances", [
    (ScenarioEntry(name="synthetic_reasoning", params={"mode": "induction", "num_train": 40, "num_valid": 60,
                                                       "num_test": 60}), 7),
    (ScenarioEntry(name="dyck_language", params={"num_parenthesis_pairs": 2, "num_test": 30}), 9),
    (ScenarioEntry(name="arithmetic", params={"choices": 4}, adapter={"sample": {"seed": 3, "trials": 2}}), 5),
    (ScenarioEntry(name="arithmetic", adapter={"max_train_instances": 0}), 6),  # zero-shot: no train read
    (ScenarioEntry(name="arithmetic", params={"num_test": 8}), 50),  # a sample larger than the pool: all of it
])
def test_the_adapt_stage_builds_only_the_instances_its_prompts_read(tmp_path, monkeypatch, entry, max_instances):
    """The stored prompts equal those of the whole instances file adapted in memory (the same sample in the
    same order, the same few-shot examples in every trial), and only the train split (when the prompts draw
    examples) and the sampled instances are turned into objects."""
    import helmflow.datasets
    from helmflow.adapters import adapt
    from helmflow.datasets import read_instances
    from helmflow.pipeline import adapt_scenario, prompts_key
    from helmflow.records import prompt_from_row

    plan = plan_scenario(entry, max_instances)
    store = Store(str(tmp_path / "store"))
    data = download_scenario(store, plan)
    everything = read_instances(store, data.instances_key)
    expected = adapt(plan.adapter, everything)
    built = []
    real = helmflow.datasets.instance_from_row
    monkeypatch.setattr(helmflow.datasets, "instance_from_row", lambda row: built.append(row["id"]) or real(row))
    prompt_set = adapt_scenario(store, plan, data)
    stored = [prompt_from_row(r) for r in store.read_parquet(prompts_key(plan)).to_pylist()]
    assert stored == expected and prompt_set.num_prompts == len(expected)
    evaluated = {p.instance_id for p in expected}
    train = {i.id for i in everything if i.split == "train"} if plan.adapter.max_train_instances else set()
    assert len(evaluated) == min(max_instances, sum(i.split in plan.adapter.sample.splits for i in everything))
    assert sorted(built) == sorted(train | evaluated)
    assert any(p.examples for p in expected) == bool(train)
