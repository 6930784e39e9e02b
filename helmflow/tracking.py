"""Releases logged to experiment trackers: each release of a board becomes one MLflow run, or one Weights &
Biases run in W&B's offline mode.

``helmflow run --track mlflow:URI`` (or a board's ``tracking: {mlflow: {uri, experiment}}``) logs the
release the run published, and ``helmflow track <board> --to mlflow:URI`` logs a published one. The
MLflow run (named ``<board> <release id>``, in the experiment named by the board's ``tracking`` or after
the board) holds:

- params: the release (board, board version, declared version, release id, status, helmflow version,
  git commit) and each cell's versions, ``<scenario>/<deployment>/<run_id|scenario_version|…>``;
- metrics: every numeric leaderboard cell, ``<deployment>/<column>``, so a cell's interval is logged beside
  it as ``<deployment>/<column> ci_low`` and ``… ci_high``;
- artifacts: leaderboard.parquet, runs.parquet and release.json under ``release/``, and the release's
  static web report (written as ``helmflow report`` writes it) under ``report/``;
- tags: ``helmflow.board``, ``helmflow.release_id``, ``helmflow.status``, and ``helmflow.report``
  (``logged``, or ``missing`` when no report writer was given).

A release already logged (a finished MLflow run tagged with its release id) is not logged again; when that
run's report is missing and a report writer is given, the report is added to it. A board's flow run
that no ``helmflow run`` started (a deployment's nightly refresh, a retry) logs its release itself, without
the report (:func:`track_in_flow`: the static report is the web layer's, above the flows).
Credentials stay MLflow's (``MLFLOW_TRACKING_TOKEN``, ``MLFLOW_TRACKING_USERNAME``/``PASSWORD``); a URI is
printed without any user:password it holds.

``--track wandb:PROJECT[:DIR]`` (or ``tracking: {wandb: {project, dir}}``) logs the same release through the
same interface as a W&B run written offline (``WANDB_MODE=offline``, set here: no request leaves the machine,
no API key is read) under ``DIR/wandb/offline-run-<stamp>-<id>/``, which ``wandb sync`` uploads later. Its
config holds the params above, its summary (and one history step) the metrics, and two artifacts the files:
``<board>-release`` (``release/``) and ``<board>-report`` (``report/``), each aliased with the release id.
The run id is derived from the project, board and release, so a release is one W&B run wherever it is
synced; ``DIR/wandb/helmflow/<id>.json``, written once the run is finished, is what says it is logged. A
run logged by a flow run has no report; ``helmflow track`` then logs the report artifact in a second,
report-only run (``<id>-report``, job type ``helmflow-report``) of the same group.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from helmflow import layout
from helmflow.errors import HelmflowError, install_command
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.plan.spec import MlflowTracking, TrackingSpec, WandbTracking
from helmflow.storage import Store, safe_key

KINDS = ("mlflow", "wandb")
Target = MlflowTracking | WandbTracking
RELEASE_TAG = "helmflow.release_id"
REPORT_TAG = "helmflow.report"
BATCH = 100  # MLflow takes at most 100 params and 1,000 metrics per log_batch call
_KEY_BANNED = re.compile(r"[^\w\-. :/]")  # MLflow's key alphabet: alphanumerics, _ - . space : /


def parse_target(value: str) -> Target:
    """``mlflow:URI`` or ``wandb:PROJECT[:DIR]`` (``--track``, ``track --to``) as a target; bad input is one
    line, before any work."""
    kind, sep, rest = value.partition(":")
    if sep and kind == "mlflow" and rest:
        return MlflowTracking(uri=rest)
    if sep and kind == "wandb" and rest:
        project, _, folder = rest.partition(":")
        try:
            return WandbTracking(project=project, dir=folder or None)
        except ValueError as exc:
            why = str(exc.errors()[0]["msg"]).removeprefix("Value error, ") if hasattr(exc, "errors") else str(exc)
            raise HelmflowError(f"--track {value!r}: {why}") from None
    raise HelmflowError(f"--track {value!r}: give mlflow:URI (e.g. mlflow:http://127.0.0.1:5000) or "
                        "wandb:PROJECT[:DIR] (an offline W&B run under DIR, default the current directory)")


def targets(given: list[str], spec: TrackingSpec | None) -> list[Target]:
    """``--track`` targets, else the board's ``tracking``."""
    if given:
        return [parse_target(v) for v in given]
    if spec is None:
        return []
    return [t for t in (spec.mlflow, spec.wandb) if t is not None]


def check_installed(chosen: list[Target] | None = None) -> None:
    """The extra each target needs (MLflow's when none is given)."""
    for target in chosen if chosen is not None else [MlflowTracking(uri="-")]:
        module, extra, name = ("wandb", "wandb", "W&B") if isinstance(target, WandbTracking) else \
            ("mlflow", "mlflow", "MLflow")
        try:
            __import__(module)
        except ImportError:
            raise HelmflowError(f"tracking releases in {name} needs the {extra} extra: "
                                f"{install_command(extra)}") from None


def where(target: Target) -> str:
    """The tracker, as a line says it (no credentials)."""
    if isinstance(target, WandbTracking):
        return f"W&B project {target.project!r} in {wandb_root(target)}"
    return f"MLflow at {shown(target.uri)}"


def spelled(target: Target) -> str:
    """The target as ``--to`` takes it."""
    if isinstance(target, WandbTracking):
        return f"wandb:{target.project}" + (f":{target.dir}" if target.dir else "")
    return "mlflow:URI"


def shown(uri: str) -> str:
    """The URI without a user:password it may hold."""
    parts = urlsplit(uri)
    if parts.username or parts.password:
        host = parts.hostname or ""
        return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))
    return uri


def key(name: str) -> str:
    return _KEY_BANNED.sub("_", name)[:250]


@dataclass
class Tracked:
    uri: str  # MLflow: the tracking URI; W&B: the offline run's folder
    experiment: str  # MLflow: the experiment; W&B: the project
    run_id: str
    created: bool
    metrics: int = 0
    params: int = 0
    artifacts: int = 0
    kind: str = "mlflow"


def _params(info: ReleaseManifest, runs: list[RunManifest]) -> dict[str, str]:
    out = {"board": info.board, "board_version": info.board_version, "declared_version": info.declared_version,
           "release_id": info.release_id, "status": info.status, "helmflow_version": info.helmflow_version,
           "git_commit": info.git_commit or "", "subset": str(info.subset).lower()}
    for m in runs:
        cell = f"{m.scenario.label}/{m.deployment.name}"
        for name, value in m.versions.model_dump().items():
            out[f"{cell}/{name}"] = value
        out[f"{cell}/main_metric"] = m.main_metric
    return {key(k): str(v)[:6000] for k, v in out.items()}


def _metrics(store: Store, info: ReleaseManifest) -> dict[str, float]:
    name = safe_key(info.board)
    rows = store.read_parquet(layout.release_file(name, info.release_id, "leaderboard.parquet")).to_pylist()
    out = {}
    for row in rows:
        for column, value in row.items():
            if column == "deployment" or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if math.isfinite(value):
                out[key(f"{row['deployment']}/{column}")] = float(value)
    return out


def _artifacts(store: Store, info: ReleaseManifest, folder: Path, report) -> None:
    name = safe_key(info.board)
    release = folder / "release"
    release.mkdir()
    for file in (*sorted(info.sha256), layout.RELEASE_JSON):
        (release / file).write_bytes(store.read_bytes(layout.release_file(name, info.release_id, file)))
    if report is not None:
        _report(store, info, folder, report)


def _report(store: Store, info: ReleaseManifest, folder: Path, report) -> None:
    name = safe_key(info.board)
    report(store, name, info.release_id)
    prefix = layout.report_dir(name, info.release_id)
    for k in store.find(prefix):
        target = folder / "report" / k[len(prefix) + 1:]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(store.read_bytes(k))


def track_mlflow(store: Store, info: ReleaseManifest, runs: list[RunManifest], target: MlflowTracking,
                 report=None) -> Tracked:
    """Log the release as one MLflow run (nothing when a finished run already holds it). ``report``
    writes the release's static report into the store (:func:`helmflow.web.export.export_report`)."""
    check_installed()
    import os

    # a tracker that is down fails the logging in seconds, not after MLflow's minutes of retries
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=target.uri)
    experiment = target.experiment or info.board
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    done = client.search_runs([experiment_id], filter_string=f"tags.`{RELEASE_TAG}` = '{info.release_id}' "
                                                             f"and attributes.status = 'FINISHED'", max_results=1)
    if done:
        found_run = done[0]
        if report is not None and found_run.data.tags.get(REPORT_TAG) == "missing":  # logged from a flow run
            with tempfile.TemporaryDirectory(prefix="helmflow-track-") as tmp:
                _report(store, info, Path(tmp), report)
                client.log_artifacts(found_run.info.run_id, tmp)
                count = sum(1 for p in Path(tmp).rglob("*") if p.is_file())
            client.set_tag(found_run.info.run_id, REPORT_TAG, "logged")
            return Tracked(shown(target.uri), experiment, found_run.info.run_id, created=False, artifacts=count)
        return Tracked(shown(target.uri), experiment, found_run.info.run_id, created=False)
    run = client.create_run(experiment_id, run_name=f"{info.board} {info.release_id}",
                            tags={"helmflow.board": info.board, RELEASE_TAG: info.release_id,
                                  "helmflow.status": info.status, "mlflow.source.name": "helmflow",
                                  REPORT_TAG: "missing" if report is None else "logged"})
    rid = run.info.run_id
    try:
        params = _params(info, runs)
        metrics = _metrics(store, info)
        stamp = int(run.info.start_time)
        items = list(params.items())
        for i in range(0, len(items), BATCH):
            client.log_batch(rid, params=[Param(k, v) for k, v in items[i:i + BATCH]])
        values = list(metrics.items())
        for i in range(0, len(values), 10 * BATCH):
            client.log_batch(rid, metrics=[Metric(k, v, stamp, 0) for k, v in values[i:i + 10 * BATCH]])
        client.log_batch(rid, tags=[RunTag("helmflow.failed_cells", json.dumps(len(info.failed)))])
        with tempfile.TemporaryDirectory(prefix="helmflow-track-") as tmp:
            _artifacts(store, info, Path(tmp), report)
            count = sum(1 for p in Path(tmp).rglob("*") if p.is_file())
            client.log_artifacts(rid, tmp)
    except BaseException:
        client.set_terminated(rid, "FAILED")  # not counted as logged: the next attempt logs it again
        raise
    client.set_terminated(rid, "FINISHED")
    return Tracked(shown(target.uri), experiment, rid, created=True, metrics=len(metrics), params=len(params),
                   artifacts=count)


def describe(tracked: Tracked, board: str, release_id: str) -> str:
    """The one line ``helmflow run``, ``helmflow track`` and a flow run's log say after logging."""
    if tracked.kind == "wandb":
        if not tracked.created:
            added = (f": its report added ({tracked.artifacts} artifact files)" if tracked.artifacts else
                     ": nothing logged")
            return (f"tracked   {board} {release_id} is already W&B offline run {tracked.run_id} in project "
                    f"{tracked.experiment!r} at {tracked.uri}{added}")
        return (f"tracked   {board} {release_id} as W&B offline run {tracked.run_id} in project {tracked.experiment!r} "
                f"at {tracked.uri}: {tracked.params} config values, {tracked.metrics} metrics, {tracked.artifacts} "
                f"artifact files (`wandb sync {tracked.uri}` uploads it)")
    if not tracked.created:
        added = f": its report added ({tracked.artifacts} artifacts)" if tracked.artifacts else ": nothing logged"
        return (f"tracked   {board} {release_id} is already MLflow run {tracked.run_id} in experiment "
                f"{tracked.experiment!r} at {tracked.uri}{added}")
    return (f"tracked   {board} {release_id} as MLflow run {tracked.run_id} in experiment {tracked.experiment!r} "
            f"at {tracked.uri}: {tracked.params} params, {tracked.metrics} metrics, {tracked.artifacts} artifacts")


def track_in_flow(store: Store, board: str, release_id: str, spec: TrackingSpec | None, log) -> None:
    """A board's ``tracking:`` in a flow run no ``helmflow run`` started: the release logged without its
    static report (``helmflow track`` adds it). A tracker that fails is a warning: the release stands."""
    for target in targets([], spec):
        try:
            tracked = track_release(store, board, release_id, target)
            log.info("%s", describe(tracked, board, release_id))
        except Exception as exc:  # noqa: BLE001 - said once, the release is published
            log.warning("tracking: release %s was not logged to %s: %s: %s (helmflow track %s --to %s logs it "
                        "later)", release_id, where(target), type(exc).__name__, " ".join(str(exc).split())[:300],
                        board, spelled(target))


def track_release(store: Store, board: str, release: str | None, target: Target, report=None) -> Tracked:
    from helmflow.bundle import pick_release, release_runs

    info = pick_release(store, board, release)
    runs = release_runs(store, info)
    if isinstance(target, WandbTracking):
        return track_wandb(store, info, runs, target, report)
    return track_mlflow(store, info, runs, target, report)


# --- Weights & Biases, offline -------------------------------------------------------------------------------

_WANDB_ID_BANNED = re.compile(r"[^A-Za-z0-9_-]")  # W&B run ids: letters, digits, '-' and '_'
_ARTIFACT_BANNED = re.compile(r"[^A-Za-z0-9_.-]")  # artifact names and aliases: also '.'


def wandb_root(target: WandbTracking) -> Path:
    """The folder wandb writes ``wandb/`` into."""
    return Path(target.dir or ".").expanduser().resolve()


def wandb_run_id(project: str, board: str, release_id: str) -> str:
    """The release's W&B run id: readable, and distinct per project, board and release (64 characters at most)."""
    digest = hashlib.sha256(f"{project}\0{board}\0{release_id}".encode()).hexdigest()[:8]
    return f"{_WANDB_ID_BANNED.sub('-', f'{board}-{release_id}')[:48]}-{digest}"


def _marker(root: Path, run_id: str) -> Path:
    return root / "wandb" / "helmflow" / f"{run_id}.json"


def _write_marker(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _wandb_settings(wandb):
    """Offline, quiet, and collecting nothing about the machine: the run holds the release only."""
    return wandb.Settings(mode="offline", silent=True, console="off", x_disable_stats=True, x_disable_meta=True,
                          x_disable_machine_info=True, disable_git=True, save_code=False, x_save_requirements=False)


def _offline() -> None:
    """W&B's offline mode for this process: helmflow's W&B target never sends a request, and reads no key."""
    os.environ["WANDB_MODE"] = "offline"
    os.environ.setdefault("WANDB_SILENT", "true")


def _log_folder(wandb, run, folder: Path, name: str, kind: str, info: ReleaseManifest) -> int:
    """``folder`` (inside the offline run's own folder, so ``wandb sync`` finds it) as one artifact."""
    artifact = wandb.Artifact(_ARTIFACT_BANNED.sub("-", name)[:128], type=kind,
                              metadata={"board": info.board, "release_id": info.release_id,
                                        "board_version": info.board_version, "status": info.status,
                                        "sha256": dict(info.sha256)})
    artifact.add_dir(str(folder), name=folder.name, policy="immutable")
    run.log_artifact(artifact, aliases=[_ARTIFACT_BANNED.sub("-", info.release_id), "latest"])
    return sum(1 for p in folder.rglob("*") if p.is_file())


def _wandb_run(wandb, target: WandbTracking, root: Path, run_id: str, info: ReleaseManifest, job_type: str,
               config: dict, log) -> tuple[str, int]:
    """One offline run; ``log(run, files folder)`` fills it and says how many artifact files it logged. A run
    that fails is removed, so ``wandb sync`` never uploads half a release."""
    run = wandb.init(project=target.project, dir=str(root), id=run_id, name=f"{info.board} {info.release_id}",
                     group=info.board, job_type=job_type, tags=["helmflow", info.status], config=config,
                     settings=_wandb_settings(wandb), reinit="create_new")
    folder = Path(run.settings.sync_dir)
    try:
        count = log(run, folder / "helmflow")
    except BaseException:
        run.finish(exit_code=1)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    run.finish()
    return str(folder), count


def track_wandb(store: Store, info: ReleaseManifest, runs: list[RunManifest], target: WandbTracking,
                report=None) -> Tracked:
    """Log the release as one offline W&B run (nothing when one already holds it; only the report, in a
    report-only run, when a flow run logged it without one and ``report`` is given)."""
    check_installed([target])
    _offline()
    import wandb

    root = wandb_root(target)
    root.mkdir(parents=True, exist_ok=True)
    run_id = wandb_run_id(target.project, info.board, info.release_id)
    marker = _marker(root, run_id)
    base = {"board": info.board, "release_id": info.release_id}
    if marker.exists():
        done = json.loads(marker.read_text())
        if report is None or done.get("report") != "missing":
            return Tracked(done.get("run_dir", str(root)), target.project, run_id, created=False, kind="wandb")

        def add_report(run, files: Path) -> int:
            _report(store, info, files, report)
            return _log_folder(wandb, run, files / "report", f"{info.board}-report", "helmflow-report", info)

        report_dir, count = _wandb_run(wandb, target, root, f"{run_id}-report", info, "helmflow-report", base,
                                       add_report)
        _write_marker(marker, {**done, "report": "logged", "report_run_dir": report_dir})
        return Tracked(done.get("run_dir", str(root)), target.project, run_id, created=False, artifacts=count,
                       kind="wandb")
    params = _params(info, runs)
    metrics = _metrics(store, info)
    config = {**params, "failed_cells": len(info.failed), "report": "missing" if report is None else "logged"}

    def fill(run, files: Path) -> int:
        run.log(metrics, step=0)
        files.mkdir(parents=True)
        _artifacts(store, info, files, report)
        count = _log_folder(wandb, run, files / "release", f"{info.board}-release", "helmflow-release", info)
        if report is not None:
            count += _log_folder(wandb, run, files / "report", f"{info.board}-report", "helmflow-report", info)
        return count

    run_dir, count = _wandb_run(wandb, target, root, run_id, info, "helmflow-release", config, fill)
    _write_marker(marker, {**base, "project": target.project, "run_id": run_id, "run_dir": run_dir,
                           "report": "missing" if report is None else "logged"})
    return Tracked(run_dir, target.project, run_id, created=True, metrics=len(metrics), params=len(config),
                   artifacts=count, kind="wandb")
