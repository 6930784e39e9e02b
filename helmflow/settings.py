"""Every ``HELMFLOW_*`` environment variable, read in one place (pydantic-settings).

:func:`settings` reads the environment when it is called, not when a module is imported: a worker,
a test or the CLI may set a variable after helmflow was imported. The README lists the variables.
"""

from __future__ import annotations

import os
import re

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "HELMFLOW_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    storage: str | None = None  # the storage root URL (else ./helmflow-store)
    storage_retry_s: str = ""  # seconds an object-store call retries through an outage (helmflow.storage checks it)
    models: str | None = None  # an extra deployments YAML file, like --models-file
    plugins: str = ""  # plugin modules or .py files, os.pathsep-separated, like --plugin (read by plugin_specs)
    mirror: str | None = None  # a dataset mirror root: <root>/<scenario>/<revision>/<file>
    tiktoken_mirror: str | None = None  # a folder, s3:// or hf:// prefix holding tiktoken's BPE files
    github_raw: str = "https://raw.githubusercontent.com"  # the host of GitHub-pinned dataset files
    lease_ttl_s: float = Field(60.0, gt=0)  # an S3 run lease unrenewed this long is stale (its holder died)
    # a host serving web sources at /<original host>/<original path>: an artifact proxy, or a local server in tests
    source_host: str | None = None
    spool: str | None = None  # the journal's local spool folder (else <tmp>/helmflow-spool)
    task_runner: str = "thread"  # a worker's task runner: thread, dask or dask:<scheduler address>
    dask_workers: int = 2  # processes of the local Dask cluster
    # task runs the thread runner executes at once (Prefect's default is unbounded: a thread per task
    # run, so a 2,000-run board held 2,000 runs' work in memory at once); requests within a run fan out
    # on their own, under each deployment's limiter
    task_threads: int = Field(16, gt=0)
    report_url: str | None = None  # where `helmflow serve` answers: release-link artifacts point there
    test_fault: str | None = None  # test hooks: after-leaderboard, before-pointer crash release publication midway


def settings() -> Settings:
    """The variables as they are set now."""
    return Settings()


def plugin_specs() -> list[str]:
    """``$HELMFLOW_PLUGINS`` as it is set now, without building every setting: each registry lookup
    asks (a plan of 2,000 runs makes tens of thousands), and :func:`settings` costs milliseconds."""
    value = os.environ.get(f"{PREFIX}PLUGINS", "")
    return [s for s in value.split(os.pathsep) if s]


def scenario_mirror_var(scenario: str) -> str:
    """``HELMFLOW_MIRROR_<NAME>``: one scenario's mirror, e.g. ``HELMFLOW_MIRROR_MMLU_PRO``."""
    return f"{PREFIX}MIRROR_{re.sub(r'[^A-Za-z0-9]', '_', scenario).upper()}"


def scenario_mirror(scenario: str) -> str | None:
    """The per-scenario mirror folder or prefix, if set (a variable per scenario, so not a field)."""
    return os.environ.get(scenario_mirror_var(scenario)) or None
