"""``helmflow publish hf``: a release with a GPQA run pushed through the real command and the real
huggingface_hub client (HF_ENDPOINT at the local Hub double, which also serves GPQA's gated CSV), read
back with HfFileSystem and ``datasets``; a planted token never shows in output, the store or the pushed files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helmflow.storage import Store
from tests.support.capabilities_fixtures import csv_bytes, gpqa_rows
from tests.support.cli import run_cli
from tests.support.hub_server import HubServer

GPQA_REV = "90b8e5be2b1d3d2dbfe016cdab47981150600c4a"
SENTINEL = "hf_SENTINELtokenNeverShown0123456789"
REPO = "acme/helmflow-results"
BOARD = {"name": "pub", "version": "1", "models": ["offline/solver", "offline/first-option"], "max_instances": 3,
         "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "ops": "+"}, "label": "add"},
                       {"name": "gpqa", "label": "gpqa"}]}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    with HubServer(root / "hub", gated={"Idavidrein/gpqa": SENTINEL}, write_token=SENTINEL) as server:
        server.add_file("Idavidrein/gpqa", GPQA_REV, "gpqa_main.csv", csv_bytes(gpqa_rows(12)))
        yield server


@pytest.fixture(scope="module")
def release(hub, tmp_path_factory) -> tuple[Store, str]:
    """The board through the pipeline's own stages (no Prefect), GPQA read from the gated double."""
    from helmflow import pipeline
    from helmflow.plan.compile import prepare
    from tests.support.tiny_board import release as published

    store = Store(str(tmp_path_factory.mktemp("pub") / "store"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_ENDPOINT", hub.url)
        mp.setenv("HF_TOKEN", SENTINEL)
        out = published(store, pipeline.preflight(store, prepare(BOARD)))
    return store, out.release_id


def _publish(store: Store, hub: HubServer, tmp: Path, *extra: str, token: str | None = SENTINEL, repo: str = REPO,
             debug: bool = False):
    """The command with the token in HF_TOKEN (None: no token at all, and no saved login in HF_HOME); ``debug``:
    huggingface_hub's own logging at its loudest (every request it makes), where the token must not show either."""
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp / "hf-home"),
           "HF_TOKEN": token or "", "HF_HUB_VERBOSITY": "debug" if debug else "warning"}
    return run_cli("publish", "hf", "pub", "--repo", repo, "--storage", store.root, *extra, env=env)


def _load_dataset(hub: HubServer, tmp: Path) -> list[dict]:
    """``datasets.load_dataset(REPO, "leaderboard")`` as the card says, in a process whose HF_ENDPOINT is the double
    (huggingface_hub reads it when imported)."""
    code = ("import json, sys; from datasets import load_dataset; "
            f"ds = load_dataset({REPO!r}, 'leaderboard', split='train', cache_dir=sys.argv[1]); "
            "print(json.dumps(ds.to_list()))")
    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_TOKEN=SENTINEL, HF_HOME=str(tmp / "hf-home"))
    out = subprocess.run([sys.executable, "-c", code, str(tmp / "ds")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_a_release_round_trips_through_the_hub_and_republishing_uploads_nothing(release, hub, tmp_path: Path):
    from huggingface_hub import HfApi, HfFileSystem

    store, release_id = release
    out = _publish(store, hub, tmp_path, "--private", debug=True)
    assert out.returncode == 0, out.stdout + out.stderr
    runs = [json.loads(store.read_bytes(f"runs/{rid}/run.json")) for rid in
            json.loads(store.read_bytes(f"leaderboards/pub/{release_id}/release.json"))["run_ids"]]
    gpqa = [r["run_id"] for r in runs if r["scenario"]["name"] == "gpqa"]
    kept = [r for r in runs if r["scenario"]["name"] != "gpqa"]
    assert len(gpqa) == 2 and len(kept) == 2
    refused = [line for line in out.stdout.splitlines() if line.startswith("refused")]
    assert refused == ["refused   gpqa: scenario gpqa: its dataset asks that its questions are never published; "
                       "its runs' rows are not pushed (the leaderboard keeps its scores)"], out.stdout
    assert f"published pub {release_id} to {hub.url}/datasets/{REPO}:" in out.stdout

    # every file the release and its non-gated runs hold, the same bytes, read back over HTTP
    fs = HfFileSystem(endpoint=hub.url, token=SENTINEL, skip_instance_cache=True)
    expected = [f"leaderboards/pub/{release_id}/{f}" for f in ("leaderboard.parquet", "runs.parquet", "release.json")]
    for r in kept:
        expected += [f"runs/{r['run_id']}/{f}" for f in r["sha256"]] + [f"runs/{r['run_id']}/run.json"]
    for key in expected:
        assert fs.cat_file(f"datasets/{REPO}/{key}") == store.read_bytes(key), key
    pushed = set(fs.find(f"datasets/{REPO}"))
    assert {p.removeprefix(f"datasets/{REPO}/") for p in pushed} == {*expected, "README.md"}
    assert not any(rid in p for rid in gpqa for p in pushed)  # no file of a GPQA run left the machine
    assert "PUT /lfs-upload/" in " ".join(hub.requests)  # the Parquet went through LFS, as on the Hub
    assert HfApi(endpoint=hub.url, token=SENTINEL).dataset_info(REPO).private is True

    # the card names every version the release stands on, and how to load it
    card = fs.cat_file(f"datasets/{REPO}/README.md").decode()
    info = json.loads(store.read_bytes(f"leaderboards/pub/{release_id}/release.json"))
    for value in (info["board_version"], release_id, info["helmflow_version"], GPQA_REV):
        assert value in card, value
    for r in runs:
        for name in ("scenario_version", "prompt_version", "model_version", "metric_version"):
            assert r["versions"][name] in card, (r["run_id"], name)
        assert r["run_id"] in card
    assert "- gpqa: scenario gpqa:" in card
    board = _load_dataset(hub, tmp_path)
    lines = {row["deployment"]: row for row in store.read_parquet(f"leaderboards/pub/{release_id}/leaderboard.parquet")
             .to_pylist()}
    assert {row["deployment"]: (row["add"], row["add ci_low"], row["gpqa"]) for row in board} == {
        d: (row["add"], row["add ci_low"], row["gpqa"]) for d, row in lines.items()}

    # the same release again: paths compared, nothing sent, no commit
    before = len(hub.requests)
    again = _publish(store, hub, tmp_path, debug=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing uploaded" in again.stdout, again.stdout
    sent = hub.requests[before:]
    assert not [r for r in sent if r.startswith("PUT") or "/commit/" in r or "/preupload/" in r], sent
    assert len(hub.commits[f"datasets/{REPO}"]) == 1

    # the planted token: sent only as the Authorization header, never in output, the store or the repository
    assert SENTINEL not in out.stdout + out.stderr + again.stdout + again.stderr
    assert f"Bearer {SENTINEL}" in hub.authorizations
    for where in (Path(store.root), hub.root / REPO):
        leaks = [k for k, data in _files_under(where).items() if SENTINEL.encode() in data]
        assert not leaks, leaks


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2_before_anything_is_sent(release, hub, tmp_path: Path, capsys):
    from helmflow.cli import main

    store, _ = release
    before = len(hub.requests)
    for repo, said in (("results", "give the Hub dataset repository as ORG/NAME"), ("acme/a/b", "ORG/NAME"),
                       ("acme/re--sults", "no '--'"), ("-acme/results", "ORG/NAME")):
        assert main(["publish", "hf", "pub", f"--repo={repo}", "--storage", store.root]) == 2, repo
        err = capsys.readouterr()
        assert err.out == "" and len(err.err.strip().splitlines()) == 1 and said in err.err, (repo, err.err)
    out = _publish(store, hub, tmp_path, token=None)  # no HF_TOKEN and no saved login (a fresh HF_HOME)
    assert out.returncode == 2 and out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "needs a Hugging Face token" in out.stderr and "nothing was uploaded" in out.stderr
    assert hub.requests[before:] == []  # nothing reached the Hub

    # a token the Hub refuses: one line, exit 2, the token masked, nothing uploaded
    out = _publish(store, hub, tmp_path, token="hf_wrongSENTINELsecret", repo="acme/other")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "refused the token" in out.stderr and "nothing was uploaded" in out.stderr
    assert "hf_wrongSENTINELsecret" not in out.stdout + out.stderr
    assert not (hub.root / "acme" / "other").exists()
    assert not [r for r in hub.requests[before:] if r.startswith("PUT") or "/commit/" in r]


@pytest.mark.slow
def test_model_results_open_a_pull_request_in_the_hubs_format_once(release, hub, tmp_path: Path):
    """A deployment whose model is a Hub repository gets its scores proposed to that repository."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    store, release_id = release
    hub.add_model_repo("acme/tiny-solver")
    bad = _publish(store, hub, tmp_path, "--hub-model", "offline/nobody=acme/tiny-solver", repo="acme/model-results")
    assert bad.returncode == 2 and "has no deployment 'offline/nobody'" in bad.stderr, bad.stderr
    out = _publish(store, hub, tmp_path, "--hub-model", "offline/solver=acme/tiny-solver", repo="acme/model-results")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"model results for acme/tiny-solver: pull request {hub.url}/acme/tiny-solver/discussions/1" in out.stdout
    [pull] = hub.pulls["models/acme/tiny-solver"]
    [(path, data)] = pull.items()
    assert path == ".eval_results/helmflow-pub.yaml"
    entries = {e.task_id: e for e in parse_eval_result_entries(yaml.safe_load(data))}
    runs = [json.loads(store.read_bytes(f"runs/{rid}/run.json")) for rid in
            json.loads(store.read_bytes(f"leaderboards/pub/{release_id}/release.json"))["run_ids"]]
    scores = {r["scenario"]["label"]: r for r in runs if r["deployment"]["name"] == "offline/solver"}
    assert set(entries) == {"add", "gpqa"}
    for label, e in entries.items():
        assert e.value == pytest.approx(scores[label]["score"])
        assert scores[label]["run_id"] in (e.notes or "")
    assert (entries["gpqa"].dataset_id, entries["gpqa"].dataset_revision) == ("Idavidrein/gpqa", GPQA_REV)
    assert entries["add"].dataset_id == "acme/model-results"  # no Hub dataset behind it: the results stand in
    assert not (hub.root / ".models" / "acme" / "tiny-solver" / "main" / ".eval_results").exists()  # a proposal only
    # the copy kept in the results repository is what makes the next publish open no second pull request
    assert (hub.root / "acme" / "model-results" / "main" / "model-results" / "acme" / "tiny-solver.yaml").read_bytes() \
        == data

    again = _publish(store, hub, tmp_path, "--hub-model", "offline/solver=acme/tiny-solver", repo="acme/model-results")
    assert again.returncode == 0 and "nothing uploaded" in again.stdout, again.stdout + again.stderr
    assert "pull request" not in again.stdout and len(hub.pulls["models/acme/tiny-solver"]) == 1


@pytest.mark.parametrize("planted", ["run parquet", "run.json", "release parquet"])
@pytest.mark.slow
def test_a_file_changed_after_the_release_is_refused_before_anything_is_uploaded(release, hub, tmp_path: Path,
                                                                                   planted: str):
    """A file whose bytes differ from the sha256 the release (or its run's run.json) recorded: one line naming it,
    exit 2, and not one request reaches the Hub."""
    import shutil

    store, release_id = release
    copy = Store(str(tmp_path / "store"))
    shutil.copytree(store.root, copy.root)
    info = json.loads(copy.read_bytes(f"leaderboards/pub/{release_id}/release.json"))
    runs = [json.loads(copy.read_bytes(f"runs/{rid}/run.json")) for rid in info["run_ids"]]
    [kept] = [r for r in runs if r["scenario"]["name"] != "gpqa" and r["deployment"]["name"] == "offline/solver"]
    if planted == "run parquet":
        key = f"runs/{kept['run_id']}/stats.parquet"
    elif planted == "run.json":  # the run.json rewritten to match a changed file: the release's own record disagrees
        key = f"runs/{kept['run_id']}/run.json"
    else:
        key = f"leaderboards/pub/{release_id}/leaderboard.parquet"
    path = Path(copy.root, key)
    data = bytearray(path.read_bytes())
    if planted == "run.json":
        manifest = json.loads(data)
        manifest["score"] = 1.0 - (manifest["score"] or 0.0)
        data = bytearray(json.dumps(manifest).encode())
    else:
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    before = len(hub.requests)
    out = _publish(copy, hub, tmp_path, repo="acme/corrupt")
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "corrupt" in out.stderr and key.rsplit("/", 1)[-1] in out.stderr and "nothing was uploaded" in out.stderr
    assert hub.requests[before:] == []  # not even the repository was created
    assert not (hub.root / "acme" / "corrupt").exists()
