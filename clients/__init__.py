"""Client kinds (one module each) and the deployment registry (YAML: shipped file + user file)."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from helmflow.clients.base import Client, ClientError, ClientResult, PermanentError, TransientError
from helmflow.errors import HelmflowError, format_validation_error, read_yaml_file
from helmflow.media import MediaStore
from helmflow.records import Deployment
from helmflow.registry import Registry
from helmflow.settings import settings
from helmflow.storage import Store

log = logging.getLogger("helmflow")

CLIENTS: Registry[type[Client]] = Registry("client kind")
SHIPPED_DEPLOYMENTS = Path(__file__).with_name("deployments.yaml")

_BUILTIN = [
    "offline",
    "openai",
    "openai_compatible",
    "anthropic",
    "huggingface",
    "diffusers_pipeline",
    "perspective",
    "profanity",
]


class DeploymentError(HelmflowError, ValueError):
    """A models file or deployment entry that cannot be used; the message names file and entry."""


def client_kind(name: str):
    def deco(cls: type[Client]) -> type[Client]:
        CLIENTS.add(name, cls)
        return cls

    return deco


def _read_file(path: Path) -> list[dict[str, Any]]:
    data = read_yaml_file(path, "models file", DeploymentError)
    if not isinstance(data, dict) or not isinstance(data.get("deployments"), list):
        raise DeploymentError(f"models file {path} must be a mapping with a 'deployments:' list")
    unknown = set(data) - {"deployments"}
    if unknown:
        raise DeploymentError(f"models file {path}: unknown top-level keys {sorted(unknown)}")
    return data["deployments"]


def _parse(path: Path, entries: list[Any]) -> dict[str, Deployment]:
    out: dict[str, Deployment] = {}
    for i, entry in enumerate(entries):
        where = f"models file {path}, entry {i + 1}"
        if not isinstance(entry, dict):
            raise DeploymentError(f"{where}: expected a mapping, got {type(entry).__name__}")
        if "name" in entry:
            where += f" ({entry['name']!r})"
        try:
            dep = Deployment.model_validate(entry)
        except ValidationError as exc:
            raise DeploymentError(f"{where}: {format_validation_error(exc)}") from None
        if dep.client not in CLIENTS:
            raise DeploymentError(f"{where}: unknown client kind {dep.client!r}; known: {', '.join(CLIENTS.names())}")
        problem = CLIENTS.get(dep.client).reasoning_problem(dep)
        if dep.batch and not CLIENTS.get(dep.client).batch_limits[0]:
            problem = f"batch: client kind {dep.client!r} has no batch API (openai and anthropic have one)"
        if dep.prompt_cache and not CLIENTS.get(dep.client).prompt_cache_marks:
            problem = (f"prompt_cache: client kind {dep.client!r} marks no cache breakpoints (anthropic does; OpenAI "
                       f"caches prompts of 1,024 tokens or more by itself)")
        if problem:
            raise DeploymentError(f"{where}: {problem}")
        if dep.name in out:
            raise DeploymentError(f"{where}: duplicate deployment name {dep.name!r}")
        out[dep.name] = dep
    return out


def load_deployments(models_file: str | os.PathLike | None = None) -> dict[str, Deployment]:
    """Shipped deployments, overridden by ``models_file`` (or $HELMFLOW_MODELS) with one warning each."""
    deployments = _parse(SHIPPED_DEPLOYMENTS, _read_file(SHIPPED_DEPLOYMENTS))
    user = models_file or settings().models
    if user:
        path = Path(user)
        for name, dep in _parse(path, _read_file(path)).items():
            if name in deployments:
                log.warning("models file %s overrides the shipped deployment %r", path, name)
            deployments[name] = dep
    return deployments


def preload_sdks(deployments: Iterable[Deployment]) -> threading.Thread | None:
    """Import the deployments' clients' ``sdk_modules`` on a daemon thread, now.

    A client imports its SDK on its first request, on the I/O loop, where the import holds up every
    request behind it (``openai`` alone took 1.6 s there in a profiled Dyck run at load 8). The CLI
    calls this before it waits for Prefect's temporary server, so the imports use that wait instead.
    A module that fails to import is left alone: the client's own import reports it where it belongs.
    """
    modules = list(dict.fromkeys(m for d in deployments for m in CLIENTS.get(d.client).sdk_modules))
    if not modules:
        return None

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - reported by the client on its first request
                continue

    thread = threading.Thread(target=load, name="helmflow-preload", daemon=True)
    thread.start()
    return thread


def make_client(deployment: Deployment, store: Store | None = None) -> Client:
    """The deployment's client, reading a request's images from ``store`` (None: requests without images)."""
    return CLIENTS.get(deployment.client)(deployment, MediaStore(store))


for _module in _BUILTIN:
    importlib.import_module(f"helmflow.clients.{_module}")

__all__ = [
    "CLIENTS",
    "Client",
    "ClientError",
    "ClientResult",
    "DeploymentError",
    "PermanentError",
    "TransientError",
    "client_kind",
    "load_deployments",
    "make_client",
    "preload_sdks",
]
