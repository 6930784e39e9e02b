"""One typed request and one function for every way to run a board.

``run``, ``eval`` (an ad-hoc board spec) and ``reproduce`` (HELM's official spec) each build a
:class:`RunRequest` and call :func:`run_board`: plan once, say what a dry run would send or check
credentials and storage, then start the ``evaluate`` flow in this process with the chosen task
runner and print the release. Imported when a command runs, not when ``helmflow --help`` builds
the parser (pydantic is not needed for that).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.cli.options import selection_from
from helmflow.plan.selection import Selection

EXIT_PARTIAL = 1


class RunRequest(BaseModel):
    """Everything a run of a board needs from the command line (validated before any work)."""

    model_config = ConfigDict(extra="forbid")
    board: str | dict[str, Any]  # a board name, a YAML file, or the spec as data (eval, reproduce)
    selection: Selection = Field(default_factory=Selection)
    storage: str | None = None
    models_file: str | None = None
    plugins: list[str] = Field(default_factory=list)
    budget_usd: float | None = Field(None, ge=0)
    task_runner: Literal["thread", "dask"] | None = None
    variant: Literal["v1", "v2"] | None = None
    prompts: str | None = None  # a prompts file replacing wording (helmflow.prompts)
    dry_run: bool = False
    force_flow: bool = False  # run the flow even when the exact release is already published
    verbose: bool = False
    require_verified_data: bool = False  # reproduce: refuse a mirror that is not verified (exit 2)
    wait: bool = False  # for another run of the board on the same storage (helmflow.lease)
    ephemeral: bool = False  # Prefect's temporary server instead of helmflow's managed one
    # mlflow:URI / wandb:PROJECT[:DIR] targets the release is logged to (helmflow.tracking)
    track: list[str] = Field(default_factory=list)
    cancel_batches: bool = False  # Ctrl-C cancels the provider batches the run waits on (helmflow.batches)

    def flow_parameters(self, board: str | dict[str, Any], storage: str) -> dict[str, Any]:
        """The ``evaluate`` flow's parameters (JSON, so a deployment or a retry can replay them)."""
        return {"board": board, "selection": self.selection, "storage": storage, "models_file": self.models_file,
                "plugins": self.plugins, "budget_usd": self.budget_usd}


def request_from(args: argparse.Namespace, **given: Any) -> RunRequest:
    """The request from a command's parsed options (the ones it has), ``given`` taking precedence
    (a selection field given replaces the option's value; None: the board's own)."""
    chosen = {k: given.pop(k) for k in list(given) if k in Selection.model_fields}
    selection = Selection.of(selection_from(args), **chosen)
    values = {"plugins": args.plugin, **vars(args)}
    fields = {k: v for k, v in values.items() if k in RunRequest.model_fields}
    return RunRequest(**{**fields, "selection": selection, **given})


def run_board(request: RunRequest) -> int:
    """Plan once; a dry run prints the estimate; else check credentials and storage, run the flow here.
    Perturbation data fetched into the storage root (``helmflow fetch-assets``) is read from it."""
    from helmflow.perturbations import assets_from

    with assets_from(request.storage):
        return _run_board(request)


def _run_board(request: RunRequest) -> int:
    from helmflow.plan.launch import handing_over, launch_key, prepare_launch
    from helmflow.plan.spec import with_prompts, with_variant
    from helmflow.prefect_runtime import start_server
    from helmflow.tracking import parse_target

    for value in request.track:  # bad input: one line, before any work
        parse_target(value)
    # before planning: a server's start-up (seconds of importing its app) overlaps this process's work
    server = None if request.dry_run else start_server(request.ephemeral, request.verbose)
    board = with_variant(request.board, request.variant) if request.variant else request.board
    if request.prompts:
        board = with_prompts(board, request.prompts)
    from rich.console import Console

    console = Console()
    if request.dry_run:
        from helmflow.dryrun import estimate
        from helmflow.plan.compile import prepare
        from helmflow.terminal import print_estimate

        print_estimate(console, estimate(prepare(board, request.selection, models_file=request.models_file,
                                                 plugins=request.plugins)))
        return 0
    launch = prepare_launch(board, request.selection, request.storage, models_file=request.models_file,
                            plugins=request.plugins, status=console.status,
                            require_verified_data=request.require_verified_data, look_up_release=not request.force_flow)
    plan, store = launch.plan, launch.store
    from helmflow.tracking import check_installed, targets

    trackers = targets(request.track, plan.spec.tracking)
    if trackers:
        check_installed(trackers)
    console.print(f"storage: {store.root}", soft_wrap=True, markup=False)  # a path never breaks across lines
    for line in launch.unverified:
        console.print(f"UNVERIFIED data: {line}", style="yellow", markup=False)
    for label, why in plan.left_out.items():
        console.print(f"left out: {label}: {why}", style="yellow", markup=False, soft_wrap=True)
    from helmflow.terminal import count_line

    console.print(count_line(plan.spec.name, len(plan.scenarios), len(plan.perturbed), len(plan.spec.models),
                             len(plan.runs), launch.dropped), soft_wrap=True, markup=False, highlight=False)
    from helmflow.terminal import print_board

    if launch.published is not None:  # nothing would execute: say so without starting Prefect
        print_board(console, launch.published)
        _print_release(console, launch.published)
        console.print("no Prefect flow run was started: every run and this release are already published "
                      "(--force-flow starts one)", soft_wrap=True)
        if not _track(console, store, launch.published, trackers):
            return EXIT_PARTIAL
        from helmflow.prefect_server import Handle, started_line

        if isinstance(server, Handle) and server.started_here:  # started ahead, on a guess: it stays for later
            print(started_line(server.state), file=sys.stderr, flush=True)
        return 0
    started = time.perf_counter()
    if request.cancel_batches:
        from helmflow.batches import cancel_on_stop

        cancel_on_stop()
    from helmflow.clients import preload_sdks

    preload_sdks(r.deployment for r in plan.runs)  # while this thread waits for the server
    from helmflow.flows.evaluate import evaluate, task_runner

    # under the board's name: the flow its deployment runs (flows/<board>.py), so the UI keeps one history per board
    options: dict[str, Any] = {"name": plan.spec.name}
    if request.task_runner:
        options["task_runner"] = task_runner(request.task_runner)
    flow = evaluate.with_options(**options)
    parameters = request.flow_parameters(board, store.root)
    key = launch_key(board, request.selection, store.root, request.models_file, request.plugins)

    from helmflow.prefect_server import Handle, managed_flow_run

    def call() -> Any:  # the flow, started here with the same parameters, takes this launch: no second plan
        with handing_over(launch, key):
            if isinstance(server, Handle) and server.in_use and server.state.worker:
                # a run of the board's deployment on the managed server (its worker executes the UI's Retry),
                # executed here all the same
                from prefect.flow_engine import run_flow

                flow_run = managed_flow_run(flow, parameters, board)
                return run_flow(flow=flow, flow_run=flow_run, parameters=parameters, return_type="state")
            return flow(**parameters, return_state=True)

    from helmflow.prefect_runtime import prefect_api

    with prefect_api(server):  # waits for it, under helmflow's start-up timeout
        return run_flow_here(console, server, store, plan.spec.name, call, started=started, wait=request.wait,
                             verbose=request.verbose,
                             on_release=lambda summary: _track(console, store, summary, trackers))


def _track(console: Any, store: Any, summary: dict[str, Any], trackers: list[Any]) -> bool:
    """Log the published release to each tracker; False (said in one line each) when one failed: the
    release stands, and ``helmflow track`` logs it later."""
    if not trackers:
        return True
    from helmflow.cli.track import report_writer, say
    from helmflow.tracking import spelled, track_release, where

    ok = True
    for target in trackers:
        try:
            tracked = track_release(store, summary["board"], summary["release_id"], target, report_writer())
            console.print(say(tracked, summary["board"], summary["release_id"]), soft_wrap=True, markup=False)
        except Exception as exc:  # noqa: BLE001 - one line, the release is published
            ok = False
            console.print(f"tracking: release {summary['release_id']} was not logged to {where(target)}: "
                          f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]} "
                          f"(helmflow track {summary['board']} --to {spelled(target)} logs it later)",
                          soft_wrap=True, markup=False, style="red")
    return ok


def run_flow_here(console: Any, server: Any, store: Any, board: str, call: Callable[[], Any], *, started: float,
                  wait: bool = False, verbose: bool = False,
                  on_release: Callable[[dict[str, Any]], bool] | None = None) -> int:
    """Run a board's flow run in this process (``call`` starts it and returns its final state) under the
    board's lease, with the progress bars, Ctrl-C handling and a watch on the Prefect server; then print
    the board table, the flow run and the release. ``run`` and ``retry`` end the same way."""
    from helmflow.flows.evaluate import PartialRelease
    from helmflow.journal import flush_open_journals
    from helmflow.lease import board_lease
    from helmflow.prefect_runtime import settle, watch_server
    from helmflow.progress import RichReporter, quiet_reported_failures, set_reporter
    from helmflow.stopping import install_signal_handlers
    from helmflow.terminal import print_board

    if not verbose:
        quiet_reported_failures()
    # Ctrl-C and SIGTERM: nothing new is sent, then exit 130; the temporary server dies with us
    restore = install_signal_handlers(flush_open_journals, lambda line: print(f"\n{line}", file=sys.stderr, flush=True))
    def waiting(line: str) -> None:  # --wait behind another run: said once, before it is taken
        print(f"helmflow: {line}", file=sys.stderr, flush=True)

    with board_lease(store, board, wait=wait, say=waiting), RichReporter(console) as rep, watch_server(server):
        set_reporter(rep)
        try:
            state = call()
        finally:
            set_reporter(None)
            restore()
    left = settle(state.state_details.flow_run_id)  # before a temporary server stops at exit
    if left:
        console.print(f"[yellow]Prefect has not yet recorded the final state of {left} task run(s)")
    result: Any = state.result(raise_on_failure=False)
    summary = result.release if isinstance(result, PartialRelease) else result
    from helmflow.storage import StorageFull

    if isinstance(result, StorageFull):  # one line naming the root (exit 1), not the flow run's tracebacks
        console.print(f"flow run: {state.state_details.flow_run_id} ({state.type.value.lower()})", markup=False)
        raise result
    if not isinstance(summary, dict):
        console.print(f"[red]flow run {state.state_details.flow_run_id} ended {state.type.value}: {result}")
        return EXIT_PARTIAL
    print_board(console, summary)
    console.print(f"flow run: {state.state_details.flow_run_id} ({state.type.value.lower()}) "
                  f"in {time.perf_counter() - started:.1f} s")
    from helmflow.prefect_server import Handle

    if isinstance(server, Handle) and server.in_use:
        console.print(f"Prefect UI: {server.state.ui_url}/runs/flow-run/{state.state_details.flow_run_id}",
                      soft_wrap=True, markup=False)
    _print_release(console, summary)
    tracked = on_release(summary) if on_release else True
    if isinstance(result, PartialRelease):
        from rich.markup import escape

        console.print(f"[red]partial release: {escape(str(result))}", soft_wrap=True)  # a line per failure, unbroken
        return EXIT_PARTIAL
    return 0 if tracked else EXIT_PARTIAL


def _print_release(console: Any, summary: dict[str, Any]) -> None:
    """The lines under the board, the same whether the flow ran or the release was already published."""
    console.print(f"release: {summary['uri']}" + ("" if summary["wrote"] else " (unchanged: nothing written)"),
                  soft_wrap=True, markup=False)  # a path never breaks across lines
    if summary.get("subset"):
        from helmflow.plan.selection import narrowed

        console.print(f"subset of the board ({narrowed(summary['subset'])}): latest.json was not moved", markup=False,
                      soft_wrap=True)
    if summary.get("pointer") and not summary["wrote"]:
        console.print(f"{summary['pointer'].rsplit('/', 1)[-1]} now points at this release", markup=False)
