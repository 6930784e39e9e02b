"""The data path for web sources: https files and files inside zip/tar archives, pinned by content.

Archives are served over real HTTP on 127.0.0.1 (``$HELMFLOW_SOURCE_HOST``, fsspec's http file
system unpatched); the mirror and checksum rules are the Capabilities data path's.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from helmflow.datasets import MIRROR_MANIFEST, fetch_verified
from helmflow.pipeline import download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.scenarios import DataSource, ScenarioError, get_scenario
from helmflow.storage import Store
from tests.support.cli import run_cli
from tests.support.lite_fixtures import obqa_zip, serve, source_tree, zip_bytes
from tests.support.lite_hub_fixtures import hub_conversion_mirrors

OBQA = "ai2-public-datasets.s3.amazonaws.com/open-book-qa/OpenBookQA-V1-Sep2018.zip"
OBQA_MEMBER = "OpenBookQA-V1-Sep2018/Data/Main/test.jsonl"


@pytest.fixture(autouse=True)
def _no_mirrors(monkeypatch):
    for var in ("HELMFLOW_MIRROR", "HELMFLOW_MIRROR_OPENBOOKQA", "HELMFLOW_SOURCE_HOST"):
        monkeypatch.delenv(var, raising=False)


def member(archive: bytes, name: str) -> bytes:
    return zipfile.ZipFile(io.BytesIO(archive)).read(name)


def test_a_source_declares_a_full_sha256_or_says_it_is_unknown():
    with pytest.raises(ValueError, match="sha256"):
        DataSource(filename="a", url="https://x/a", sha256="abc")
    with pytest.raises(ValueError, match="drop sha256_unknown"):
        DataSource(filename="a", url="https://x/a", sha256="0" * 64, sha256_unknown=True)
    assert DataSource(filename="t", url=get_scenario("openbookqa").sources()[1].url).member == OBQA_MEMBER


def test_web_and_archive_urls_go_through_the_source_host(monkeypatch):
    scen = get_scenario("mmlu", {"subject": "econometrics"})
    urls = [s.url for s in scen.sources()]
    assert urls[0] == "tar://data/dev/econometrics_dev.csv::simplecache::https://people.eecs.berkeley.edu/~hendrycks/data.tar"
    monkeypatch.setenv("HELMFLOW_SOURCE_HOST", "http://127.0.0.1:9/")
    assert scen.sources()[2].url == ("tar://data/test/econometrics_test.csv::simplecache::"
                                     "http://127.0.0.1:9/people.eecs.berkeley.edu/~hendrycks/data.tar")
    drive = get_scenario("med_qa").sources()[0].url
    assert drive.endswith("::simplecache::http://127.0.0.1:9/drive.google.com/uc?export=download&id=1ImYUSLk9JbgHXOemfvyiDiirluZHPeQw&confirm=t")
    assert drive.startswith("zip://data_clean/questions/US/4_options/phrases_no_exclude_train.jsonl::")
    with pytest.raises(ScenarioError, match="zip or a tar"):
        scen.archive_url("https://example.org/data.rar", "x")


@pytest.mark.slow
def test_archive_members_are_fetched_over_http_pinned_by_content_and_checked(tmp_path, monkeypatch):
    root = tmp_path / "src"
    archive = obqa_zip(30, 5, 20)
    (root / OBQA).parent.mkdir(parents=True)
    (root / OBQA).write_bytes(archive)
    with serve(root) as server:
        monkeypatch.setenv("HELMFLOW_SOURCE_HOST", server.url)
        plan = plan_scenario(ScenarioEntry(name="openbookqa"), None)
        test_sha = hashlib.sha256(member(archive, OBQA_MEMBER)).hexdigest()
        assert plan.dataset_revision == "OpenBookQA-V1-Sep2018" and plan.checksums["test.jsonl"] == test_sha
        # no pin was declared upstream or here: the run says so (reproduce refuses it unless allowed)
        assert "has no declared sha256" in plan.unverified["test.jsonl"] and "filling in a pin" in plan.unverified["test.jsonl"]
        store = Store(str(tmp_path / "store"))
        data = download_scenario(store, plan)
        assert store.read_json("datasets/openbookqa/OpenBookQA-V1-Sep2018/manifest.json") == plan.checksums
        assert store.read_bytes("datasets/openbookqa/OpenBookQA-V1-Sep2018/test.jsonl") == member(archive, OBQA_MEMBER)
        assert store.read_parquet(data.instances_key).num_rows == 50  # train 30 + test 20; dev ignored, as HELM
        assert all(r.endswith(".zip") for r in server.requests)

        # a declared pin is checked on the member's bytes
        url = get_scenario("openbookqa").sources()[1].url
        assert fetch_verified("openbookqa", url, test_sha) == member(archive, OBQA_MEMBER)
        with pytest.raises(ScenarioError, match=r"checksum mismatch for zip://OpenBookQA-V1-Sep2018/Data/Main/test.jsonl::"):
            fetch_verified("openbookqa", url, "0" * 64)
        # a missing member is one error naming the member and the archive (a fresh process: this one's
        # simplecache keeps the archive it fetched)
        (root / OBQA).write_bytes(zip_bytes({"OpenBookQA-V1-Sep2018/README": b"x"}))
        out = run_cli("run", "lite", "--scenarios", "openbookqa", "--models", "offline/echo", "--storage",
                      str(tmp_path / "planned"), env={"HELMFLOW_SOURCE_HOST": server.url})
    assert out.returncode == 2 and "Data/Main/train.jsonl" in out.stderr and "OpenBookQA-V1-Sep2018.zip" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_mirror_lite_fetches_every_source_records_unknown_pins_and_feeds_runs(tmp_path, monkeypatch):
    root = source_tree(tmp_path / "src", small=True)
    mirror = tmp_path / "mirror"
    with serve(root) as server:
        out = run_cli("mirror", "lite", "--to", str(mirror), env={"HELMFLOW_SOURCE_HOST": server.url, **hub_conversion_mirrors(tmp_path)})
        requests = list(server.requests)
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    # each archive is fetched once (fsspec's simplecache), whatever the number of members read from it
    assert requests.count("/people.eecs.berkeley.edu/~hendrycks/data.tar") <= 2 and len(requests) <= 20, requests
    # 32 web files + GSM8K's 2 + the Hub conversions' 39 (MATH's 2 files for each of its 7 subject entries,
    # LegalBench 5 x 2, WMT14 5 x 3), each mirror-only revision announced as unverified
    assert "recorded 73 at first fetch" in text and "verified 0 file(s)" in text
    assert all(f"PIN UNVERIFIED: {name}" in text for name in ("math", "legalbench", "wmt_14"))
    # MATH, LegalBench and WMT14 read mirrors of the Hub's Parquet conversions only: copied from theirs, recorded
    for folder in ("math/unpinned/train.parquet", "legalbench/unpinned/proa-test.parquet", "wmt_14/unpinned/fr-en-train.parquet"):
        assert (mirror / folder).exists(), folder
    csv_bytes = (mirror / "mmlu" / "hendrycks-test-data" / "econometrics_test.csv").read_bytes()
    digest = hashlib.sha256(csv_bytes).hexdigest()
    assert f'scenarios/mmlu.py: econometrics_test.csv: sha256="{digest}"' in text
    manifest = json.loads((mirror / "mmlu" / "hendrycks-test-data" / MIRROR_MANIFEST).read_text())
    assert len(manifest["files"]) == 15 and len(manifest["params"]) == 5  # five subjects, merged in one folder
    entry = manifest["files"]["econometrics_test.csv"]
    assert entry["sha256"] == digest and entry["verified_against"] == "" and "first fetch" in entry["recorded_at"]
    for folder in ("narrative_qa/narrativeqa-master", "natural_qa/v1.0-dev", "openbookqa/OpenBookQA-V1-Sep2018", "med_qa/MedQA-data_clean",
                   "gsm/master"):
        assert (mirror / folder / MIRROR_MANIFEST).exists(), folder

    # the mirror now feeds plans and runs with no network; the data stays reported as unpinned
    monkeypatch.setenv("HELMFLOW_MIRROR", str(mirror))
    plan = plan_scenario(ScenarioEntry(name="mmlu", params={"subject": "econometrics"}), None)
    assert plan.checksums["econometrics_test.csv"] == digest and "no declared sha256" in plan.unverified["econometrics_test.csv"]

    # a mirror may hold the archive unpacked: the member's path inside the archive is found too
    unpacked = tmp_path / "unpacked"
    for name in ("train", "test"):
        path = unpacked / f"OpenBookQA-V1-Sep2018/Data/Main/{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((mirror / "openbookqa/OpenBookQA-V1-Sep2018" / f"{name}.jsonl").read_bytes())
    monkeypatch.setenv("HELMFLOW_MIRROR_OPENBOOKQA", str(unpacked))
    obqa = plan_scenario(ScenarioEntry(name="openbookqa"), None)
    assert obqa.checksums == {n: hashlib.sha256((mirror / "openbookqa/OpenBookQA-V1-Sep2018" / n).read_bytes()).hexdigest()
                              for n in ("train.jsonl", "test.jsonl")}


@pytest.mark.slow
def test_mirror_records_the_files_of_a_scenario_that_runs_from_a_mirror_only(tmp_path):
    """MATH's Parquet conversion has no verifiable revision: `helmflow mirror` copies what the current mirror
    holds, records its hashes (not verified) and prints the pins, so `helmflow mirror lite` covers it too."""
    from tests.support.lite_hub_fixtures import math_files

    source = tmp_path / "handmade"
    source.mkdir()
    for name, data in math_files().items():
        (source / name).write_bytes(data)
    out = run_cli("mirror", "math:subject=algebra", "--to", str(tmp_path / "mirror"), env={"HELMFLOW_MIRROR_MATH": str(source)})
    assert out.returncode == 0, out.stdout + out.stderr
    digest = hashlib.sha256((source / "test.parquet").read_bytes()).hexdigest()
    text = " ".join(out.stdout.split())
    assert f'scenarios/competition_math.py: test.parquet: sha256="{digest}"' in text and "drop sha256_unknown" not in text
    manifest = json.loads(next((tmp_path / "mirror" / "math").glob(f"*/{MIRROR_MANIFEST}")).read_text())
    assert manifest["files"]["test.parquet"]["sha256"] == digest and manifest["files"]["test.parquet"]["verified_against"] == ""
