"""Thin Prefect tasks over :mod:`helmflow.pipeline`, keyed by the version hashes of design.md."""

from helmflow.tasks.evaluation import configure, forget_cached, prepare, publish_release, run

__all__ = ["configure", "forget_cached", "prepare", "publish_release", "run"]
