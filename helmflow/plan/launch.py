"""Everything a board run checks before its first task, in one place: :func:`prepare_launch` plans
the board, checks credentials and storage, refuses changed or (when asked) unverified data, runs the
download stage (:func:`helmflow.pipeline.preflight`) and looks up an identical published release.

``helmflow run`` calls it, then starts the flow inside :func:`handing_over`; the flow calls
:func:`launch_for` first and prepares for itself only when nothing was handed to it (a worker, a
retry, a deployment), so a board is planned and checked once per command. The hand-over is scoped
to that call (a context variable), never a module-level cache.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from helmflow import versions
from helmflow.plan.selection import Selection
from helmflow.plan.spec import BoardError

if TYPE_CHECKING:
    from helmflow.plan.records import BoardPlan
    from helmflow.storage import Store


@dataclass
class Launch:
    """A board ready to run: its plan (after the download stage), its store and what was found."""

    plan: BoardPlan
    store: Store
    unverified: list[str] = field(default_factory=list)  # one line per source file not known to be the pinned data
    dropped: int = 0  # perturbed copies left out: they changed no sampled instance
    published: dict[str, Any] | None = None  # the identical release already published, when looked up


def unverified_lines(plan: BoardPlan) -> list[str]:
    """One line per source file whose bytes are not known to be the pinned data."""
    return [f"{s.label}: {name}: {why}" for s in plan.scenarios for name, why in s.unverified.items()]


def missing_credentials(deployments) -> list[str]:
    """One message per deployment whose credential is not there (by name), before any work."""
    from helmflow.clients import make_client
    from helmflow.clients.base import ClientError

    problems = []
    for d in {d.name: d for d in deployments}.values():
        try:
            make_client(d).check_credentials()
        except ClientError as exc:
            problems.append(str(exc))
    return problems


def prepare_launch(
    board: str | dict[str, Any],
    selection: Selection | None = None,
    storage: str | None = None,
    *,
    models_file: str | None = None,
    plugins: list[str] | None = None,
    credentials: bool = True,
    require_verified_data: bool = False,
    look_up_release: bool = True,
    status: Callable[[str], contextlib.AbstractContextManager[Any]] | None = None,
) -> Launch:
    """Plan ``board`` narrowed by ``selection`` and check it against ``storage`` before anything is
    sent (all bad input is a :class:`BoardError`, exit 2): ``credentials`` refuses a deployment whose key is not set (a
    worker leaves that to its cells), ``require_verified_data`` refuses unverified source files
    (reproduce), ``look_up_release`` finds the identical published release (``helmflow run``
    then starts no flow). ``status`` wraps the download stage (the CLI's spinner)."""
    from helmflow.datasets import check_stored_pins
    from helmflow.perturbations import assets_from
    from helmflow.pipeline import preflight
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    with assets_from(storage):  # perturbation data fetched into this root (helmflow fetch-assets)
        plan = prepare(board, selection, models_file=models_file, plugins=plugins)
    if credentials:
        missing = missing_credentials(r.deployment for r in plan.runs)
        if missing:  # before the flow starts, so no cell spends anything on a board that cannot finish
            raise BoardError("; ".join(missing))
    store = Store(storage)
    store.check_writable()
    check_stored_pins(store, plan.scenarios)  # data changed under this storage: bad input, before any work
    unverified = unverified_lines(plan)
    if unverified and require_verified_data:
        raise BoardError("unverified data (reproduce needs the pinned data; pass --allow-unverified-data to run "
                         "anyway): " + "; ".join(unverified))
    planned = len(plan.perturbed)
    with (status or (lambda _what: contextlib.nullcontext()))("checking scenario data"):
        # bad data is bad input (exit 2) before Prefect starts; perturbed copies that changed no
        # sampled instance leave the plan
        plan = preflight(store, plan)
    if any(r.adaptive is not None for r in plan.runs):  # after pre-flight (it drops perturbed copies that change
        from helmflow.calibration import check_calibrated  # nothing), before any request

        check_calibrated(store, plan, board if isinstance(board, str) else plan.spec.name)
    published = None
    if look_up_release:
        from helmflow.uptodate import published_release

        published = published_release(store, plan)
    return Launch(plan=plan, store=store, unverified=unverified, dropped=planned - len(plan.perturbed),
                  published=published)


# --------------------------------------------------------------------------- handed to the flow started here
_HANDED: ContextVar[tuple[str, Launch] | None] = ContextVar("helmflow_launch", default=None)


def launch_key(board: Any, selection: Selection | dict[str, Any] | None, storage: str | None,
               models_file: str | None = None, plugins: list[str] | None = None) -> str:
    """What a launch was prepared from: the board as passed, the selection, the storage root and the
    deployments and plugins (a budget does not shape the plan)."""
    from helmflow.storage import resolve_root

    return versions.canonical_json({"board": board, "selection": Selection.of(selection).key(),
                                    "storage": resolve_root(storage), "models_file": models_file,
                                    "plugins": list(plugins or [])})


@contextlib.contextmanager
def handing_over(launch: Launch, key: str) -> Iterator[None]:
    """The flow started inside this block with parameters of the same :func:`launch_key` takes
    ``launch`` instead of preparing again."""
    token = _HANDED.set((key, launch))
    try:
        yield
    finally:
        _HANDED.reset(token)


def launch_for(key: str) -> Launch | None:
    """The launch handed over for exactly ``key``, else None (the flow then prepares for itself)."""
    handed = _HANDED.get()
    return handed[1] if handed is not None and handed[0] == key else None
