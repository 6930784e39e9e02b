"""What a run takes from its board: one typed :class:`Selection` carried from the command line (or
Prefect's parameter form) through the flow's parameters, ``retry`` and planning."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from helmflow.plan.spec import BoardSpec


class Selection(BaseModel):
    """The part of a board a run takes; every field left unset means the board's own value."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    models: list[str] | None = Field(None, description="deployment names to run (default: the board's `models:`)")
    scenarios: list[str] | None = Field(None, description="scenario labels or names to run (default: all)")
    max_instances: int | None = Field(None, ge=1, description="at most this many instances per scenario "
                                                             "(default: the board's `max_instances:`)")
    judges: list[str] | None = Field(None, description="the jury for LLM-judged metrics (default: the board's "
                                                       "`judges:`)")
    no_judge: bool = Field(False, description="no judges: judge-only metrics stay missing, rule-based ones are "
                                              "computed")
    board_wide: dict[str, str] = Field(default_factory=dict, description=(
        "board-wide metrics by name: the scorer deployment of a metric that reads one, `on` for one that does "
        "not, `none` to drop it (default: the board's own)"))
    adaptive: bool | None = Field(None, description="adaptive testing: ask each model the items that tell most about "
                                                     "its ability (Rasch model), at most max_instances of them; false: "
                                                     "full runs on a board that declares `adaptive:` (default: the "
                                                     "board's own)")
    model_ability: float = Field(0.0, description="the initial ability of an adaptive run")
    batch: bool = Field(False, description="every deployment with a batch API (openai, anthropic; judges too) sends "
                                           "through it, as with `batch: true` (the results are the same requests')")

    @model_validator(mode="after")
    def _one_jury(self) -> Selection:
        if self.judges and self.no_judge:
            raise ValueError("--judge and --no-judge exclude each other (judges, no_judge)")
        return self

    @property
    def unjudged_allowed(self) -> bool:
        """Judge-backed scenarios may run without a judge (their judge-only metrics stay missing)."""
        return self.no_judge

    def jury(self, board_judges: list[str]) -> list[str]:
        """The judges this run asks: none, the selection's, or the board's."""
        return [] if self.no_judge else list(self.judges if self.judges is not None else board_judges)

    def narrowing(self, spec: BoardSpec, effective: BoardSpec, judged: bool) -> dict[str, Any]:
        """What a run changed from its board as written (models, scenarios, max_instances, judges): the
        fields that differ, with their values. A run with any of these is a subset of the board (its
        release never moves ``latest.json``); ``judged``: the run has judge-backed scenarios."""
        out: dict[str, Any] = {}
        if set(effective.models) != set(spec.models):
            out["models"] = effective.models
        if effective.scenarios != spec.scenarios:
            out["scenarios"] = [e.label or e.name for e in effective.scenarios]
        if effective.max_instances != spec.max_instances:
            out["max_instances"] = effective.max_instances
        if self.adaptive:
            out["adaptive"] = {"max_items": self.max_instances, "model_ability": self.model_ability}
        elif self.adaptive is False and spec.declares_adaptive:  # full runs of a board that is asked adaptively
            out["adaptive"] = False
        if judged and self.no_judge:
            out["no_judge"] = True
        elif effective.judges and effective.judges != spec.judges:
            out["judges"] = effective.judges
        return out

    @classmethod
    def of(cls, selection: Selection | dict[str, Any] | None = None, **fields: Any) -> Selection:
        """``selection`` with ``fields`` replacing its values (plain callers name the fields)."""
        given = selection.model_dump(exclude_unset=True) if isinstance(selection, Selection) else dict(selection or {})
        return cls.model_validate({**given, **fields})

    @classmethod
    def from_parameters(cls, parameters: dict[str, Any]) -> Selection:
        """The selection of a flow run's parameters: its ``selection``, or the separate parameters a
        flow run made before the selection was one parameter (``models``, ..., a board-wide metric's
        scorer under the metric's name)."""
        if "selection" in parameters:
            return cls.of(parameters["selection"])
        from helmflow.metrics import METRICS

        flat = {k: v for k, v in parameters.items() if k in cls.model_fields and v is not None}
        board_wide = {k: v for k, v in parameters.items()
                      if v is not None and k in METRICS and METRICS.get(k).board_wide is not None}
        return cls.of(flat, **({"board_wide": board_wide} if board_wide else {}))

    def key(self) -> dict[str, Any]:
        """The selection as JSON, every field present (so equal selections compare equal)."""
        return self.model_dump(mode="json")


def narrowed(fields: dict[str, Any]) -> str:
    """How a release narrowed its board (``BoardPlan.selection``, a release's ``selection``), one line:
    ``models=a,b; max_instances=2``, ``adaptive=max_items:10,model_ability:0.0``."""
    def text(v: Any) -> str:
        if isinstance(v, list):
            return ",".join(map(str, v))
        if isinstance(v, dict):  # adaptive's settings: max_items:10,model_ability:0.0
            return ",".join(f"{k}:{x}" for k, x in v.items())
        return str(v)

    return "; ".join(f"{k}={text(v)}" for k, v in fields.items())
