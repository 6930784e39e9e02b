"""Thin Prefect tasks over :mod:`helmflow.pipeline`, keyed by the version hashes of design.md."""

from helmflow.tasks.evaluation import (
    adapt,
    configure,
    download,
    forget_cached,
    publish_release,
    publish_run,
    query,
    score,
)

__all__ = ["adapt", "configure", "download", "forget_cached", "publish_release", "publish_run", "query", "score"]
