"""A release pushed to a Hugging Face Hub dataset repository (``helmflow publish hf``), with huggingface_hub.

The repository receives, under the keys the storage root uses (:mod:`helmflow.layout`):

- ``leaderboards/<board>/<release>/leaderboard.parquet``, ``runs.parquet`` and ``release.json``;
- ``runs/<run_id>/`` of every run of the release: its Parquet files and run.json, the same bytes
  (checked against the sha256 the release and each run.json record, each run.json against the release's
  runs.parquet, as they are copied for the upload: before anything is sent);
- ``README.md``: a dataset card made from the release (board, models, every version, data pins,
  intervals) whose ``configs`` let ``datasets.load_dataset(repo, "leaderboard")`` read it;
- with model results, ``model-results/<model id>.yaml``: for each deployment whose model is a Hub
  repository (client ``huggingface``, or one named with ``--hub-model``), its scores in the Hub's
  ``.eval_results`` format, and a pull request on that model repository adding them as
  ``.eval_results/helmflow-<board>.yaml``.

Runs of a scenario whose rows may not be redistributed (``publish_text = False``, a credential-gated
source, or ``Scenario.gated``) are never pushed: their files stay behind, each named in
:attr:`Pushed.refused`; the leaderboard keeps their scores, as HELM's does.

Files already in the repository with the same content are not sent (their git or LFS oids, from the
Hub's paths-info, are compared first), so republishing a release uploads nothing and makes no commit.

The token is huggingface_hub's (``HF_TOKEN``, or the one ``hf auth login`` saved); it is never printed,
and any message from the Hub is shown with it masked.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.storage import Store, safe_key

# the Hub's rule for a repository id, as huggingface_hub checks it (validate_repo_id), with the namespace required
_NAME = r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"^{_NAME}/{_NAME}$")
CARD = "README.md"
MODEL_RESULTS = "model-results"
#: client kinds whose ``model`` is a Hub model repository id
HUB_MODEL_CLIENTS = ("huggingface",)


class PublishError(HelmflowError):
    """The Hub refused or failed a request after the input was checked (exit 1)."""

    exit_code = 1


def check_repo_id(repo: str) -> str:
    if not REPO_ID.fullmatch(repo) or "--" in repo or ".." in repo or repo.endswith(".git"):
        raise HelmflowError(f"--repo {repo!r}: give the Hub dataset repository as ORG/NAME (letters, digits, "
                            "'-', '_', '.'; at most 96 characters each; no '--' or '..')")
    return repo


def hub_token() -> str:
    """huggingface_hub's token (``HF_TOKEN``, else the saved login); none is bad input."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise HelmflowError("publish hf needs a Hugging Face token with write access to the repository: export "
                            "HF_TOKEN=... (or run `hf auth login`); nothing was uploaded")
    return token


def masked(text: str, token: str) -> str:
    """``text`` on one line, with the token (and any Authorization value) masked."""
    text = text.replace(token, "***") if token else text
    text = re.sub(r"(?i)(bearer\s+)\S+", r"\1***", text)
    return " ".join(text.split())[:400]


def gated_reason(manifest: RunManifest) -> str | None:
    """Why this run's rows may not be pushed, or None."""
    from helmflow.scenarios import SCENARIOS

    name = manifest.scenario.name
    if name not in SCENARIOS:
        return None
    cls = SCENARIOS.get(name)
    if not cls.publish_text:
        return "its dataset asks that its questions are never published"
    if cls.gated:
        return cls.gated
    try:
        sources = cls(**manifest.scenario.params).sources()
    except Exception:  # noqa: BLE001 - a scenario that cannot list its sources here is not known to be gated
        return None
    for source in sources:
        if source.gated:
            return f"{source.filename} is credential-gated ({source.gated})"
    return None


def hub_dataset(manifest: RunManifest) -> tuple[str, str] | None:
    """The Hub dataset (repo id, revision) the run's scenario reads, when it reads one."""
    from helmflow.scenarios import SCENARIOS

    if manifest.scenario.name not in SCENARIOS:
        return None
    try:
        sources = SCENARIOS.get(manifest.scenario.name)(**manifest.scenario.params).sources()
    except Exception:  # noqa: BLE001 - not known: the results repository stands in as the dataset
        return None
    for source in sources:
        found = re.match(r"^hf://datasets/([^/@]+/[^/@]+)@([^/]+)/", source.url)
        if found:
            return found[1], found[2]
    return None


def hub_model(manifest: RunManifest, given: dict[str, str] | None = None) -> str | None:
    """The Hub model repository behind the run's deployment: the one given for it (``--hub-model``), else its
    model when the client kind loads Hub checkpoints and the model is a repository id, not a local folder."""
    d = manifest.deployment
    if given and d.name in given:
        return given[d.name]
    if d.client in HUB_MODEL_CLIENTS and REPO_ID.fullmatch(d.model) and not Path(d.model).exists():
        return d.model
    return None


@dataclass
class Pushed:
    repo: str
    url: str
    board: str
    release_id: str
    files: int = 0  # files the release puts in the repository
    uploaded: list[str] = field(default_factory=list)  # of them, the ones sent (new or changed)
    commit: str | None = None  # the commit made, None when nothing changed
    refused: dict[str, str] = field(default_factory=dict)  # scenario label -> why its runs were not pushed
    pulls: dict[str, str] = field(default_factory=dict)  # model id -> the pull request opened with its results


def _number(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.4g}"


def dataset_card(repo: str, info: ReleaseManifest, runs: list[RunManifest], rows: list[dict[str, Any]],
                 refused: dict[str, str]) -> str:
    """The README.md of the repository: what the release is, every version it stands on, how to load it."""
    import yaml

    prefix = layout.release_dir(safe_key(info.board), info.release_id)
    meta = {
        "pretty_name": f"helmflow {info.board} leaderboard",
        "tags": ["helmflow", "evaluation", "leaderboard", "helm"],
        "configs": [
            {"config_name": "leaderboard", "data_files": f"{prefix}/leaderboard.parquet", "default": True},
            {"config_name": "runs", "data_files": f"{prefix}/runs.parquet"},
        ],
    }
    out = ["---", yaml.safe_dump(meta, sort_keys=False).rstrip(), "---", "",
           f"# {info.board}: helmflow release {info.release_id}", "",
           f"Evaluation results of the helmflow board `{info.board}`, release `{info.release_id}` "
           f"({info.status}), published {info.created_at}.", "",
           "| | |", "|---|---|",
           f"| board version | `{info.board_version}`" + (f" (declared {info.declared_version})" if
                                                           info.declared_version else "") + " |",
           f"| release | `{info.release_id}` ({info.status}, {len(info.run_ids)} runs, {len(info.failed)} failed) |",
           f"| helmflow | {info.helmflow_version}" + (f", git commit `{info.git_commit}`" if info.git_commit else "")
           + " |", ""]
    labels = info.scenarios or sorted({m.scenario.label for m in runs})
    out += ["## Leaderboard", "", "Each scenario's main metric, with its 95% bootstrap interval.", "",
            "| model | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for row in rows:
        cells = []
        for label in labels:
            value, low, high = row.get(label), row.get(f"{label} ci_low"), row.get(f"{label} ci_high")
            interval = f" [{_number(low)}, {_number(high)}]" if _number(low) and _number(high) else ""
            cells.append(_number(value) + interval)
        out.append(f"| {row.get('deployment', '')} | " + " | ".join(cells) + " |")
    out += ["", "## Models", "", "| deployment | client | model | revision | model_version |",
            "|---|---|---|---|---|"]
    seen: dict[str, RunManifest] = {}
    for m in runs:
        seen.setdefault(m.deployment.name, m)
    for name, m in seen.items():
        d = m.deployment
        out.append(f"| {name} | {d.client} | {d.model} | {d.revision or '-'} | `{m.versions.model_version}` |")
    out += ["", "## Scenarios and versions", "",
            "Every run of the release: what it read (the data pin) and the versions its id is the hash of.", "",
            "| scenario | model | run_id | scenario_version | prompt_version | metric_version | main metric | score "
            "[95% interval] | data revision |", "|---|---|---|---|---|---|---|---|---|"]
    for m in sorted(runs, key=lambda r: (r.scenario.label, r.deployment.name)):
        v = m.versions
        interval = f" [{_number(m.ci[0])}, {_number(m.ci[1])}]" if m.ci[0] is not None else ""
        params = json.dumps(m.scenario.params, sort_keys=True) if m.scenario.params else ""
        out.append(f"| {m.scenario.label} (`{m.scenario.name}` {params}) | {m.deployment.name} | `{m.run_id}` | "
                   f"`{v.scenario_version}` | `{v.prompt_version}` | `{v.metric_version}` | {m.main_metric} | "
                   f"{_number(m.score)}{interval} | `{m.dataset.revision}` |")
    if refused:
        out += ["", "## Not included", "",
                "The leaderboard keeps these scenarios' scores; their runs' rows are not in this repository:", ""]
        out += [f"- {label}: {why}" for label, why in sorted(refused.items())]
    out += ["", "## Loading", "", "```python", "from datasets import load_dataset", "",
            f'leaderboard = load_dataset("{repo}", "leaderboard", split="train")',
            f'runs = load_dataset("{repo}", "runs", split="train")', "```", "",
            "Each run's own Parquet files (requests, completions, stats, summary) are under `runs/<run_id>/`, "
            "beside its `run.json`:", "", "```python", "import pyarrow.parquet as pq",
            "from huggingface_hub import HfFileSystem", "",
            f'stats = pq.read_table("datasets/{repo}/runs/<run_id>/stats.parquet", filesystem=HfFileSystem())',
            "```", "", f"`{prefix}/release.json` lists the release's runs, its status and the sha256 of its files.",
            ""]
    return "\n".join(out)


def parse_hub_models(values: list[str], runs: list[RunManifest]) -> dict[str, str]:
    """``DEPLOYMENT=ORG/NAME`` pairs (``--hub-model``), each naming a deployment of the release."""
    names = {m.deployment.name for m in runs}
    out = {}
    for value in values:
        deployment, sep, model = value.partition("=")
        if not sep or not REPO_ID.fullmatch(model) or "--" in model or ".." in model:
            raise HelmflowError(f"--hub-model {value!r}: give DEPLOYMENT=ORG/NAME (the model's Hub repository)")
        if deployment not in names:
            raise HelmflowError(f"--hub-model {value!r}: the release has no deployment {deployment!r} "
                                f"(it has {', '.join(sorted(names))})")
        out[deployment] = model
    return out


def model_results(repo: str, endpoint: str, info: ReleaseManifest, runs: list[RunManifest],
                  given: dict[str, str] | None = None) -> dict[str, bytes]:
    """Model id -> its ``.eval_results`` YAML (the Hub's format, written by huggingface_hub): each run's
    main score, against the Hub dataset the scenario reads (at its pinned revision), else this repository."""
    import yaml
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    entries: dict[str, list[EvalResultEntry]] = {}
    for m in sorted(runs, key=lambda r: r.scenario.label):
        model = hub_model(m, given)
        if model is None or m.score is None or not math.isfinite(m.score):
            continue
        source = hub_dataset(m)
        interval = f", 95% interval [{_number(m.ci[0])}, {_number(m.ci[1])}]" if m.ci[0] is not None else ""
        entries.setdefault(model, []).append(EvalResultEntry(
            dataset_id=source[0] if source else repo, task_id=m.scenario.label, value=round(m.score, 6),
            dataset_revision=source[1] if source else None, date=info.created_at,
            source_url=f"{endpoint}/datasets/{repo}", source_name=f"helmflow {info.board} {info.release_id}",
            notes=f"{m.main_metric}{interval}, run {m.run_id}"))
    return {model: yaml.safe_dump(eval_result_entries_to_yaml(e), sort_keys=False).encode()
            for model, e in entries.items()}


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _unchanged(api: Any, repo: str, files: dict[str, Path], digests: dict[str, str]) -> set[str]:
    """The paths whose content the repository's main branch already holds (``digests``: each file's sha256,
    taken as it was copied; a file the Hub keeps as a git blob is read for its blob id)."""
    out = set()
    paths = sorted(files)
    for i in range(0, len(paths), 100):
        for entry in api.get_paths_info(repo, paths[i:i + 100], repo_type="dataset"):
            local = files.get(entry.path)
            if local is None or getattr(entry, "size", None) != local.stat().st_size:
                continue
            lfs = getattr(entry, "lfs", None)
            same = lfs.sha256 == digests[entry.path] if lfs else entry.blob_id == _git_oid(local.read_bytes())
            if same:
                out.add(entry.path)
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        fa, fb = (float("nan") if v is None else float(v) for v in (a, b))
        return (math.isnan(fa) and math.isnan(fb)) or math.isclose(fa, fb, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


def _check_run_manifests(store: Store, runs_parquet: Path, runs: list[RunManifest], sent: dict[str, Path]) -> None:
    """Each run.json sent says what the release's runs.parquet (checked against its sha256) recorded of that run:
    its main metric, score and interval. A run.json rewritten after the release is refused by name."""
    by_run = {row["run_id"]: row for row in pq.read_table(runs_parquet).to_pylist()}
    for m in runs:
        row = by_run.get(m.run_id)
        if m.run_id not in sent or row is None:
            continue
        mine = RunManifest.model_validate_json(sent[m.run_id].read_bytes())
        said = {"main_metric": mine.main_metric, "score": mine.score, "ci_low": mine.ci[0], "ci_high": mine.ci[1]}
        for column, value in said.items():
            if column in row and not _same(value, row[column]):
                raise HelmflowError(f"{store.url(layout.run_json(m.run_id))} is corrupt: its {column} is {value!r}, "
                                    f"but the release recorded {row[column]!r} for run {m.run_id}; nothing was "
                                    "uploaded")


def publish_release(store: Store, info: ReleaseManifest, runs: list[RunManifest], repo: str, token: str, *,
                    private: bool = False, with_model_results: bool = False,
                    hub_models: dict[str, str] | None = None) -> Pushed:
    """Push the release to the dataset repository ``repo`` (created when missing)."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
    name = safe_key(info.board)
    refused: dict[str, str] = {}
    # each file sent -> the sha256 recorded when it was published (None: run.json, checked against runs.parquet)
    recorded: dict[str, str | None] = {layout.release_file(name, info.release_id, f): info.sha256[f]
                                       for f in sorted(info.sha256)}
    recorded[layout.release_json(name, info.release_id)] = None
    for m in runs:
        why = gated_reason(m)
        if why:
            refused[m.scenario.label] = f"scenario {m.scenario.name}: {why}"
            continue
        recorded.update({layout.run_file(m.run_id, f): digest for f, digest in sorted(m.sha256.items())})
        recorded[layout.run_json(m.run_id)] = None
    api = HfApi(token=token)
    pushed = Pushed(repo=repo, url=f"{api.endpoint}/datasets/{repo}", board=info.board, release_id=info.release_id,
                    refused=refused)
    with tempfile.TemporaryDirectory(prefix="helmflow-publish-") as tmp:
        files: dict[str, Path] = {}
        digests: dict[str, str] = {}
        for key, expected in recorded.items():  # the bytes sent are the bytes checked: one read of each file
            files[key] = Path(tmp, key)
            files[key].parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            size = 0
            try:
                with store.open(key) as src, files[key].open("wb") as dst:
                    while chunk := src.read(8 << 20):
                        digest.update(chunk)
                        size += len(chunk)
                        dst.write(chunk)
            except FileNotFoundError:
                raise HelmflowError(f"{store.url(key)} is missing; nothing was uploaded") from None
            digests[key] = digest.hexdigest()
            if expected is not None and digests[key] != expected:
                raise HelmflowError(f"{store.url(key)} is corrupt: sha256 {digests[key]} ({size} bytes), but "
                                    f"{expected} was recorded when it was published; nothing was uploaded")
        rows = pq.read_table(files[layout.release_file(name, info.release_id, "leaderboard.parquet")]).to_pylist()
        _check_run_manifests(store, files[layout.release_file(name, info.release_id, "runs.parquet")], runs,
                             {m.run_id: files[layout.run_json(m.run_id)] for m in runs if layout.run_json(m.run_id)
                              in files})
        generated = {CARD: dataset_card(repo, info, runs, rows, refused).encode()}
        results = model_results(repo, api.endpoint, info, runs, hub_models) if with_model_results else {}
        generated.update({f"{MODEL_RESULTS}/{model}.yaml": data for model, data in results.items()})
        for path, data in generated.items():
            files[path] = Path(tmp, "generated", path)
            files[path].parent.mkdir(parents=True, exist_ok=True)
            files[path].write_bytes(data)
            digests[path] = hashlib.sha256(data).hexdigest()
        pushed.files = len(files)
        step = "creating the repository"
        try:
            api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
            step = "comparing the repository's files"
            unchanged = _unchanged(api, repo, files, digests)
            changed = [p for p in files if p not in unchanged]
            if changed:
                step = "uploading the release"
                commit = api.create_commit(
                    repo, [CommitOperationAdd(p, str(files[p])) for p in changed], repo_type="dataset",
                    commit_message=f"helmflow {info.board} release {info.release_id}",
                    commit_description=f"{len(changed)} of {len(files)} files of the release, by helmflow publish hf")
                pushed.commit, pushed.uploaded = commit.oid, changed
            for model, data in results.items():  # a pull request only for results not pushed before
                if f"{MODEL_RESULTS}/{model}.yaml" in unchanged:
                    continue
                step = f"opening a pull request on model {model}"
                pr = api.create_commit(
                    model, [CommitOperationAdd(f".eval_results/helmflow-{name}.yaml", data)], create_pr=True,
                    commit_message=f"Evaluation results: helmflow {info.board} {info.release_id}",
                    commit_description=f"Scores of this model on the helmflow board {info.board}, release "
                                       f"{info.release_id}; the runs are in {pushed.url}.")
                pushed.pulls[model] = pr.pr_url or ""
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            text = masked(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, token)
            if status in (401, 403) and not pushed.uploaded:
                raise HelmflowError(f"the Hub refused the token while {step} ({status}): it needs write access to "
                                    f"{repo}; nothing was uploaded") from None
            raise PublishError(f"the Hub failed while {step}: {text}") from None
        except (OSError, ValueError) as exc:  # a Hub that cannot be reached, a malformed answer
            raise PublishError(f"publishing to {repo} failed while {step}: {type(exc).__name__}: "
                               f"{masked(str(exc), token)}") from None
    return pushed
