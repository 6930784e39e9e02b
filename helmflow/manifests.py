"""The published JSON records: ``run.json``, ``release.json`` and the ``latest*.json`` pointers.

Written by the pipeline and read by ``lineage``, ``retry`` and the web report through these models,
never by string keys. Other tools read them through the JSON Schemas in ``docs/schemas/`` (written
by :func:`write_schemas`; a test checks they are current).

Extending: add a field with a default (older files still validate) and regenerate the schemas.
Unknown fields are kept (``extra="allow"``), so a file written by a newer helmflow survives being read
by an older one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator


class Manifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# --------------------------------------------------------------------------- run.json
class RunScenario(Manifest):
    name: str
    label: str
    params: dict[str, Any] = Field(default_factory=dict)


class RunDeployment(Manifest):
    """The deployment as published: what identifies the model, never where its credential lives."""

    name: str
    client: str
    model: str
    revision: str = ""
    tokenizer: str | None = None
    context_window: int | None = None
    reasoning: dict[str, Any] | None = None  # a reasoning model's options (effort, budget_tokens, mode, parser)


class RunCounts(Manifest):
    requests: int = 0
    sent: int = 0
    reused: int = 0
    errors: int = 0


class Tokens(Manifest):
    prompt: int = 0
    output: int = 0  # includes the reasoning tokens
    reasoning: int = 0
    cached: int = 0  # of the prompt tokens, read from the provider's cache


class RunScorer(RunDeployment):
    """A board-wide metric's scorer deployment and the template it was asked with."""

    template: str


LEGACY_SCORER = "_scorer"  # manifests written before board-wide metrics were generic: ``<metric>_scorer``


def _legacy_scorers(data: Any, field: str) -> Any:
    """``<metric>_scorer: value`` (the old spelling) read as ``field: {<metric>: value}``."""
    if not isinstance(data, dict):
        return data
    old = [k for k in data if isinstance(k, str) and k.endswith(LEGACY_SCORER)]
    if not old:
        return data
    moved = {k.removesuffix(LEGACY_SCORER): data[k] for k in old if data[k]}
    return {**{k: v for k, v in data.items() if k not in old}, field: {**moved, **(data.get(field) or {})}}


class RunJudges(Manifest):
    deployments: list[RunDeployment] = Field(default_factory=list)
    templates: dict[str, str] = Field(default_factory=dict)  # template name -> VERSION
    scorers: dict[str, RunScorer] = Field(default_factory=dict)  # board-wide metric -> its scorer

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _legacy_scorers(data, "scorers")
    sent: int = 0
    reused: int = 0
    request_errors: int = 0
    parse_errors: int = 0
    tokens: Tokens = Field(default_factory=Tokens)


class RunRenders(Manifest):
    """The renders behind a run's image metrics (``renders.parquet`` lists each one)."""

    renderers: dict[str, str] = Field(default_factory=dict)  # renderer -> its VERSION
    rendered: int = 0  # completions the renderers drew in this scoring
    reused: int = 0  # completions whose render was read back from the render cache
    failed: int = 0  # completions that did not compile


class RunVersions(Manifest):
    scenario_version: str
    prompt_version: str
    model_version: str
    metric_version: str
    run_id: str


class RunDataset(Manifest):
    revision: str
    checksums: dict[str, str] = Field(default_factory=dict)
    # file -> why it is not known to be the pinned data (a mirror without a matching manifest); empty: verified
    unverified: dict[str, str] = Field(default_factory=dict)


class RunLineage(Manifest):
    """Where the run came from; the Prefect ids are added by the publishing task (extra fields allowed)."""

    helmflow_version: str
    git_commit: str | None = None
    query_key: str
    score_key: str
    published_at: str
    flow_run_id: str | None = None
    query_task_run_id: str | None = None
    score_task_run_id: str | None = None
    publish_task_run_id: str | None = None


class HelmCheck(Manifest):
    """One of HELM's numbers recomputed by helmflow on the imported completions."""

    metric: str
    split: str
    helm: float | None
    helmflow: float | None
    equal: bool


class ImportedRun(Manifest):
    """Where an imported run came from (``helmflow import-helm``, ``import-inspect``): HELM's run spec
    (or the Inspect log's task, model, versions and packages) verbatim, the source, the sha256 of every
    source file read, and the recomputation of the source's numbers (``HelmCheck.helm`` is the source's)."""

    format: Literal["helm", "inspect"] = "helm"
    source: str
    run_spec: dict[str, Any]
    sha256: dict[str, str] = Field(default_factory=dict)  # source file name -> sha256 of its bytes
    checks: list[HelmCheck] = Field(default_factory=list)
    unchecked: list[str] = Field(default_factory=list)  # HELM stat names no helmflow metric reproduces
    skipped_request_states: int = 0  # perturbed request states: their stats are imported, not their requests
    # the perturbations the run's ``<metric>~<perturbation>~<computed_on>`` stats name: our name -> HELM's
    # PerturbationDescription as it wrote it, without computed_on (so export writes HELM's stats back)
    perturbations: dict[str, dict[str, Any]] = Field(default_factory=dict)


class RunManifest(Manifest):
    """``runs/<run_id>/run.json``: the run's commit marker, written last."""

    run_id: str
    status: Literal["complete", "errors"]
    scenario: RunScenario
    deployment: RunDeployment
    adapter: dict[str, Any]  # the AdapterSpec as data
    metrics: dict[str, str]  # metric name -> VERSION
    main_metric: str
    score: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    counts: RunCounts = Field(default_factory=RunCounts)
    error_rate: float = 0.0
    cost_usd: float = 0.0
    tokens: Tokens = Field(default_factory=Tokens)
    # instances scored for the main metric (test split, else the only one), and the share of them whose
    # output budget ran out while the model was still reasoning (None: not a reasoning deployment)
    instances: int | None = None
    truncated_in_reasoning: float | None = None
    judge_cost_usd: float = 0.0
    judges: RunJudges = Field(default_factory=RunJudges)
    renders: RunRenders | None = None  # runs whose metrics render completions (LaTeX, web pages, music sheets)
    versions: RunVersions
    dataset: RunDataset
    lineage: RunLineage
    files: list[str] = Field(default_factory=list)  # storage keys of the run's Parquet files
    # file name (next to run.json) -> sha256 of the bytes published; readers verify before reading
    sha256: dict[str, str] = Field(default_factory=dict)
    # set for a run imported from another tool's output (its versions are then marked "imported-…")
    imported: ImportedRun | None = None


# --------------------------------------------------------------------------- release.json
class FailedCellRecord(Manifest):
    run_id: str
    scenario: str
    deployment: str
    error: str


class MetricGroupColumn(Manifest):
    scenario: str  # a scenario label
    metric: str
    lower_is_better: bool | None = False  # None: no better direction, not ranked
    description: str = ""  # one line: what the column measures (the report shows it)


class MetricGroupRecord(Manifest):
    """A metric group as published: its leaderboard columns are ``<scenario>/<metric>`` and ``<name> mean_win_rate``."""

    name: str
    description: str = ""
    columns: list[MetricGroupColumn] = Field(default_factory=list)
    aggregation: list[str] = Field(default_factory=lambda: ["win_rate"])  # ``mean`` adds ``<name> mean``

    @model_serializer(mode="wrap")
    def _default_aggregation_unsaid(self, handler: Any) -> Any:
        """The default (win rate) is not written: releases of tables that declare none read as before."""
        data = handler(self)
        if isinstance(data, dict) and data.get("aggregation") == ["win_rate"]:
            del data["aggregation"]
        return data


class ReleaseManifest(Manifest):
    """``leaderboards/<board>/<release>/release.json``."""

    board: str
    board_version: str
    declared_version: str = ""
    release_id: str
    created_at: str
    helmflow_version: str
    git_commit: str | None = None
    status: Literal["complete", "partial"]
    scenarios: list[str] = Field(default_factory=list)  # labels, in board order
    models: list[str] = Field(default_factory=list)
    run_ids: list[str] = Field(default_factory=list)  # sorted
    failed: list[FailedCellRecord] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list)
    # the board-wide metrics the release turned on: metric -> its scorer deployment, or true
    board_wide: dict[str, str | bool] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _legacy_scorers(data, "board_wide")
    metric_groups: list[MetricGroupRecord] = Field(default_factory=list)
    content_warning: bool = False  # a scenario has harmful prompts by design (``unsafe_text``)
    cost_usd: float = 0.0
    judge_cost_usd: float = 0.0
    # grouped boards (VHELM): leaderboard column -> the scenario labels it averages; aspect -> its columns
    groups: dict[str, list[str]] = Field(default_factory=dict)
    aspects: dict[str, list[str]] = Field(default_factory=dict)
    # deployment name -> what its models file says of the model (creator, parameters, release date,
    # access, link): information the board page shows, as it was when the release was published
    model_metadata: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # A subset run narrowed the board (BoardPlan.selection, from Selection.narrowing); its release
    # never moves latest.json / latest-partial.json.
    subset: bool = False
    selection: dict[str, Any] = Field(default_factory=dict)
    # file name (leaderboard.parquet, runs.parquet) -> sha256 of the bytes published
    sha256: dict[str, str] = Field(default_factory=dict)
    # scenario label -> {file: why it is not known to be the pinned data}; empty when every file is verified
    unverified_data: dict[str, dict[str, str]] = Field(default_factory=dict)
    # the sources of an imported board's runs (``helmflow import-helm --board``); empty for boards run here
    imported_from: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- latest.json
class LatestPointer(Manifest):
    """``leaderboards/<board>/latest.json`` (complete) or ``latest-partial.json``; a subset run's
    ``latest-subset.json`` / ``latest-subset-partial.json``."""

    release_id: str
    uri: str
    status: Literal["complete", "partial"]
    created_at: str
    subset: bool = False
    selection: dict[str, Any] = Field(default_factory=dict)


SCHEMAS: dict[str, type[Manifest]] = {"run": RunManifest, "release": ReleaseManifest, "latest": LatestPointer}
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "docs" / "schemas"


def json_schema(name: str) -> dict[str, Any]:
    model = SCHEMAS[name]
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"helmflow {name}.json"
    return schema


def schema_text(name: str) -> str:
    return json.dumps(json_schema(name), indent=2, sort_keys=True) + "\n"


def write_schemas(folder: Path = SCHEMA_DIR) -> list[Path]:
    """``python -m helmflow.manifests``: (re)write docs/schemas/<name>.schema.json."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in SCHEMAS:
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(name))
        out.append(path)
    return out


if __name__ == "__main__":
    for written in write_schemas():
        print(written)
