"""Operating a store: ``lineage`` (where each number came from), ``retry`` (rerun what failed),
``compact`` (clean temporaries left by killed writers and merge journal parts).

``lineage`` and ``compact`` read storage only and never import Prefect; ``retry`` talks to the
Prefect API.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.integrity import CorruptFile, read_manifest, verify_files
from helmflow.manifests import ReleaseManifest, RunManifest, RunVersions
from helmflow.releases import latest_release_id
from helmflow.storage import TMP_PREFIX, OutsideRoot, Store, remove_abandoned_temporary, resolve_root, safe_key


# --------------------------------------------------------------------------- lineage
def release_prefix(store: Store, board: str, release: str | None) -> str:
    name = safe_key(board)
    if release:
        if not store.exists(layout.release_json(name, release)):
            raise HelmflowError(f"board {board!r} has no release {release!r} in {store.root}")
        return layout.release_dir(name, release)
    latest = latest_release_id(store, name)
    if latest:
        return layout.release_dir(name, latest)
    raise HelmflowError(f"board {board!r} has no release in {store.root}")


def cell_lineage(store: Store, board: str, release: str | None = None) -> list[dict[str, Any]]:
    """One record per cell: score → run → versions and dataset revision → Prefect run ids. A run
    whose files fail their sha256 keeps its cell, with ``corrupt`` naming the file."""
    prefix = release_prefix(store, board, release)
    verify_files(store, prefix,
                 ReleaseManifest.model_validate(read_manifest(store, f"{prefix}/{layout.RELEASE_JSON}")).sha256)
    cells = []
    for row in store.read_parquet(f"{prefix}/runs.parquet").to_pylist():
        record: dict[str, Any] = {
            "deployment": row["deployment"],
            "scenario": row["scenario"],
            "status": row["status"],
            "score": row["score"],
            "main_metric": row["main_metric"],
            "run_id": row["run_id"],
        }
        run_key = layout.run_json(row["run_id"])
        if row["status"] != "missing" and store.exists(run_key):
            run = RunManifest.model_validate(read_manifest(store, run_key))
            try:
                verify_files(store, layout.run_dir(row["run_id"]), run.sha256)
            except CorruptFile as exc:
                record["corrupt"] = str(exc)
            record |= {
                "dataset_revision": run.dataset.revision,
                "unverified": run.dataset.unverified,
                **run.versions.model_dump(include=set(RunVersions.model_fields)),
                "flow_run_id": run.lineage.flow_run_id,
                "query_task_run_id": run.lineage.query_task_run_id,
                "score_task_run_id": run.lineage.score_task_run_id,
                "publish_task_run_id": run.lineage.publish_task_run_id,
                "judges": [j.name for j in run.judges.deployments],
                "judge_templates": run.judges.templates,
                "renders": run.renders.model_dump() if run.renders else None,
                "run_uri": store.url(layout.run_dir(row["run_id"])),
                "imported_from": run.imported.source if run.imported else None,
            }
        else:
            record["error"] = row.get("error")
        cells.append(record)
    return cells


TASK_STAGES = ("query", "score", "publish")


def task_run_lines(lineage: dict[str, Any]) -> list[str]:
    """The Prefect task run(s) behind a run: one line when one task queried, scored and published it."""
    ids = {stage: lineage.get(f"{stage}_task_run_id") for stage in TASK_STAGES}
    if len(set(ids.values())) == 1:
        return [f"task run {ids['query']} (query, score and publish)"] if ids["query"] else []
    return [f"{stage} task run {tid}" for stage, tid in ids.items() if tid]


def chosen_cells(cells: list[dict[str, Any]], scenarios: list[str], models: list[str],
                 wanted: list[str]) -> list[dict[str, Any]]:
    """The cells ``--scenario``, ``--model`` and ``--cell`` ask for (all when none is given); a name the
    release does not have is bad input, named with the ones it has."""
    labels = sorted({c["scenario"] for c in cells})
    deployments = sorted({c["deployment"] for c in cells})
    for given, known, what in ((scenarios, labels, "scenario"), (models, deployments, "model")):
        unknown = [g for g in given if g not in known]
        if unknown:
            raise HelmflowError(f"no {what} {', '.join(unknown)} in this release; it has: {', '.join(known)}")
    pairs = set()
    for cell in wanted:
        label, sep, deployment = cell.rpartition(" x ")
        if not sep or label not in labels or deployment not in deployments:
            raise HelmflowError(f"--cell {cell!r}: write it as lineage prints it, 'LABEL x DEPLOYMENT' "
                                f"(scenarios: {', '.join(labels)}; models: {', '.join(deployments)})")
        pairs.add((label, deployment))
    return [c for c in cells
            if (not scenarios or c["scenario"] in scenarios) and (not models or c["deployment"] in models)
            and (not pairs or (c["scenario"], c["deployment"]) in pairs)]


def cmd_lineage(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    store = Store(args.storage)
    console = Console()
    prefix = release_prefix(store, args.board, args.release)
    console.print(f"release {prefix.rsplit('/', 1)[-1]} at {store.url(prefix)}")
    manifest = ReleaseManifest.model_validate(read_manifest(store, f"{prefix}/{layout.RELEASE_JSON}"))
    if manifest.selection:  # the run's selection narrowed the board: say how
        from helmflow.plan.selection import narrowed

        console.print(Text(f"a subset of the board: {narrowed(manifest.selection)}"))
    try:
        cells = cell_lineage(store, args.board, args.release)
    except CorruptFile as exc:
        print(f"helmflow: error: {exc}", file=sys.stderr)
        return 1
    cells = chosen_cells(cells, args.scenario, args.model, args.cell)
    for cell in cells:
        score = "missing" if cell["score"] is None else f"{cell['score']:.4f}"
        tree = Tree(f"[bold]{cell['scenario']} x {cell['deployment']}[/]: "
                    f"{cell['main_metric']} = {score} ({cell['status']})")
        run = tree.add(f"run {cell['run_id']}" + (f" at {cell['run_uri']}" if "run_uri" in cell else ""))
        if "scenario_version" in cell:
            run.add(f"dataset revision {cell['dataset_revision']}")
            for name, why in cell["unverified"].items():
                run.add(Text(f"UNVERIFIED data {name}: {why}", style="yellow"))
            for key in ("scenario_version", "prompt_version", "model_version", "metric_version"):
                run.add(f"{key} {cell[key]}")
            if cell["judges"]:  # part of metric_version: who judged, with which template versions
                templates = ", ".join(f"{name} v{version}" for name, version in cell["judge_templates"].items())
                run.add(f"judged by {', '.join(cell['judges'])} ({templates})")
            if cell.get("renders"):  # part of metric_version too: which renderer versions drew the answers
                drawn = cell["renders"]
                versions = ", ".join(f"{name} v{version}" for name, version in sorted(drawn["renderers"].items()))
                run.add(f"rendered by {versions}: {drawn['rendered']} drawn, {drawn['reused']} read back from the "
                        f"render cache, {drawn['failed']} did not compile ({layout.RUN_RENDERS})")
            if cell["imported_from"]:  # queried and scored by HELM: no Prefect runs behind it
                run.add(f"imported from HELM: {cell['imported_from']}")
            else:
                prefect = run.add(f"Prefect flow run {cell['flow_run_id']}")
                for line in task_run_lines(cell):
                    prefect.add(line)
        else:
            run.add(f"[red]not published: {cell.get('error')}")
        if "corrupt" in cell:
            run.add(Text(cell["corrupt"], style="red"))
        console.print(tree)
    return 1 if any("corrupt" in c for c in cells) else 0


# --------------------------------------------------------------------------- compact
def compact_store(store: Store, older_than_s: float = 3600.0) -> dict[str, int]:
    """Remove temporaries older than ``older_than_s`` that no live writer holds, quarantine corrupt journal
    parts (every part is read once to check it) and merge journal partitions with several parts."""
    removed = 0
    now = time.time()
    base = store.path("").rstrip("/") + "/"
    for path in store.fs.find(store.path("")):
        if not path.rsplit("/", 1)[-1].startswith(TMP_PREFIX):
            continue
        try:  # a live run renames its temporaries: one listed a moment ago may be gone now
            modified = store.fs.modified(path).timestamp() if hasattr(store.fs, "modified") else 0
            if now - modified < older_than_s:
                continue
            if store.is_local:  # a live writer holds its temporary's lock, however long it has been writing
                removed += remove_abandoned_temporary(store.inside(path.removeprefix(base)))
            else:  # object stores write with one PUT: a temporary there is a probe or a leftover
                store.delete(path.removeprefix(base))
                removed += 1
        except (FileNotFoundError, OutsideRoot):  # gone, or a planted link out of the root: never followed
            continue
    merged = quarantined = 0
    from helmflow.journal import CorruptPart, Journal, parse_part, quarantine

    for deployment_dir in store.ls(layout.JOURNAL_ROOT):
        for key in [k for k in store.find(deployment_dir) if k.endswith(".parquet")]:
            try:  # every part, merged or not: a corrupt one is set aside as `run` would, and said
                parse_part(store.read_bytes(key))
            except CorruptPart as exc:
                quarantine(store, key, str(exc))
                quarantined += 1
            except FileNotFoundError:
                continue  # merged by a live run meanwhile
        parts = [k.rsplit("/", 2)[-2] for k in store.find(deployment_dir) if k.endswith(".parquet")]
        busy = {xx for xx in set(parts) if parts.count(xx) > 1}
        # opening a journal also recovers spools that killed processes left on this machine
        journal = Journal(store, deployment_dir.rsplit("/", 1)[-1])
        journal.compact(busy, min_parts=2)
        journal.close(compact=False)
        merged += len(busy)
    return {"temporaries_removed": removed, "partitions_compacted": merged, "parts_quarantined": quarantined}


def cmd_compact(args: argparse.Namespace) -> int:
    result = compact_store(Store(args.storage), args.older_than)
    line = (f"removed {result['temporaries_removed']} temporaries; "
            f"compacted {result['partitions_compacted']} journal partitions")
    if result["parts_quarantined"]:
        line += (f"; moved {result['parts_quarantined']} corrupt journal part(s) to quarantine/ (their requests "
                 "count as unanswered: the next run sends them again)")
    print(line)
    return 0


# --------------------------------------------------------------------------- retry
STORAGE_LABEL = layout.STORAGE_LABEL


@dataclass
class FlowRunInfo:
    """What ``retry`` reads of a flow run (from Prefect's client or from its REST API as JSON)."""

    id: str
    name: str
    state: str  # the state's name: Failed, Completed, ...
    final: bool
    parameters: dict[str, Any]
    labels: dict[str, Any]
    deployment_id: str | None
    flow_id: str
    work_pool_name: str | None = None


FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "CRASHED")


def _finished(info: FlowRunInfo) -> FlowRunInfo:
    if not info.final:
        raise HelmflowError(f"flow run {info.id} is {info.state or 'unknown'}; only finished runs can be retried")
    return info


def read_finished_flow_run(flow_run_id: str) -> FlowRunInfo:
    """The flow run, or one line saying why it cannot be retried (bad id, unknown, still running).
    Called with Prefect's API set (:func:`helmflow.prefect_runtime.prefect_api`)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    run_uuid = flow_run_uuid(flow_run_id)
    with get_client(sync_client=True) as client:
        try:
            run = client.read_flow_run(run_uuid)
        except ObjectNotFound:
            raise HelmflowError(f"no flow run {flow_run_id} on the Prefect server at {client.api_url}") from None
    return _finished(FlowRunInfo(
        id=str(run.id), name=run.name, state=(run.state.name or "") if run.state else "", final=bool(
            run.state and run.state.is_final()), parameters=run.parameters, labels=dict(run.labels or {}),
        deployment_id=str(run.deployment_id) if run.deployment_id else None, flow_id=str(run.flow_id),
        work_pool_name=run.work_pool_name))


def read_finished_flow_run_http(api_url: str, flow_run_id: str) -> FlowRunInfo:
    """The same through the REST API alone: a dry run then needs no Prefect import (seconds)."""
    import httpx

    run_uuid = flow_run_uuid(flow_run_id)
    try:
        reply = httpx.get(f"{api_url.rstrip('/')}/flow_runs/{run_uuid}", timeout=30)
    except httpx.HTTPError as exc:
        raise HelmflowError(f"the Prefect server at {api_url} did not answer: {exc}") from None
    if reply.status_code == 404:
        raise HelmflowError(f"no flow run {flow_run_id} on the Prefect server at {api_url}")
    reply.raise_for_status()
    run = reply.json()
    state = run.get("state") or {}
    return _finished(FlowRunInfo(
        id=run["id"], name=run["name"], state=state.get("name") or "", final=state.get("type") in FINAL_STATES,
        parameters=run.get("parameters") or {}, labels=run.get("labels") or {},
        deployment_id=run.get("deployment_id"), flow_id=run["flow_id"], work_pool_name=run.get("work_pool_name")))


def flow_run_uuid(flow_run_id: str) -> Any:
    from uuid import UUID

    try:
        return UUID(flow_run_id)
    except ValueError:
        raise HelmflowError(f"{flow_run_id!r} is not a flow run id (a UUID, as `helmflow run` prints it)") from None


def retry_storage(parameters: dict[str, Any], labels: dict[str, Any], given: str | None) -> tuple[str, str]:
    """The storage root a flow run wrote to, and where that came from: its ``storage`` parameter,
    else the root its flow recorded as a label, else ``--storage``. ``--storage`` naming another
    root than the run's own is refused: the answer would describe a store the retry never reads."""
    own, source = parameters.get("storage"), "the flow run's storage parameter"
    if not own and labels.get(STORAGE_LABEL):
        own, source = labels[STORAGE_LABEL], "the storage its flow recorded"
    if own and given and resolve_root(given) != resolve_root(own):
        raise HelmflowError(f"--storage {given} is not where this flow run wrote ({own}, {source})")
    if own:
        return resolve_root(own), source
    if given:
        return resolve_root(given), "--storage"
    raise HelmflowError("the flow run records no storage root (its worker's $HELMFLOW_STORAGE decided): "
                        "pass --storage URL")


def pairs_to_rerun(parameters: dict[str, Any], store: Store) -> list[str]:
    """Cells whose ``run`` task will execute again: no persisted result for its key (a perturbed copy
    whose stored instances show it changed no sampled instance is no cell: the flow leaves it out)."""
    from helmflow.pipeline import perturbed_any
    from helmflow.plan.compile import prepare
    from helmflow.plan.records import cell_name
    from helmflow.plan.selection import Selection

    plan = prepare(parameters.get("board", "demo"), Selection.from_parameters(parameters),
                   models_file=parameters.get("models_file"), plugins=parameters.get("plugins"),
                   check_credentials=False)
    rerun = []
    for r in plan.runs:
        instances = layout.instances(r.scenario.key, r.scenario.scenario_version)
        if r.scenario.perturbation and store.exists(instances) and not perturbed_any(store, instances):
            continue
        if not store.exists(layout.result(layout.run_cache_key(r.run_id))):
            rerun.append(cell_name(r))
    return rerun


def cmd_retry(args: argparse.Namespace) -> int:
    from helmflow.prefect_runtime import plain_api_url, prefect_api, start_server

    flow_run_uuid(args.flow_run_id)  # a bad id is one line before any server starts
    server = start_server(args.ephemeral)
    if args.dry_run and (url := plain_api_url(server)):
        _describe_retry(read_finished_flow_run_http(url, args.flow_run_id), args.storage)
        return 0
    with prefect_api(server):
        run = read_finished_flow_run(args.flow_run_id)
        root = _describe_retry(run, args.storage)
        if args.dry_run:
            return 0
        from helmflow.prefect_server import POOL

        if run.deployment_id is not None and run.work_pool_name != POOL:  # a nightly's: its worker retries it
            return _schedule_retry(run)
        return _retry_here(run, Store(root), server)


def _describe_retry(run: FlowRunInfo, storage: str | None) -> str:
    """Print what a retry re-executes; the storage root it reads."""
    root, source = retry_storage(run.parameters, run.labels, storage)
    rerun = pairs_to_rerun(dict(run.parameters, storage=root), Store(root))
    print(f"flow run {run.id} ({run.name}) ended {run.state}.")
    print(f"storage: {root} (from {source})")
    if rerun:
        print(f"will re-execute {len(rerun)} pair(s); every other task is cached:")
        for pair in rerun:
            print(f"  - {pair}")
    else:
        print("every pair is cached; only the release is re-aggregated")
    sys.stdout.flush()
    return root


def _schedule_retry(run: FlowRunInfo) -> int:
    """A deployment's run: set it to Scheduled (what the UI's Retry button and `prefect flow-run retry`
    do); a worker of its pool executes the same flow run again."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.responses import SetStateStatus
    from prefect.states import Scheduled

    with get_client(sync_client=True) as client:
        result: Any = client.set_flow_run_state(flow_run_uuid(run.id), Scheduled(message="Retried by helmflow retry"),
                                                force=True)
    if result.status == SetStateStatus.ABORT:
        raise HelmflowError(f"Prefect refused to retry flow run {run.id}: {getattr(result.details, 'reason', '')}")
    print("the run belongs to a deployment: a worker of its pool will execute the retry")
    return 0


def _retry_here(run: FlowRunInfo, store: Store, server: Any) -> int:
    """A run of ``helmflow run``: the same flow run executed again in this process, as
    `prefect flow-run retry --entrypoint` would, ending like ``helmflow run`` (board table, release).
    It is set to Pending, not Scheduled: on the managed server a Scheduled run of its deployment is
    the companion worker's to take (the UI's Retry button)."""
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow
    from prefect.states import Pending
    from prefect.utilities.callables import get_call_parameters, parameters_to_args_kwargs
    from rich.console import Console

    from helmflow.cli.runner import run_flow_here
    from helmflow.flows.evaluate import board_label, evaluate

    with get_client(sync_client=True) as client:
        flow = evaluate.with_options(name=client.read_flow(flow_run_uuid(run.flow_id)).name)
    args, kwargs = parameters_to_args_kwargs(evaluate.fn, run.parameters)
    parameters = get_call_parameters(evaluate.fn, args, kwargs)

    def call() -> Any:
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(flow_run_uuid(run.id), Pending(message="Retried by helmflow retry"),
                                      force=True)
            flow_run = client.read_flow_run(flow_run_uuid(run.id))
        return run_flow(flow=flow, flow_run=flow_run, parameters=parameters, return_type="state")

    started = time.perf_counter()
    return run_flow_here(Console(), server, store, board_label(run.parameters, flow.name), call, started=started)
