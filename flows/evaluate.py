"""The generic board flow: download → adapt → query → score → publish, then one release.

Two task runs per board shape the flow-run graph: ``prepare <scenario>`` (download + adapt, once
per scenario) and ``run <scenario> x <deployment>`` (query → score → publish, once per cell, so
one failing cell never stops the others), then ``release <board>``. A board with failed cells still
publishes a release (status "partial") and then ends Failed. Every board runs as a Prefect flow
named after the board (:func:`board_flow`), from the CLI and from its deployment alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC
from typing import TYPE_CHECKING, Any, cast

from prefect import Task, flow, get_run_logger
from prefect.futures import PrefectConcurrentFuture, PrefectFuture, as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from helmflow.aggregate import point_release
from helmflow.errors import HelmflowError
from helmflow.lease import note_run
from helmflow.outcomes import FailedCell, RunOutcome
from helmflow.pipeline import publication_problem
from helmflow.plan.launch import launch_for, launch_key, prepare_launch
from helmflow.plan.records import RunPlan, cell_name
from helmflow.plan.selection import Selection
from helmflow.progress import REPORTED, reporter
from helmflow.settings import settings
from helmflow.storage import Store
from helmflow.tasks import configure, forget_cached
from helmflow.tasks.alerts import alert_regressions
from helmflow.tasks.evaluation import (
    release_artifacts,
    release_assets,
    report_line,
    report_link,
    run_assets,
    run_key,
)
from helmflow.tracking import track_in_flow
from helmflow.uptodate import board_summary

if TYPE_CHECKING:
    from prefect.client.schemas.objects import State


class PartialRelease(RuntimeError):
    """Some pairs failed: the release was published as partial; the message lists the missing cells."""

    def __init__(self, message: str, release: dict[str, Any]):
        super().__init__(message)
        self.release = release


def failed_cells(failed: list[FailedCell]) -> str:
    """One line per distinct error with the cells it failed: a deployment stopped by a bad key
    fails all its pairs with the same error, which reads once."""
    cells: dict[str, list[str]] = {}
    for f in failed:
        cells.setdefault(f.error.replace(f"{f.scenario} x {f.deployment}: ", ""), []).append(
            f"{f.scenario} x {f.deployment}")
    return "\n".join(f"  {error} ({len(c)} run{'s' * (len(c) > 1)}: {', '.join(c)})" for error, c in cells.items())


TASK_EXCEPTION = "Task run encountered an exception "  # how Prefect's failed-state message starts


def _failure(*futures: PrefectFuture) -> str:
    for fut in futures:
        state = fut.state
        if state.is_failed() or state.is_crashed():
            try:
                state.result(raise_on_failure=True)
            except FileNotFoundError as exc:  # also: the failure's result record not written yet (read at once)
                return state.message.removeprefix(TASK_EXCEPTION) if state.message else f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # noqa: BLE001 - we report the task's own error message
                return f"{type(exc).__name__}: {exc}"
            return state.message or "failed"
    return "not run: an upstream task failed"


def submit_runs(run: Task, store: Store, board: str, runs: list[RunPlan], prepared: dict[str, PrefectFuture],
                budget_usd: float | None) -> Iterator[tuple[str, PrefectFuture]]:
    """Submit each scenario's run tasks as soon as its prepare task has finished.

    A run given the prepare *future* cost Prefect, per board cell, an API read of the future's state
    (to infer parents) and a hop to Prefect's event-loop thread to read the result (``State.result``
    is async underneath): 21% and 40% of the worker threads' time in a warm 100-run board (py-spy).
    So runs in this process get the result itself (:func:`prepared_argument`)."""
    by_scenario: dict[str, list[RunPlan]] = {}
    for r in runs:
        by_scenario.setdefault(r.scenario.label, []).append(r)
    label_of = {fut.task_run_id: label for label, fut in prepared.items()}
    for done in as_completed(list(prepared.values())):
        done.wait()  # the final state, from the future itself (the API's copy can still say Running)
        if done.state.is_failed() or done.state.is_crashed():
            continue  # its cells fail with the prepare's error (a run given a failed future waits, NotReady)
        argument = prepared_argument(done)
        for r in by_scenario.get(label_of[done.task_run_id], []):
            yield r.run_id, run.with_options(**run_assets(store, board, r)).submit(
                r, store.root, argument, board, budget_usd)


def prepared_argument(done: PrefectFuture) -> Any:
    """What a run task gets for its finished prepare: the result when the run executes in this process
    (the thread runner: Prefect still draws the graph's edge, from the identity of the object its task
    run returned); else the future (Dask workers resolve it there: identity does not cross processes).
    A failed prepare's runs are not submitted (:func:`submit_runs`): its cells fail with its error."""
    if isinstance(done, PrefectConcurrentFuture) and done.state.is_completed():
        return done.result()
    return done


def task_runner(choice: str = "thread"):
    """``thread`` (default: ``HELMFLOW_TASK_THREADS`` task runs at once, 16 unless set), ``dask`` (a
    local cluster of ``HELMFLOW_DASK_WORKERS`` processes, default 2) or ``dask:<scheduler address>``.
    ``helmflow run --task-runner`` passes it with ``with_options``.

    The thread pool is bounded on purpose: Prefect's default starts a thread per submitted task run,
    so every cell of a board ran at once and peak memory grew with the number of runs (554 MB at 100
    runs against 322 MB with 8 threads, ``benchmarks/scale.py``). Prepare tasks are submitted before
    the runs that wait for them, so a bounded pool cannot deadlock."""
    if choice == "thread":
        return ThreadPoolTaskRunner(max_workers=settings().task_threads)
    if choice == "dask" or choice.startswith("dask:"):
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise HelmflowError("the dask task runner needs the dask extra: pip install 'helmflow[dask]'") from None
        if choice.startswith("dask:"):
            return DaskTaskRunner(address=choice[5:])
        workers = settings().dask_workers
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True})
    raise HelmflowError(f"the task runner must be thread, dask or dask:<address>, not {choice!r}")


def task_runner_from_env():
    """A worker's runner: ``$HELMFLOW_TASK_RUNNER`` (the flow's default; the CLI overrides it per run)."""
    return task_runner(settings().task_runner)


def _label_storage(root: str) -> None:
    """Record the resolved storage root on the flow run (``helmflow retry`` reads it: a deployment's
    run has no ``storage`` parameter when its worker's $HELMFLOW_STORAGE decides)."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    from helmflow.layout import STORAGE_LABEL

    if flow_run.id:
        with get_client(sync_client=True) as client:
            client.update_flow_run_labels(flow_run.id, {STORAGE_LABEL: root})


def flow_run_name() -> str:
    """``<board> <UTC date and time>``, e.g. ``demo 2026-11-30 18:55``, instead of Prefect's random words."""
    from datetime import datetime

    from prefect.runtime import flow_run

    return f"{board_label(flow_run.parameters, flow_run.flow_name)} {datetime.now(UTC):%Y-%m-%d %H:%M}"


def board_label(parameters: dict[str, Any], flow_name: str) -> str:
    """The board's name from what the run was given, reading no file: a spec's ``name``, a board's
    name, or for a board file the name in the plan ``helmflow run`` handed over. A worker given a
    file has planned nothing yet when Prefect names the run: the file's stem then."""
    board = parameters.get("board") or flow_name
    if isinstance(board, dict):
        return board.get("name", flow_name)
    if isinstance(board, str) and board.endswith((".yaml", ".yml")):
        launch = launch_for(launch_key(board, parameters.get("selection"), parameters.get("storage"),
                                       parameters.get("models_file"), parameters.get("plugins")))
        return launch.plan.spec.name if launch is not None else os.path.splitext(os.path.basename(board))[0]
    return board


def _name_lease_holder(root: str, board: str) -> None:
    """Name this flow run in the board's lease, when this process holds it (``helmflow run``), so a
    second run's one line says which run to wait for."""
    from prefect.runtime import flow_run

    if flow_run.id:
        note_run(root, board, f"{flow_run.name!r} ({flow_run.id})")


@flow(name="evaluate-board", log_prints=False, task_runner=task_runner_from_env(), flow_run_name=flow_run_name)
def evaluate(
    board: str | dict[str, Any] = "demo",
    selection: Selection = Selection(),  # noqa: B008 - frozen: Prefect's form shows its fields
    storage: str | None = None,
    models_file: str | None = None,
    plugins: list[str] | None = None,
    budget_usd: float | None = None,
) -> dict[str, Any]:
    """``selection``: what to take from the board (models, scenarios, max instances, judges,
    board-wide metrics); ``storage``: the root URL (default $HELMFLOW_STORAGE); ``budget_usd``: stop
    sending priced requests before the projected spend passes it."""
    log = get_run_logger()
    # what `helmflow run` prepared for this flow, else the same checks here: a worker's run refuses
    # bad data before any task, as the CLI does (a missing key fails its cells, not the board)
    handed = launch_for(launch_key(board, selection, storage, models_file, plugins))
    launch = handed or prepare_launch(
        board, selection, storage, models_file=models_file, plugins=plugins, credentials=False,
        look_up_release=False)
    store: Store = launch.store
    plan = launch.plan
    _label_storage(store.root)
    _name_lease_holder(store.root, plan.spec.name)
    tasks = configure(store.root)
    log.info("board %s (%d runs) on storage %s", plan.spec.name, len(plan.runs), store.root)
    reporter().set_runs(len(plan.runs))

    for r in plan.runs:  # a published run whose files no longer match their sha256 is published again
        problem = publication_problem(store, r.run_id)
        if problem:
            log.warning("%s; publishing run %s again", problem, r.run_id)
            forget_cached(store, [run_key(r)])

    prepared = {s.label: tasks.prepare.submit(s, store.root) for s in plan.all_scenarios}
    board_name = plan.spec.name
    cells = dict(submit_runs(tasks.run, store, board_name, plan.runs, prepared, budget_usd))

    published: list[RunOutcome] = []
    failed: list[FailedCell] = []
    prepare_errors: dict[str, str] = {}
    for r in plan.runs:
        fut = cells.get(r.run_id)
        if fut is None:  # its scenario's prepare failed: the cell was never submitted
            if r.scenario.label not in prepare_errors:  # read once per scenario (each read can wait on storage)
                prepare_errors[r.scenario.label] = _failure(prepared[r.scenario.label])
            error = prepare_errors[r.scenario.label]
            log.error("%s x %s failed: %s", r.scenario.label, r.deployment.name, error, extra={REPORTED: True})
            failed.append(FailedCell(run_id=r.run_id, scenario=r.scenario.label, deployment=r.deployment.name,
                                     error=error))
            reporter().run_done(r.scenario.label)
            continue
        fut.wait()
        if fut.state.is_completed():
            out: RunOutcome = fut.result()
            published.append(out)
            if fut.state.name == "Cached":  # its task logged nothing this time: say where the reused run is
                log.info("%s: cached, the run published earlier: %s", cell_name(r), report_link(out.uri))
            if out.status == "errors":  # published, but never cached: the next run re-sends the errors
                forget_cached(store, [run_key(r)])
        else:
            error = _failure(prepared[r.scenario.label], fut)
            # the CLI reports failed cells once, grouped (progress.quiet_reported_failures)
            log.error("%s x %s failed: %s", r.scenario.label, r.deployment.name, error, extra={REPORTED: True})
            failed.append(FailedCell(run_id=r.run_id, scenario=r.scenario.label, deployment=r.deployment.name,
                                     error=error))
        reporter().run_done(r.scenario.label)
    del cells, prepared  # futures hold their states: let them go before the release

    # JSON copies: Prefect infers a task's upstream task runs (and assets) from the identity of every
    # value passed in, down to the strings inside; the runs' ids would make each run a parent twice
    # (through `runs` and through the plan), and a big board's asset event exceed 100 resources.
    runs = [RunOutcome.model_validate_json(r.model_dump_json()) for r in published]
    failed = [FailedCell.model_validate_json(f.model_dump_json()) for f in failed]
    plan_copy = type(plan).model_validate_json(plan.model_dump_json())
    release_state = cast("State[Any]", tasks.publish_release.with_options(**release_assets(store, plan_copy, runs))(
        plan_copy, store.root, runs, failed, return_state=True
    ))
    release = release_state.result()  # raises if publication failed
    if release_state.name == "Cached":  # the same run set was released before: nothing was written now
        release = release.model_copy(update={"wrote": False})
    release = point_release(store, plan, release)  # cached or not: the pointer must name this release
    release_artifacts(plan, release, failed)
    log.info("release %s %s (%s): %s", release.release_id, "published" if release.wrote else
             "unchanged (already published: nothing written)", release.status, report_link(release.uri))
    log.info("%s", report_line(plan.spec.name, release.release_id, release.uri, store.root))
    if release.pointer:
        log.info("%s now points at release %s", release.pointer, release.release_id)
    try:  # the release is published: a failure to compare it must not fail the run
        regressed = alert_regressions(store, plan.spec.name, release)
    except Exception as exc:  # noqa: BLE001 - said once, the release stands
        log.warning("could not check release %s for regressions: %s: %s", release.release_id,
                    type(exc).__name__, exc)
        regressed = []
    for e in regressed:
        p = e["payload"]
        log.warning("%s regressed: %s %.3f -> %.3f, paired change %+.3f [%+.3f, %+.3f] (event %s)", p["cell"],
                    p["metric"], p["before"], p["after"], p["delta"], p["ci_low"], p["ci_high"], e["event"])
    if handed is None:  # a deployment's refresh or a retry: `helmflow run` tracks after the flow run it started
        track_in_flow(store, plan.spec.name, release.release_id, plan.spec.tracking, log)
    summary = board_summary(plan, release_id=release.release_id, uri=release.uri, status=release.status,
                            wrote=release.wrote, table=release.table, pointer=release.pointer,
                            failed=[f.model_dump() for f in failed])
    if failed:
        raise PartialRelease(
            f"{len(failed)} of {len(plan.runs)} runs failed; published partial release {release.release_id}\n"
            + failed_cells(failed), summary)
    return summary


def board_flow(board: str, description: str = ""):
    """The flow of one named board: :func:`evaluate` with ``board`` fixed and every other parameter
    of it (so a deployment of any board can set a budget, or a jury in its selection). A board module
    is one line, ``demo = board_flow("demo")``, which gives the board its own flow name and
    deployment in the Prefect UI."""

    def run_board(
        selection: Selection = Selection(),  # noqa: B008 - frozen: Prefect's form shows its fields
        storage: str | None = None,
        models_file: str | None = None,
        plugins: list[str] | None = None,
        budget_usd: float | None = None,
    ) -> dict[str, Any]:
        return evaluate.fn(board=board, selection=selection, storage=storage, models_file=models_file,
                           plugins=plugins, budget_usd=budget_usd)

    run_board.__name__ = run_board.__qualname__ = board.replace("-", "_")
    return flow(name=board, flow_run_name=flow_run_name,
                description=description or f"The {board} board (flows/{board}.yaml) through evaluate-board.")(run_board)
