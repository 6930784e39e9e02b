"""Releases logged to experiment trackers: each release of a board becomes one MLflow run.

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
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from helmflow import layout
from helmflow.errors import HelmflowError, install_command
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.plan.spec import MlflowTracking, TrackingSpec
from helmflow.storage import Store, safe_key

KINDS = ("mlflow",)
RELEASE_TAG = "helmflow.release_id"
REPORT_TAG = "helmflow.report"
BATCH = 100  # MLflow takes at most 100 params and 1,000 metrics per log_batch call
_KEY_BANNED = re.compile(r"[^\w\-. :/]")  # MLflow's key alphabet: alphanumerics, _ - . space : /


def parse_target(value: str) -> MlflowTracking:
    """``mlflow:URI`` (``--track``) as a target; bad input is one line, before any work."""
    kind, sep, uri = value.partition(":")
    if not sep or kind not in KINDS or not uri:
        raise HelmflowError(f"--track {value!r}: give mlflow:URI (e.g. mlflow:http://127.0.0.1:5000)")
    return MlflowTracking(uri=uri)


def targets(given: list[str], spec: TrackingSpec | None) -> list[MlflowTracking]:
    """``--track`` targets, else the board's ``tracking``."""
    if given:
        return [parse_target(v) for v in given]
    return [spec.mlflow] if spec and spec.mlflow else []


def check_installed() -> None:
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise HelmflowError("tracking releases in MLflow needs the mlflow extra: "
                            f"{install_command('mlflow')}") from None


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
    uri: str
    experiment: str
    run_id: str
    created: bool
    metrics: int = 0
    params: int = 0
    artifacts: int = 0


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
    if not tracked.created:
        added = f": its report added ({tracked.artifacts} artifacts)" if tracked.artifacts else ": nothing logged"
        return (f"tracked   {board} {release_id} is already MLflow run {tracked.run_id} in experiment "
                f"{tracked.experiment!r} at {tracked.uri}{added}")
    return (f"tracked   {board} {release_id} as MLflow run {tracked.run_id} in experiment {tracked.experiment!r} "
            f"at {tracked.uri}: {tracked.params} params, {tracked.metrics} metrics, {tracked.artifacts} artifacts")


def track_in_flow(store: Store, board: str, release_id: str, spec: TrackingSpec | None, log) -> None:
    """A board's ``tracking:`` in a flow run no ``helmflow run`` started: the release logged without its
    static report (``helmflow track`` adds it). A tracker that fails is a warning: the release stands."""
    if spec is None or spec.mlflow is None:
        return
    try:
        tracked = track_release(store, board, release_id, spec.mlflow)
        log.info("%s", describe(tracked, board, release_id))
    except Exception as exc:  # noqa: BLE001 - said once, the release is published
        log.warning("tracking: release %s was not logged to MLflow at %s: %s: %s (helmflow track %s --to "
                    "mlflow:URI logs it later)", release_id, shown(spec.mlflow.uri), type(exc).__name__,
                    " ".join(str(exc).split())[:300], board)


def track_release(store: Store, board: str, release: str | None, target: MlflowTracking, report=None) -> Tracked:
    from helmflow.bundle import pick_release, release_runs

    info = pick_release(store, board, release)
    return track_mlflow(store, info, release_runs(store, info), target, report)
