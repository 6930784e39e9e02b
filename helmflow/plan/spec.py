"""Board specs are data (YAML): the spec's schema, loading, variants and prompt wording.

Everything here is validated up front, before a single request is sent: unknown scenarios, models,
adapter fields or metrics are one clear error each.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from helmflow import prompts as prompt_module
from helmflow.adapters import ADAPTERS
from helmflow.errors import HelmflowError, format_validation_error, read_yaml_file

BOARDS_DIR = Path(importlib.import_module("helmflow.flows").__file__ or "").resolve().parent
OFF = "none"  # a board-wide metric's value that turns it off (``--board-wide <metric>=none``)
ON = "on"  # ... and turns on one that reads no scorer (``true`` in YAML)


class BoardError(HelmflowError, ValueError):
    """A board, scenario or model selection that cannot be run; the message says which and why."""


class NothingHere(BoardError):
    """Every scenario a board would run reads a credential-gated file this machine does not have."""

    def __init__(self, board: BoardSpec, left_out: dict[str, str]):
        self.board, self.left_out = board, left_out
        first, why = next(iter(left_out.items()))
        super().__init__(f"board {board.name!r}: every scenario it would run is credential-gated and not on this "
                         f"machine ({len(left_out)}: {', '.join(left_out)}); {first}: {why}")


DEFAULT_ADAPTIVE_ITEMS = 50  # HELM's documented REEval example: --max-eval-instances 50


class MlflowTracking(BaseModel):
    """Where a board's releases are logged as MLflow runs (``helmflow.tracking``)."""

    model_config = ConfigDict(extra="forbid")
    uri: str = Field(description="the MLflow tracking server (`http://host:5000`) or store URI")
    experiment: str | None = Field(None, description="the experiment (default: the board's name)")


WANDB_PROJECT_BANNED = set("/\\#?%:")  # characters W&B refuses in a project name


class WandbTracking(BaseModel):
    """Where a board's releases are logged as Weights & Biases runs, in W&B's offline mode: run files under
    ``dir`` that ``wandb sync`` uploads (``helmflow.tracking``)."""

    model_config = ConfigDict(extra="forbid")
    project: str = Field(description="the W&B project the runs belong to")
    dir: str | None = Field(None, description="the folder whose `wandb/` holds the offline runs (default: the "
                                              "current directory, as wandb's own)")

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        if not value or len(value) > 128 or WANDB_PROJECT_BANNED & set(value):
            raise ValueError(f"W&B project {value!r}: give 1 to 128 characters, none of / \\ # ? % :")
        return value


class TrackingSpec(BaseModel):
    """Experiment trackers a board's releases are logged to once published (by `helmflow run`, or by a deployment's
    flow run itself)."""

    model_config = ConfigDict(extra="forbid")
    mlflow: MlflowTracking | None = Field(None, description="log each release as an MLflow run")
    wandb: WandbTracking | None = Field(None, description="log each release as an offline W&B run")


class AdaptiveSpec(BaseModel):
    """Adaptive testing declared by a board (docs/adaptive.md): each model answers at most ``max_items``
    items per scenario, each the one nearest even odds under the Rasch model."""

    model_config = ConfigDict(extra="forbid")
    max_items: int = Field(DEFAULT_ADAPTIVE_ITEMS, ge=1, description="at most this many items asked per scenario "
                                                                     "and model (HELM's --max-eval-instances)")
    model_ability: float = Field(0.0, description="the ability each model starts from (HELM's --model-ability)")


class ScenarioEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the scenario's registered name (`helmflow list scenarios`)")
    params: dict[str, Any] = Field(default_factory=dict, description="the scenario's parameters (part of its version), "
                                                                     "e.g. `{subject: anatomy}`")
    adapter: dict[str, Any] = Field(default_factory=dict, description="adapter fields replacing the scenario's "
                                                                      "defaults (see Adapter fields below)")
    main_metric: str | None = Field(None, description="the stat shown in the board's cell (default: the scenario's)")
    metrics: list[str] | None = Field(None, description="the metrics computed (default: the scenario's)")
    label: str | None = Field(None, description="the board's name for this entry (default: the spec string "
                                                "`name:k=v,…`); its leaderboard column")
    group: str | None = Field(None, description="a leaderboard column averaging several entries (HELM's run group, "
                                                "e.g. 30 MMMU subjects)")
    # perturbation sets or names (helmflow.perturbations): ``robustness``, ``fairness`` or a list. Each
    # perturbation is its own run of the perturbed instances; the board gets robustness/fairness columns
    perturbations: str | list[str] | None = Field(None, description="perturbation sets or names (`robustness`, "
                                                                    "`fairness`, or a list): each is a run of the "
                                                                    "perturbed instances, giving robustness and "
                                                                    "fairness columns")
    perturbation_instances: dict[str, int] = Field(default_factory=dict, description=(
        "a perturbation set or name of `perturbations` -> at most this many of the entry's sampled instances are "
        "perturbed by it (the first of HELM's seeded sample, which a smaller sample is a prefix of; HEIM's art "
        "styles: `{art: 17}`, HELM's heim_art_styles)"))
    missing_perturbation_data: Literal["refuse", "leave_out"] = Field("refuse", description=(
        "a perturbation whose data file is not on this machine (not fetched, or a translation table not supplied): "
        "`refuse` the run (default), or `leave_out` that perturbation's run, naming why (HEIM's dialect and "
        "translated MS-COCO entries)"))
    headline: bool = Field(True, description=(
        "the entry counts in the board's mean score and mean win rate; `false`: a targeted run shown only in its own "
        "columns and metric groups (HELM Classic's contrast-set runs, outside its core scenarios)"))
    adaptive: AdaptiveSpec | bool | None = Field(None, description=(
        "adaptive testing of this entry (`true`, or `{max_items: N, model_ability: X}`), or `false` for full runs "
        "on a board that declares `adaptive:` (default: the board's)"))

    @model_validator(mode="after")
    def _capped_perturbations_are_listed(self) -> ScenarioEntry:
        listed = [self.perturbations] if isinstance(self.perturbations, str) else list(self.perturbations or [])
        for name, n in self.perturbation_instances.items():
            if name not in listed:
                raise ValueError(f"perturbation_instances names {name!r}, which is not in perturbations")
            if n < 1:
                raise ValueError(f"perturbation_instances: {name}: give at least 1 instance, not {n}")
        return self


class GroupColumn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: str = Field(description="a scenario entry's label, or a group (the unweighted mean over its entries' "
                                      "runs, HELM's cell)")
    metric: str = Field(description="a stat of that scenario's runs, e.g. `safety_score`, `toxic_fraction`")
    lower_is_better: bool | None = Field(False, description=(
        "the column ranks lower values first (marked ↓); null: it has no better direction (HELM's None, e.g. "
        "self-BLEU): shown, but not ranked, so the table's win rate leaves it out"))
    description: str = Field("", description="one line the report shows with the column (what it measures)")

    @property
    def key(self) -> str:
        """The leaderboard column: ``<scenario label>/<metric>``."""
        return f"{self.scenario}/{self.metric}"


class MetricGroup(BaseModel):
    """A set of leaderboard columns shown together (HELM's metric groups), with its own mean win rate."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="the group's name (lower case, digits, `_`)")
    description: str = Field("", description="one line the report shows with the group")
    columns: list[GroupColumn] = Field(min_length=1, description="the group's columns")
    aggregation: list[Literal["mean", "win_rate"]] = Field(
        default_factory=lambda: ["win_rate"],  # type: ignore[arg-type]  # mypy reads the literals as str
        min_length=1, description="the table's summary columns (HELM's `aggregation_strategies`): `win_rate` "
                                  "(`<name> mean_win_rate`, the default) and/or `mean` (`<name> mean`: the mean "
                                  "of the columns a model has, HELM's row mean)")

    @model_validator(mode="after")
    def _mean_is_one_direction(self) -> MetricGroup:
        """HELM refuses to average columns ranked in opposite directions; so does a table's mean."""
        if "mean" in self.aggregation and len({c.lower_is_better for c in self.columns}) > 1:
            raise ValueError(f"metric group {self.name!r} declares a mean over columns where lower is better and "
                             "columns where higher is: give it win_rate only, or split it")
        return self


#: characters a board's name cannot hold: it names the board's Prefect flow (Prefect refuses these) and folder
NAME_BANNED = "/%&<>"


def entry_adaptive(board: AdaptiveSpec | bool | None, entry: ScenarioEntry) -> AdaptiveSpec | None:
    """The adaptive testing a board declares for one entry: the entry's own, else the board's; None: full runs."""
    value = entry.adaptive if entry.adaptive is not None else board
    if value is None or value is False:
        return None
    return AdaptiveSpec() if value is True else value


class BoardSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the board's name: its flow, its folder under `leaderboards/` "
                                  f"(no {' '.join(NAME_BANNED)})")

    @field_validator("name")
    @classmethod
    def _flow_name(cls, name: str) -> str:
        if not name.strip() or any(c in NAME_BANNED for c in name):
            raise ValueError(f"{name!r} cannot name a board: it names the board's Prefect flow and folder, "
                             f"so it must be non-empty without any of {' '.join(NAME_BANNED)}")
        return name
    version: str = Field(description="bump it when you change the board")
    description: str = Field("", description="one line shown by `helmflow list boards` and `show`")
    models: list[str] = Field(description="deployment names run by default (`--models` replaces them)")
    scenarios: list[ScenarioEntry] = Field(description="the board's scenario entries")
    max_instances: int | None = Field(None, ge=1, description="at most this many instances per scenario "
                                                             "(HELM's seeded sample)")
    adaptive: AdaptiveSpec | bool | None = Field(None, description=(
        "adaptive testing of every entry (`true`, or `{max_items: N, model_ability: X}`): the items are drawn from "
        "the max_instances sample and need `helmflow calibrate-items` first; `helmflow run --no-adaptive` runs the "
        "board in full (default: full runs)"))
    increase_max_tokens: int | None = Field(None, ge=0, description=(
        "tokens added to every request's max_tokens on every model of the board (HELM's `increase_max_tokens` run "
        "expander); replaces each deployment's own (default: 10000 for deployments with `reasoning`, 0 for the "
        "others); 0 turns it off"))
    aggregation: list[Literal["mean", "win_rate"]] = Field(
        default_factory=lambda: ["mean", "win_rate"],  # type: ignore[arg-type]  # mypy reads the literals as str
        description="the board's summary columns: mean score (HELM Capabilities), mean win rate (HELM Classic)")
    judges: list[str] = Field(default_factory=list, description="the jury (deployment names) for LLM-judged "
                                                                "metrics (`--judge` replaces it)")
    # HELM's aspects (VHELM: perception, reasoning, ...): aspect -> the groups (or labels) it ranks
    aspects: dict[str, list[str]] = Field(default_factory=dict, description="HELM's aspects (VHELM: perception, "
                                                                            "reasoning, ...): aspect → the groups "
                                                                            "or labels it ranks")
    # board-wide metrics (declared by their metric's hook): name -> its scorer deployment, or true
    board_wide: dict[str, str | bool | None] = Field(default_factory=dict, description=(
        "board-wide metrics added to every scenario they fit, by metric name: the scorer deployment of a metric "
        "that reads one, `true` for one that does not, null or `none` for off. Each may also be given as a "
        "top-level key named after the metric (`<metric>: local/profanity-check`, `<metric>: true`)"))
    metric_groups: list[MetricGroup] = Field(default_factory=list, description="sets of columns shown together, "
                                                                               "each with its own mean win rate")
    helm_jury: list[str] = Field(default_factory=list, description="the judges HELM published this board with "
                                                                   "(`helmflow reproduce`)")
    # what this board does differently from HELM's published setup, one sentence each (``reproduce --explain``)
    helm_differences: list[str] = Field(default_factory=list, description="what this board does differently from "
                                                                          "HELM's published setup, one sentence "
                                                                          "each (`reproduce --explain`)")
    context_overflow: Literal["fit", "refuse"] = Field(
        "fit", description="a prompt longer than a deployment's context window (with the output budget): `fit` "
                           "drops in-context examples, then cuts the prompt (HELM's way); `refuse` refuses the "
                           "whole run before any request, with one line (long-context boards, where a cut prompt "
                           "is another task)")
    subflows: Literal["scenario", "group"] = Field(
        "scenario", description="how a board's flow run reads in the Prefect UI: one subflow run per scenario "
                                "entry, with its perturbed copies (`scenario`), or one per run group "
                                "(`group`: the entries' `group:`, an entry without one on its own), for a board of "
                                "many entries per dataset; not part of the board version")
    tracking: TrackingSpec | None = Field(None, description="experiment trackers each release is logged to "
                                                             "(`tracking: {mlflow: {uri, experiment}}`, "
                                                             "`{wandb: {project, dir}}`); not part "
                                                             "of the board version")
    # prompt wording replaced: ``<scenario>.<text>`` or ``judge.<template>`` -> text (helmflow.prompts)
    prompts: dict[str, str] = Field(default_factory=dict, description="prompt wording replaced: "
                                                                      "`<scenario>.<text>` or `judge.<template>` "
                                                                      "→ text (`helmflow prompts` lists the keys)")

    @model_validator(mode="before")
    @classmethod
    def _board_wide_keys(cls, data: Any) -> Any:
        """A top-level key naming a board-wide metric (``<metric>: scorer``, the spelling boards have
        always used) is that metric's ``board_wide`` entry; other unknown keys stay errors."""
        if not isinstance(data, dict):
            return data
        from helmflow.metrics import METRICS

        named = [k for k in data if k not in cls.model_fields and isinstance(k, str) and k in METRICS
                 and METRICS.get(k).board_wide is not None]
        if not named:
            return data
        given = data.get("board_wide") or {}
        twice = [k for k in named if k in given]
        if twice:
            raise ValueError(f"{', '.join(twice)} given both at the top level and under board_wide")
        return {**{k: v for k, v in data.items() if k not in named},
                "board_wide": {**given, **{k: data[k] for k in named}}}

    @property
    def declares_adaptive(self) -> bool:
        """Some entry of the board is asked adaptively (its own `adaptive:` or the board's)."""
        return any(entry_adaptive(self.adaptive, e) is not None for e in self.scenarios)

    def version_data(self) -> dict[str, Any]:
        """What the board version hashes: fields added later count only when used (old versions stay put).
        A board-wide metric that is on hashes under its own name at the top level, as boards spelled it."""
        data = self.model_dump(mode="json")
        data.pop("tracking")  # where releases are logged changes no number
        data.pop("subflows")  # nor does the shape of the flow-run graph
        for name, value in data.pop("board_wide").items():
            if value not in (None, False, "", OFF):
                data[name] = value
        for key in ("aspects", "metric_groups", "helm_jury", "helm_differences", "prompts"):
            if not data[key]:
                del data[key]
        for key in ("increase_max_tokens", "adaptive"):
            if data[key] is None:
                del data[key]
        if data["context_overflow"] == "fit":
            del data["context_overflow"]
        for entry in data["scenarios"]:
            for key in ("group", "perturbations", "adaptive"):
                if entry[key] is None:
                    del entry[key]
            if entry["headline"]:
                del entry["headline"]
            if entry["missing_perturbation_data"] == "refuse":
                del entry["missing_perturbation_data"]
            if not entry["perturbation_instances"]:
                del entry["perturbation_instances"]
        for group in data.get("metric_groups", []):
            if group["aggregation"] == ["win_rate"]:
                del group["aggregation"]
            for column in group["columns"]:
                if not column["description"]:
                    del column["description"]
        return data


# --------------------------------------------------------------------------- loading
def board_names() -> list[str]:
    return sorted(p.stem for p in BOARDS_DIR.glob("*.yaml"))


def load_board(board: str | dict[str, Any] | BoardSpec) -> BoardSpec:
    """A board spec from a name (``flows/<name>.yaml``), a YAML file path, or the spec itself as data
    (``helmflow eval`` builds one; a dict keeps the flow parameter JSON)."""
    if isinstance(board, BoardSpec):
        return board
    if isinstance(board, dict):
        return _validate(board, "board spec")
    path = Path(board)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise BoardError(f"board file {path} does not exist")
    else:
        path = BOARDS_DIR / f"{board}.yaml"
        if not path.exists():
            raise BoardError(f"unknown board {board!r}; known: {', '.join(board_names())}")
    spec = _validate(read_yaml_file(path, "board file", BoardError), f"board file {path}")
    if path.resolve().parent != BOARDS_DIR:
        check_not_shipped(spec, f"board file {path}")
    return spec


def check_not_shipped(spec: BoardSpec, where: str) -> None:
    """Refuse a board that takes a shipped board's name (its folder, so its ``latest.json``) without
    being that board."""
    from helmflow.storage import safe_key

    folder = safe_key(spec.name)
    for shipped in board_names():
        if safe_key(shipped) == folder and load_board(shipped) != spec:
            raise BoardError(f"{where} is named {spec.name!r}, as helmflow's own {shipped!r} board, but is not "
                             f"that board: its releases would move leaderboards/{folder}/latest.json. "
                             "Give it a name of its own")


def _validate(data: Any, where: str) -> BoardSpec:
    try:
        return BoardSpec.model_validate(data)
    except ValidationError as exc:
        raise BoardError(f"{where}: {format_validation_error(exc)}") from None


def judge_template_names(metrics: list[str]) -> list[str]:
    """The judge templates a scenario's metrics read (none for rule-scored scenarios)."""
    from helmflow.metrics import METRICS

    return sorted({judge for m in metrics for judge in METRICS.get(m).judge_templates})


def judge_required(metrics: list[str]) -> bool:
    """Whether a scenario's judge-backed metrics need a judge to run (a metric may declare that it runs without
    one, its judged numbers then missing with a reason: ``Metric.without_judge``)."""
    from helmflow.metrics import METRICS

    return any(METRICS.get(m).judge_templates and not METRICS.get(m).without_judge for m in metrics)


# --------------------------------------------------------------------------- prompt wording
def scenario_prompt_texts(name: str, params: dict[str, Any], adapter: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The declared texts of one scenario entry (default wording, what it is); see helmflow.prompts."""
    from helmflow.scenarios import SCENARIOS

    scen = SCENARIOS.get(name)(**params)
    method = adapter.get("method", scen.default_adapter.method)
    texts = ADAPTERS.get(method).texts if method in ADAPTERS else ()
    return prompt_module.scenario_texts(scen, texts)


def judge_template_texts() -> dict[str, tuple[str, str]]:
    """``template -> (text, what it is)`` for every registered judge template that renders a prompt."""
    from helmflow.judges import TEMPLATES

    out = {}
    for name in TEMPLATES.names():
        t = TEMPLATES.get(name)
        fields = sorted(set(prompt_module.PLACEHOLDER.findall(t.text)))
        if t.text.strip() != "{$answer}":  # a classifier is sent the output as it is: no wording to replace
            out[name] = (t.text, f"judge prompt; placeholders: {', '.join('{$' + f + '}' for f in fields)}")
        for key, text in t.keyed.items():
            out[f"{name}.{key}"] = (text, f"judge text of {name} for key {key} (it fills {{${t.keyed_field}}})")
    return out


def board_prompt_texts(spec: BoardSpec, everything: bool = False) -> list[tuple[str, dict[str, tuple[str, str]]]]:
    """Scope -> declared texts: the board's scenarios (with their parameters) and the judge templates
    they use; with ``everything``, every registered scenario and judge template too (a prompts file may
    serve several boards)."""
    from helmflow.scenarios import SCENARIOS, ScenarioError

    out: dict[str, dict[str, tuple[str, str]]] = {}
    for entry in spec.scenarios:
        if entry.name in SCENARIOS:
            out.setdefault(entry.name, {}).update(scenario_prompt_texts(entry.name, entry.params, entry.adapter))
    for name in SCENARIOS.names() if everything else []:
        if name not in out:
            try:
                out[name] = scenario_prompt_texts(name, {}, {})
            except ScenarioError:
                continue  # needs parameters (a file-backed scenario): its keys are known when a board runs it
    judged = judge_template_texts()
    if not everything:
        used: set[str] = set()
        for entry in spec.scenarios:
            if entry.name in SCENARIOS:
                try:
                    used.update(judge_template_names(
                        entry.metrics or list(SCENARIOS.get(entry.name)(**entry.params).metrics)))
                except HelmflowError:
                    continue  # unknown metrics or bad parameters: planning names them
        judged = {n: t for n, t in judged.items() if n in used or any(n.startswith(f"{u}.") for u in used)}
    sections = [(scope, texts) for scope, texts in out.items() if texts]
    return sections + ([(prompt_module.JUDGE_SCOPE, judged)] if judged else [])


def check_prompts(spec: BoardSpec, source: str | None = None) -> None:
    """Every key of the board's ``prompts:`` is a declared text; a judge template keeps its placeholders."""
    if not spec.prompts:
        return
    where = source or f"board {spec.name!r}"
    sections = dict(board_prompt_texts(spec, everything=True))
    try:
        prompt_module.check(spec.prompts, sections, where)
        for name, text in prompt_module.for_scope(spec.prompts, prompt_module.JUDGE_SCOPE).items():
            prompt_module.check_judge_text(name, sections[prompt_module.JUDGE_SCOPE][name][0], text, where)
    except prompt_module.PromptError as exc:
        raise BoardError(str(exc)) from None


def with_prompts(board: str | dict[str, Any], path: str) -> dict[str, Any]:
    """The board spec as data with a prompts file's texts over its ``prompts:`` (the file wins per key),
    checked now. Like a variant, it is its own board (``<name>-<file stem>``), so its releases never
    mix with the board's own wording."""
    from helmflow.storage import safe_key

    texts = prompt_module.read_file(path)
    spec = load_board(board)
    data = spec.model_dump(mode="json")
    data["prompts"] = {**spec.prompts, **texts}
    data["name"] = f"{spec.name}-{safe_key(Path(path).stem)}"
    derived = load_board(data)
    check_prompts(derived, f"prompts file {path}")
    check_not_shipped(derived, f"board {spec.name!r} with prompts file {path}")
    return data

# --------------------------------------------------------------------------- variants
def has_variant(scenario: str) -> bool:
    """Whether a scenario's parameters include ``variant`` (HELM entries whose prompt/budget it changes)."""
    from helmflow.scenarios import SCENARIOS

    return "variant" in SCENARIOS.get(scenario).Params.model_fields


def with_variant(board: str | dict[str, Any], variant: str) -> dict[str, Any]:
    """The board spec as data with ``variant`` on every scenario that has one. A non-default variant
    is its own board (``<name>-<variant>``), so its releases never mix with v1's."""
    spec = load_board(board).model_dump(mode="json")
    for entry in spec["scenarios"]:
        if has_variant(entry["name"]):
            entry["params"] = {**entry["params"], "variant": variant}
    if variant != "v1" and not spec["name"].endswith(f"-{variant}"):  # idempotent: reproduce then run
        base = spec["name"]
        spec["name"] = f"{base}-{variant}"
        check_not_shipped(load_board(spec), f"board {base!r} with variant {variant!r}")
    return spec
