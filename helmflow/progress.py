"""Progress of long work, reported from tasks to whoever is watching (the CLI draws it with rich).

Tasks run in threads of the same process as the CLI, so a process-wide reporter is enough; under a
worker nobody watches and the reporter is a no-op.
"""

from __future__ import annotations

import logging
import threading

#: a log record's attribute marking a failure the CLI reports itself, once (see quiet_reported_failures)
REPORTED = "helmflow_reported"
#: failures the CLI reports itself: their tracebacks and state lines stay in the Prefect UI only
REPORTED_ERRORS = ("QueryFailed", "RunRefused", "JudgeFailed", "PartialRelease", "StorageFull", "CellsFailed")


class _ReportedFailures(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, REPORTED, False):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__name__ in REPORTED_ERRORS:
            return False
        # Prefect's "Finished in state Failed('... QueryFailed: ...')", and its "Failed to write result: Failed
        # to serialize object of type 'QueryFailed'" (task results are outcomes only: a failure is not one)
        message = record.getMessage()
        return not any(f"{name}:" in message or f"{name}(" in message or f"type '{name}'" in message
                       for name in REPORTED_ERRORS)


def quiet_reported_failures() -> None:
    """Keep the terminal to one message per failure: failed pairs are summarized by the CLI at the
    end (grouped by error), so Prefect's per-task tracebacks for them are not printed. The Prefect
    API log handler is a different handler: the UI still has every line."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _ReportedFailures) for f in handler.filters):
            handler.addFilter(_ReportedFailures())


class Reporter:
    def add_requests(self, n: int) -> None: ...
    def requests_done(self, n: int) -> None: ...
    def set_runs(self, total: int) -> None: ...
    def run_done(self, label: str) -> None: ...


class _Holder:
    reporter: Reporter = Reporter()
    lock = threading.Lock()


def set_reporter(reporter: Reporter | None) -> None:
    _Holder.reporter = reporter or Reporter()


def reporter() -> Reporter:
    return _Holder.reporter


class RichReporter(Reporter):
    """Two bars: runs done / total and requests done / total (the total grows as pairs are adapted)."""

    def __init__(self, console=None):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._runs = self.progress.add_task("runs", total=0)
        self._requests = self.progress.add_task("requests", total=0)
        self._lock = threading.Lock()

    def __enter__(self) -> RichReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def set_runs(self, total: int) -> None:
        self.progress.update(self._runs, total=total)

    def run_done(self, label: str) -> None:
        self.progress.advance(self._runs)

    def add_requests(self, n: int) -> None:
        with self._lock:
            total = (self.progress.tasks[self._requests].total or 0) + n
            self.progress.update(self._requests, total=total)

    def requests_done(self, n: int) -> None:
        self.progress.advance(self._requests, n)
