"""What each stage of a board returns: small records of keys, counts and versions (the Parquet files
are the data). They are also Prefect's task results, persisted as JSON (``tasks/results.py`` accepts
exactly the :class:`Outcome` subclasses defined here), so a field added here needs a default.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow import layout


class Outcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def stored(self) -> list[str]:
        """The storage keys (or URLs under the root) this outcome points at. A cached outcome whose
        files are gone (a cleanup of ``work/``, a lifecycle rule) is a cache miss, not a failure."""
        return []


class ScenarioData(Outcome):
    instances_key: str
    files: dict[str, str]

    def stored(self) -> list[str]:
        return [self.instances_key, *self.files.values()]


class PromptSet(Outcome):
    prompts_key: str
    num_prompts: int

    def stored(self) -> list[str]:
        return [self.prompts_key]


class QueryOutcome(Outcome):
    query_key: str
    requests_key: str
    completions_key: str
    num_requests: int
    sent: int
    reused: int
    errors: int
    task_run_id: str | None = None

    def stored(self) -> list[str]:
        return [self.requests_key, self.completions_key]


class PreparedScenario(Outcome):
    data: ScenarioData
    prompts: PromptSet

    def stored(self) -> list[str]:
        return [*self.data.stored(), *self.prompts.stored()]


class ScoreOutcome(Outcome):
    score_key: str
    stats_key: str
    summary_key: str
    main_metric: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    task_run_id: str | None = None
    # judging (judge-backed scenarios with a jury): annotations.parquet and what it cost
    annotations_key: str | None = None
    judge_sent: int = 0
    judge_reused: int = 0
    judge_errors: int = 0  # failed judge requests: re-sent on the next run, so the run is not cached
    judge_parse_errors: int = 0  # judge answers that did not parse: per-instance annotation errors
    judge_cost_usd: float = 0.0
    judge_prompt_tokens: int = 0
    judge_output_tokens: int = 0
    # rendering (metrics that draw completions): renders.parquet, the renderers' versions and counts
    renders_key: str | None = None
    renderers: dict[str, str] = Field(default_factory=dict)
    rendered: int = 0
    render_reused: int = 0
    render_failed: int = 0

    def stored(self) -> list[str]:
        return [self.stats_key, self.summary_key, *([self.annotations_key] if self.annotations_key else []),
                *([self.renders_key] if self.renders_key else [])]


class RunOutcome(Outcome):
    run_id: str
    scenario: str
    deployment: str
    status: Literal["complete", "errors"]
    uri: str
    main_metric: str
    score: float | None
    ci_low: float | None
    ci_high: float | None
    error_rate: float
    cost_usd: float
    prompt_tokens: int
    output_tokens: int
    judge_cost_usd: float = 0.0
    wrote: bool = True
    reasoning_tokens: int = 0
    instances: int | None = None  # scored for the main metric
    truncated_in_reasoning: float | None = None  # share of instances (None: no reasoning options)
    ability: float | None = None  # adaptive runs: the Rasch ability after the last item asked
    ability_se: float | None = None  # and its standard error
    full_score: float | None = None  # and the main score of the same cell's full run, when one is published

    @property
    def correct(self) -> float | None:
        """Correct answers: the main metric's mean times its instances (None without both)."""
        if self.score is None or self.instances is None:
            return None
        return self.score * self.instances

    def stored(self) -> list[str]:
        return [layout.run_file(self.run_id, name) for name in (*layout.RUN_FILES, layout.RUN_JSON)]


class FailedCell(Outcome):
    run_id: str
    scenario: str
    deployment: str
    error: str


class ScenarioOutcome(Outcome):
    """A scenario subflow's cells: published (``cached``: the run ids reused from an earlier run) or failed."""

    published: list[RunOutcome] = Field(default_factory=list)
    cached: list[str] = Field(default_factory=list)
    failed: list[FailedCell] = Field(default_factory=list)


class ReleaseOutcome(Outcome):
    release_id: str
    uri: str
    status: Literal["complete", "partial"]
    wrote: bool
    subset: bool = False  # a narrower run than the board's (see BoardPlan.selection)
    pointer: str | None = None  # the pointer this publication moved (None: already in place)
    table: list[dict[str, Any]] = Field(default_factory=list)

    def stored(self) -> list[str]:
        return [f"{self.uri}/{name}" for name in ("leaderboard.parquet", "runs.parquet", layout.RELEASE_JSON)]
