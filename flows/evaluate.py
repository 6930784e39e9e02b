"""The generic board flow: download → adapt → query → score → publish, then one release.

The flow-run graph's top level is one subflow run per scenario of the board (:func:`scenario_flow`,
with its perturbed copies) and ``release <board>``. Inside a scenario's subflow, two kinds of task
run: ``prepare <scenario>`` (download + adapt, once per scenario and copy) and ``run <scenario> x
<deployment>`` (query → score → publish, once per cell, so one failing cell never stops the
others). A board with failed cells still publishes a release (status "partial") and then ends
Failed, as does the subflow of each scenario with a failed cell. Every board runs as a Prefect flow
named after the board (:func:`board_flow`), from the CLI and from its deployment alike.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from datetime import UTC
from typing import TYPE_CHECKING, Any, cast

from prefect import Flow, Task, get_run_logger
from prefect.futures import PrefectConcurrentFuture, PrefectFuture, as_completed
from prefect.states import Failed
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from pydantic import BaseModel

from helmflow.aggregate import point_release
from helmflow.errors import HelmflowError
from helmflow.lease import note_run
from helmflow.outcomes import FailedCell, RunOutcome, ScenarioOutcome
from helmflow.pipeline import publication_problem
from helmflow.plan.launch import launch_for, launch_key, prepare_launch
from helmflow.plan.records import RunPlan, ScenarioPlan, cell_name
from helmflow.plan.selection import Selection
from helmflow.progress import REPORTED, reporter
from helmflow.query import RunRefused
from helmflow.settings import settings
from helmflow.storage import Store
from helmflow.tasks import configure, forget_cached
from helmflow.tasks.alerts import alert_regressions
from helmflow.tasks.evaluation import (
    BoardTasks,
    _fmt,
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
    fails all its pairs with the same error, which reads once. A refused run (its prompts do not fit the
    deployment's window) has a line of its own."""
    cells: dict[str, list[str]] = {}
    for f in failed:
        error = f.error if RunRefused.__name__ in f.error else f.error.replace(f"{f.scenario} x {f.deployment}: ", "")
        cells.setdefault(error, []).append(f"{f.scenario} x {f.deployment}")
    return "\n".join(f"  {error}" if RunRefused.__name__ in error else
                     f"  {error} ({len(c)} run{'s' * (len(c) > 1)}: {', '.join(c)})" for error, c in cells.items())


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


class _NotPlain(Exception):
    """A parameter value outside :func:`jsonable`'s plain cases: Prefect's own encoder takes it."""


_SCALARS = (str, int, float, bool, type(None))


def jsonable(value: Any) -> Any:
    """``value`` exactly as FastAPI's ``jsonable_encoder`` makes it, for the plain values helmflow's
    flows take: JSON scalars, lists and tuples (as lists), dicts with string keys, pydantic models
    (``model_dump(mode="json", by_alias=True)``). Exact types only (a ``str`` enum or subclass, a
    path, a set, a key ``_sa…`` that FastAPI drops): anything else raises :class:`_NotPlain`."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        return [jsonable(v) for v in value]
    if kind is dict:
        if not all(type(k) is str and not k.startswith("_sa") for k in value):
            raise _NotPlain
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json", by_alias=True))
    raise _NotPlain


class HelmflowFlow(Flow):
    """Prefect's ``Flow``, sending a flow run's parameters without importing FastAPI (about 0.2 CPU-s
    of every command that creates a flow run): Prefect encodes each parameter with FastAPI's
    ``jsonable_encoder``; :func:`jsonable` gives the same JSON for plain values, and any other value
    goes through Prefect's encoder as before. ``with_options`` keeps the class (Prefect's builds a
    plain ``Flow``)."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        if not self.ismethod and not self.isclassmethod:
            try:
                return {key: jsonable(value) for key, value in parameters.items()}
            except _NotPlain:
                pass
        return super().serialize_parameters(parameters)

    def with_options(self, **options: Any) -> HelmflowFlow:
        new: Any = super().with_options(**options)
        new.__class__ = type(self)
        return new


def flow(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Prefect's ``@flow`` (it is ``Flow(fn=fn, **options)``), building a :class:`HelmflowFlow`."""
    if fn is None:
        return lambda f: HelmflowFlow(fn=f, **options)
    return HelmflowFlow(fn=fn, **options)


class BorrowedTaskRunner(TaskRunner[PrefectFuture[Any]]):
    """A scenario subflow's task runner: it submits to the board flow's runner, so one bounded pool
    (``HELMFLOW_TASK_THREADS``) serves every scenario, as it did when the cells were the board flow's
    own tasks (on Dask there are no subflows: :func:`subflows_here`). Prefect gives each subflow a
    copy (:meth:`duplicate`) and exits it when the subflow ends; neither starts nor stops anything
    here (the subflow waits for its own futures before it returns)."""

    def __init__(self, lender: TaskRunner[Any]):
        super().__init__()
        self.lender = lender

    def duplicate(self) -> BorrowedTaskRunner:
        return type(self)(self.lender)

    def submit(self, task, parameters, wait_for=None, dependencies=None):
        return self.lender.submit(task, parameters, wait_for, dependencies)

    def __exit__(self, *exc: Any) -> None:
        self._started = False


def scenario_groups(plan: Any) -> list[tuple[str, list[ScenarioPlan], list[RunPlan]]]:
    """The board's scenarios as the flow-run graph shows them: one group per scenario of the board,
    with its perturbed copies (prepared and run inside the same subflow), in the board's order; on a board
    with ``subflows: group``, one per run group (an entry without a group on its own)."""
    by_group = plan.spec.subflows == "group"
    group_of = {s.label: (s.group or s.label) if by_group else s.label for s in plan.scenarios}
    groups: dict[str, tuple[list[ScenarioPlan], list[RunPlan]]] = {}
    for s in plan.all_scenarios:
        groups.setdefault(group_of[s.perturbation.label if s.perturbation else s.label], ([], []))[0].append(s)
    owner = {s.label: label for label, (scenarios, _) in groups.items() for s in scenarios}
    for r in plan.runs:
        groups[owner[r.scenario.label]][1].append(r)
    return [(label, scenarios, runs) for label, (scenarios, runs) in groups.items()]


def submit_runs(run: Task, store: Store, board: str, runs: list[RunPlan], prepared: dict[str, PrefectFuture],
                budget_usd: float | None, board_run_id: str | None) -> Iterator[tuple[str, PrefectFuture]]:
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
                r, store.root, argument, board, budget_usd, board_run_id)


def prepared_argument(done: PrefectFuture) -> Any:
    """What a run task gets for its finished prepare: the result when the run executes in this process
    (the thread runner: Prefect still draws the graph's edge, from the identity of the object its task
    run returned); else the future (Dask workers resolve it there: identity does not cross processes).
    A failed prepare's runs are not submitted (:func:`submit_runs`): its cells fail with its error."""
    if isinstance(done, PrefectConcurrentFuture) and done.state.is_completed():
        return done.result()
    return done


def run_scenario(tasks: BoardTasks, scenarios: list[ScenarioPlan], runs: list[RunPlan], storage: str, board: str,
                 board_run_id: str | None = None, budget_usd: float | None = None) -> Any:
    """One scenario's work: prepare it (and its perturbed copies), then query → score → publish each
    of its cells (in its subflow run, or in the board's with ``HELMFLOW_SUBFLOWS=0``)."""
    log = get_run_logger()
    store = Store(storage)
    prepared = {s.label: tasks.prepare.submit(s, storage) for s in scenarios}
    cells = dict(submit_runs(tasks.run, store, board, runs, prepared, budget_usd, board_run_id))
    out = ScenarioOutcome()
    prepare_errors: dict[str, str] = {}
    for r in runs:
        fut = cells.get(r.run_id)
        if fut is None:  # its scenario's prepare failed: the cell was never submitted
            if r.scenario.label not in prepare_errors:  # read once per scenario (each read can wait on storage)
                prepare_errors[r.scenario.label] = _failure(prepared[r.scenario.label])
            error = prepare_errors[r.scenario.label]
        else:
            fut.wait()
            if fut.state.is_completed():
                published: RunOutcome = fut.result()
                out.published.append(published)
                if fut.state.name == "Cached":  # its task logged nothing this time: say where the reused run is
                    out.cached.append(r.run_id)
                    log.info("%s: cached, the run published earlier: %s", cell_name(r), report_link(published.uri))
                if published.status == "errors":  # published, but never cached: the next run re-sends the errors
                    forget_cached(store, [run_key(r)])
                reporter().run_done(r.scenario.label)
                continue
            error = _failure(prepared[r.scenario.label], fut)
        log.error("%s x %s failed: %s", r.scenario.label, r.deployment.name, error, extra={REPORTED: True})
        out.failed.append(FailedCell(run_id=r.run_id, scenario=r.scenario.label, deployment=r.deployment.name,
                                     error=error))
        reporter().run_done(r.scenario.label)
    return out


def scenario_flow(label: str, work: Callable[[], Any], task_runner: TaskRunner[PrefectFuture[Any]]) -> Flow:
    """The subflow of the scenario ``label``: flow ``scenario``, its runs named ``<board> <label>``,
    its tasks on ``task_runner``. It calls ``work`` (:func:`run_scenario` over the board's plans, in
    this process); its parameters only say what it runs (the scenario, the board, its cells, the
    storage root), so the UI shows a few names, not the plans (which Prefect would also walk field
    by field, looking for upstream task runs, and send with the subflow run).

    Each label gets a function of its own name, so the task run that stands for the subflow in the
    board's flow run has a key of its own (Prefect numbers same-keyed calls in the order they start:
    threads would shuffle them across a retry)."""

    def scenario(scenario: str, board: str, cells: list[str], storage: str) -> Any:
        out = work()
        if out.failed:  # the subflow is Failed, its outcome still the board's (CellsFailed: said once, by the CLI)
            return Failed(message=f"CellsFailed: {len(out.failed)} of {len(cells)} runs failed", data=out)
        return out

    scenario.__qualname__ = f"scenario[{label}]"
    return flow(name="scenario", flow_run_name="{board} {scenario}", task_runner=task_runner, log_prints=False,
                validate_parameters=False)(scenario)


def subflows_here() -> bool:
    """Whether this board flow runs each scenario as a subflow: ``HELMFLOW_SUBFLOWS`` (default yes) on the
    thread runner. On Dask the board keeps the flat graph: a task sent to a Dask worker carries its flow
    run's context, and a scenario's flow (its function closes over the board's plans and threads) does
    not pickle."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return settings().subflows and context is not None and isinstance(context.task_runner, ThreadPoolTaskRunner)


def run_scenarios(plan: Any, store: Store, tasks: BoardTasks, budget_usd: float | None,
                  in_subflows: bool) -> dict[str, ScenarioOutcome]:
    """Every scenario's subflow, at once (one thread each, waiting; their tasks share the board
    flow's runner): the outcome of each, by scenario label. A subflow that failed for a reason
    other than its cells (Prefect refused it, a crash) fails each of its cells with that reason.

    The API writes of the subflows are kept apart (:class:`SubflowStarts`): on Prefect's SQLite
    database, a write that met another one was refused (503, SQLITE_BUSY) and Prefect's client
    retried it after 2, 4, 8, 16 s, which made a warm demo board 40 s instead of 6. And a subflow
    sends no heartbeats (the board's flow run does): Prefect's heartbeat thread made each subflow's
    end wait up to a second for it."""
    from prefect.context import FlowRunContext
    from prefect.runtime import flow_run
    from prefect.settings import temporary_settings

    from helmflow.metrics import import_required

    import_required([m for s in plan.all_scenarios for m in s.metrics])  # here, not in the task threads at once
    context = FlowRunContext.get()
    assert context is not None and context.task_runner is not None
    runner = BorrowedTaskRunner(context.task_runner)
    board, board_run_id = plan.spec.name, str(flow_run.id) if flow_run.id else None
    if not in_subflows:  # every task of the board in its own flow run, submitted from this thread
        return {plan.spec.name: run_scenario(tasks, plan.all_scenarios, plan.runs, store.root, board, board_run_id,
                                             budget_usd)}
    groups = scenario_groups(plan)
    starts = SubflowStarts(len(groups))

    def one(label: str, scenarios: list[ScenarioPlan], runs: list[RunPlan]) -> ScenarioOutcome:
        def work() -> Any:  # in this thread, once Prefect has created the subflow run and set it Running
            starts.running()
            try:
                return run_scenario(tasks, scenarios, runs, store.root, board, board_run_id, budget_usd)
            finally:
                starts.ending()

        starts.begin()
        try:
            subflow = scenario_flow(label, work, runner)  # built before its turn: it reads the module's source
            starts.starting()
            with temporary_settings(updates={"flows.heartbeat_frequency": None}):
                state = subflow(label, board, [cell_name(r) for r in runs], store.root, return_state=True)
        finally:
            starts.ended()
        result = state.result(raise_on_failure=False) if state is not None else None
        if isinstance(result, ScenarioOutcome):
            return result
        error = (f"{type(result).__name__}: {result}" if isinstance(result, BaseException) else
                 state.message or f"the scenario's subflow ended {state.name}" if state is not None else
                 "Prefect gave no state for the scenario's subflow")
        return ScenarioOutcome(failed=[FailedCell(run_id=r.run_id, scenario=r.scenario.label,
                                                  deployment=r.deployment.name, error=error) for r in runs])

    if not groups:
        return {}
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="scenario") as pool:
        futures = {label: pool.submit(copy_context().run, one, label, scenarios, runs)
                   for label, scenarios, runs in groups}
        return {label: fut.result() for label, fut in futures.items()}


class SubflowStarts:
    """Keeps the API writes of ``n`` scenario subflows (each in its own thread) apart.

    Prefect starts a subflow run with about seven API writes (the task run standing for it, the flow
    run, its name and states) and ends it with one (its final state). Those run one subflow at a time
    (:meth:`starting` … :meth:`running`, :meth:`ending` … :meth:`ended`), and no subflow's work begins
    before every subflow has started: the server records task runs from their events, writing
    its database in the background, and a subflow's start that met those writes was what got refused.
    Each thread calls :meth:`begin`, then the four in that order (:meth:`ended` in any case: a subflow
    whose function Prefect never ran then counts as started, so the others do not wait for it)."""

    def __init__(self, n: int):
        self.turn = threading.Lock()
        self.lock = threading.Lock()
        self.left = n
        self.all_started = threading.Event()
        if n == 0:
            self.all_started.set()
        self.state = threading.local()

    def begin(self) -> None:
        self.state.holding, self.state.arrived = False, False

    def starting(self) -> None:
        self.turn.acquire()
        self.state.holding = True

    def running(self) -> None:
        self._release()
        self._arrive()
        self.all_started.wait()

    def ending(self) -> None:
        self.turn.acquire()
        self.state.holding = True

    def ended(self) -> None:
        self._release()
        self._arrive()

    def _release(self) -> None:
        if self.state.holding:
            self.state.holding = False
            self.turn.release()

    def _arrive(self) -> None:
        if not self.state.arrived:
            self.state.arrived = True
            with self.lock:
                self.left -= 1
                if self.left == 0:
                    self.all_started.set()


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
    tasks = configure(store.root)  # saves the results block once; each scenario's subflow reuses it
    log.info("board %s (%d runs) on storage %s", plan.spec.name, len(plan.runs), store.root)
    reporter().set_runs(len(plan.runs))

    for r in plan.runs:  # a published run whose files no longer match their sha256 is published again
        problem = publication_problem(store, r.run_id)
        if problem:
            log.warning("%s; publishing run %s again", problem, r.run_id)
            forget_cached(store, [run_key(r)])

    in_subflows = subflows_here()  # else the cells' tasks log their lines in the board's run
    outcomes = run_scenarios(plan, store, tasks, budget_usd, in_subflows)
    published: list[RunOutcome] = []
    failed: list[FailedCell] = []
    for outcome in outcomes.values():  # a line per cell in the board's log, as its subflow ended
        cached = set(outcome.cached)
        for out in outcome.published if in_subflows else []:
            cell = f"{out.scenario} x {out.deployment}"
            if out.run_id in cached:
                log.info("%s: cached, the run published earlier: %s", cell, report_link(out.uri))
            else:
                log.info("%s: finished, %s %s (%s, error rate %.1f%%): %s", cell, out.main_metric, _fmt(out.score),
                         out.status, 100 * out.error_rate, report_link(out.uri))
        for f in outcome.failed if in_subflows else []:  # the CLI reports failed cells once, grouped
            log.error("%s x %s failed: %s", f.scenario, f.deployment, f.error, extra={REPORTED: True})
        published += outcome.published
        failed += outcome.failed
    order = {r.run_id: i for i, r in enumerate(plan.runs)}  # the board's order, whichever scenario ended first
    published.sort(key=lambda o: order[o.run_id])
    failed.sort(key=lambda f: order[f.run_id])
    del outcomes

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
