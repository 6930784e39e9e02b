"""Every ``HELMFLOW_*`` environment variable, read in one place (pydantic-settings).

:func:`settings` reads the environment when it is called, not when a module is imported: a worker,
a test or the CLI may set a variable after helmflow was imported. The documentation's configuration
reference lists them, generated from the fields' descriptions.
"""

from __future__ import annotations

import os
import re

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "HELMFLOW_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")

    storage: str | None = Field(None, description="the storage root URL: a folder or `s3://bucket/prefix` "
                                                  "(`--storage` wins; else ./helmflow-store)")
    storage_retry_s: str = Field("", description="seconds an object-store call retries through an outage "
                                                 "(default 300; helmflow.storage checks the value)")
    models: str | None = Field(None, description="an extra deployments YAML file, like `--models-file`")
    plugins: str = Field("", description="plugin modules or .py files, `:`-separated, like `--plugin`")
    mirror: str | None = Field(None, description="a dataset mirror root: file F of scenario S at revision R is "
                                                 "read from `<root>/S/R/F`")
    tiktoken_mirror: str | None = Field(None, description="a folder, `s3://` or `hf://` prefix holding tiktoken's "
                                                          "BPE files (offline machines)")
    github_raw: str = Field("https://raw.githubusercontent.com",
                            description="the host of GitHub-pinned dataset files (a proxy or a test server)")
    lease_ttl_s: float = Field(60.0, gt=0, description="an S3 board lease not renewed for this many seconds is "
                                                       "stale: its holder died (renewed every quarter of it)")
    source_host: str | None = Field(None, description="a host serving web dataset sources (https files, archives) "
                                                      "at `/<original host>/<original path>`: an artifact proxy, "
                                                      "or a local server in tests")
    assets_url: str = Field("https://storage.googleapis.com/crfm-helm-public/source_datasets/augmentations",
                            description="where `helmflow fetch-assets perturbations` downloads HELM's perturbation "
                                        "files from (`<url>/<HELM's folder>/<file>`): HELM's bucket, a proxy or a "
                                        "local server")
    import_max_mb: float = Field(256.0, gt=0, description="the largest HELM file `helmflow import-helm` reads, in "
                                                         "MB (each is parsed whole, at about 7x its size in memory)")
    spool: str | None = Field(None, description="the request journal's local spool folder (else "
                                                "`<tmp>/helmflow-spool`)")
    task_runner: str = Field("thread", description="a worker's task runner: `thread`, `dask` or "
                                                   "`dask:<scheduler address>` (`--task-runner` wins)")
    dask_workers: int = Field(2, description="processes of the local Dask cluster")
    # Prefect's default is unbounded: a thread per task run, so a 2,000-run board held 2,000 runs' work in memory
    task_threads: int = Field(16, gt=0, description="task runs the thread runner executes at once (requests within "
                                                    "a run fan out on their own, under each deployment's limiter)")
    subflows: bool = Field(True, description="a subflow run per scenario of the board in the Prefect UI (a graph that "
                                             "reads at board scale, about ten API requests per scenario; the thread "
                                             "task runner only, Dask keeps the flat graph); false: every task run "
                                             "at the board's top level")
    report_url: str | None = Field(None, description="where `helmflow serve` answers: the release-link artifacts "
                                                     "in the Prefect UI point there")
    ephemeral: bool = Field(False, description="like `--ephemeral` on every command: Prefect's temporary server, "
                                               "which stops with the command, instead of helmflow's managed one")
    server_port: int = Field(4200, gt=0, lt=65536,
                             description="the port helmflow's managed Prefect server asks for (when it is taken "
                                         "by another program the server takes a free one and records it)")
    server_idle_timeout_s: float = Field(3600.0, ge=0,
                                         description="helmflow's managed Prefect server stops itself after this "
                                                     "many seconds without an API request (0: never)")
    server_worker: bool = Field(True, description="helmflow's managed Prefect server also runs a Prefect worker, "
                                                  "so the UI's Retry button re-executes a failed `helmflow run` "
                                                  "(0: no worker, no Retry button on those runs)")
    server_startup_timeout_s: float = Field(180.0, gt=0,
                                            description="how long a command waits for helmflow's managed Prefect "
                                                        "server to answer before it says so and exits 3")
    render_keep: str | None = Field(None, description="a folder where each render of a model's answer (LaTeX, web "
                                                      "page, music sheet) keeps its scratch folder (the answer as "
                                                      "written, TeX's log, the screenshot) for inspection, one "
                                                      "folder per renderer run, instead of removing it")
    clip_model: str | None = Field(None, description="the CLIP checkpoint HEIM's CLIPScore scores images with: "
                                   "`openai/clip-vit-large-patch14` (HELM's, at a pinned revision, about 1.7 GB "
                                   "from the Hub), `ID@REVISION`, or a local folder with a saved `CLIPModel` and "
                                   "`CLIPProcessor` (needs the `hf` extra; unset: CLIPScore is not available)")
    aesthetics_head: str | None = Field(None, description="LAION's aesthetics head HEIM's aesthetics metric scores "
                                        "CLIP image embeddings with: a file holding the linear layer's state dict "
                                        "(HELM's `sa_0_4_vit_l_14_linear.pth`, 4 KB; needs `HELMFLOW_CLIP_MODEL` too; "
                                        "unset: aesthetics is not available)")
    nudenet_model: str | None = Field(None, description="NudeNet's classifier HEIM's nudity metric reads images "
                                      "with: the file `classifier_model.onnx` (NudeNet 2's, as HELM uses it; needs "
                                      "the `heim` extra; unset: nudity_frac is not available)")
    watermark_model: str | None = Field(None, description="LAION's watermark detector HEIM's watermark metric reads "
                                        "images with: the state dict file `watermark_model_v1.pt` (as HELM uses it; "
                                        "unset: watermark_frac is not available)")
    q16_prompts: str | None = Field(None, description="Q16's learned prompt embeddings the q16 metric compares CLIP "
                                    "image embeddings with: HELM's `prompts.p` (a pickled numpy array, read as "
                                    "arrays only; needs `HELMFLOW_CLIP_MODEL` too; unset: q16_inappropriate_frac "
                                    "is not available)")
    regression_threshold: float = Field(0.0, ge=0, description="a published cell counts as regressed (the "
                                        "`helmflow.cell.regressed` event) when its paired change against the "
                                        "previous release is significantly below 0 and a drop of at least this "
                                        "much of its main metric (e.g. `0.02`)")

# the last environment read (its HELMFLOW_* variables) and the settings built from it
_LAST: dict[tuple[tuple[str, str], ...], Settings] = {}


def settings() -> Settings:
    """The variables as they are set now; a value that does not parse is one line naming its variable.

    Building :class:`Settings` reads and validates every variable (milliseconds; ``helmflow run demo``
    asked about a hundred times), so the settings of the environment's current ``HELMFLOW_*`` variables
    (any case, as pydantic-settings matches them) are kept and a copy returned: a variable set, changed
    or removed since is read at the next call."""
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k[:len(PREFIX)].upper() == PREFIX))
    built = _LAST.get(key)
    if built is None:
        from pydantic import ValidationError

        from helmflow.errors import HelmflowError, format_validation_error

        try:
            built = Settings()
        except ValidationError as exc:
            names = {name: f"${PREFIX}{name.upper()}" for name in Settings.model_fields}
            raise HelmflowError(format_validation_error(exc, names)) from None
        _LAST.clear()
        _LAST[key] = built
    return built.model_copy()


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
