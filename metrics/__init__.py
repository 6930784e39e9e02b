"""The metric registry. A metric is a small pure function ``MetricInput -> {stat name: value}``
registered with a declared VERSION (part of metric_version). One module per family."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from helmflow.errors import HelmflowError, install_command
from helmflow.metrics.base import MetricInput
from helmflow.records import Instance
from helmflow.registry import Registry

MetricFn = Callable[[MetricInput], dict[str, float]]


@dataclass(frozen=True)
class Pooled:
    """A run-level number that is not a mean of per-instance values (e.g. BBQ's bias scores): ``fn``
    maps the sums of ``stats`` over the run's instances (and their count) to the value. Summaries
    bootstrap it by resampling instances, like every other interval.

    ``rows``: ``fn`` gets the per-instance values themselves (one array per stat, instances in id
    order) instead of their sums, for numbers that sort or bin instances (calibration error).
    ``unavailable``: (a stat the metric always emits, why the number is missing when only that stat
    is there), so a board cell says "not available" and why, rather than looking like a failure.
    ``bootstrap`` False: no interval (NaN bounds), for numbers too costly to refit a thousand times.
    ``batched`` (with ``rows``): ``fn`` of many resamples at once, each stat as a (resamples, instances)
    array, one value per resample, exactly equal to ``fn`` row by row; the bootstrap then makes one
    call per block of resamples instead of one per resample.
    A number that cannot be computed for a run is absent from its summary, never 0."""

    name: str
    stats: tuple[str, ...]
    fn: Callable[[dict[str, Any], int], float]
    rows: bool = False
    unavailable: tuple[str, str] | None = None
    bootstrap: bool = True
    batched: Callable[[dict[str, Any], int], Any] | None = None


@dataclass(frozen=True)
class HelmEquivalent:
    """How a metric meets HELM's output tree (``helmflow import-helm``, ``export --format helm``).

    ``stats``: the names in HELM's ``stats.json`` this metric reproduces, so an import can recompute
    and compare them. HELM keeps what a metric reads in other places than our scenarios do (extra_data
    keys, reference tags); ``from_helm`` maps a HELM instance (its JSON) to the ``extra`` entries the
    metric reads, ``to_helm`` maps our instance to HELM's ``extra_data`` additions and per-reference
    ``tags`` (``{"extra_data": {...}, "tags": [[...], ...]}``), so each direction stays next to the
    metric that needs it."""

    stats: tuple[str, ...]
    from_helm: Callable[[dict], dict] | None = None
    to_helm: Callable[[Instance], dict] | None = None
    # a judged metric: HELM's annotator output for the metric's judge template (its ``annotations[<name>]``)
    # -> (score, details), the verdict an imported run is recomputed from (None: no score)
    verdict_from_helm: Callable[[dict], tuple[float | None, dict]] | None = None


@dataclass(frozen=True)
class Counted:
    """A run-level number over counts that instances record as sparse stats named ``<prefix><key>``
    (absent = 0), e.g. HELM's bias metrics, which pool every completion's word counts before computing.
    ``fn`` maps the summed counts (by stat name) to the value, or None when it is undefined. Summaries
    bootstrap it by resampling instances; the count stats themselves get no mean summary."""

    name: str
    prefix: str
    fn: Callable[[dict[str, float]], float | None]


@dataclass(frozen=True)
class HookColumn:
    """A leaderboard column a board-wide metric adds for every scenario it scores."""

    metric: str  # the stat (a run summary)
    description: str
    lower_is_better: bool = False


@dataclass(frozen=True)
class BoardWide:
    """How a metric joins every scenario of a board that turns it on (HELM: "a metric any generation
    scenario can use"), declared on ``@metric`` the way a scenario declares its adapter: the adapter
    methods whose outputs it reads, whether it reads a scorer deployment (and which judge template a
    scorer is sent, by whether the scorer's client is a classifier), and the metric group it adds."""

    methods: tuple[str, ...] = ("generation", "chat")
    scorer: bool = False
    template_for: Callable[[bool], str] | None = None
    group: str | None = None  # the group's name; ``group_fallback`` when the board already has one by that name
    group_fallback: str | None = None
    group_description: str = ""
    columns: tuple[HookColumn, ...] = ()
    # what differs from HELM's published board when a board turns it on (``reproduce --explain``);
    # ``{scorer}``: the scorer deployment's name
    helm_difference: str = ""


@dataclass(frozen=True)
class AcrossRuns:
    """A number over several runs of one model (a scenario group's runs, e.g. one dataset in every prompt
    variant), for a metric group column naming the group: per instance id, ``fn`` of the main metric's
    values in the runs that scored it; the cell is their mean over instance ids, with a bootstrap
    interval. Declared here, reached by the aggregation only through this registry."""

    name: str
    version: str
    fn: Callable[[list[float]], float]
    description: str = ""


ACROSS_RUNS: Registry[AcrossRuns] = Registry("across-runs statistic")


def across_runs(name: str, version: str, description: str = "") -> Callable[[Callable[[list[float]], float]],
                                                                            Callable[[list[float]], float]]:
    """Register an :class:`AcrossRuns` statistic (``fn``: one instance's values across the runs)."""

    def deco(fn: Callable[[list[float]], float]) -> Callable[[list[float]], float]:
        ACROSS_RUNS.add(name, AcrossRuns(name=name, version=version, fn=fn, description=description))
        return fn

    return deco


@dataclass(frozen=True)
class TreeNode:
    """One node of a hierarchy of a metric's stats (a taxonomy of its instances): the report's board page shows
    the nodes as a tree, each with every model's value of ``stat``. ``parent`` is a node ``id`` (None: a root)."""

    id: str
    name: str
    stat: str
    parent: str | None = None


@dataclass(frozen=True)
class Metric:
    name: str
    fn: MetricFn
    version: str
    scores_errors: bool = False  # efficiency-like metrics also describe errored requests
    # (summary name, numerator stat, denominator stat): pooled over instances as sum / sum, not a mean;
    # a per-instance stat of the summary's name gets no mean summary (the ratio is the run's number)
    ratios: tuple[tuple[str, str, str], ...] = ()
    # the judge template (helmflow.judges) whose verdicts this metric reads, or several (one judge request each)
    judge: str | tuple[str, ...] | None = None
    # set: the metric runs without a judge, its judged numbers then missing for this reason (a board that has no
    # judge still runs); empty: a scenario with this metric needs a judge (or --no-judge)
    without_judge: str = ""
    pooled: tuple[Pooled, ...] = ()
    counted: tuple[Counted, ...] = ()
    # modules the metric imports when it runs, and the extra that installs them (the base install is lean)
    requires: tuple[str, ...] = ()
    extra: str | None = None
    helm: HelmEquivalent | None = None
    # raises MetricError for an instance the metric cannot score (checked when the scenario is loaded)
    check: Callable[[Instance], Any] | None = None
    board_wide: BoardWide | None = None  # set: a board can add this metric to every scenario it fits
    # what else the metric's numbers depend on (the setting naming its weights), folded into its version so a
    # change of checkpoint scores the runs again rather than reusing numbers another model gave
    varies: Callable[[], str] | None = None
    # the hierarchy of the stats this metric records for these instances, in display order (a taxonomy's
    # nodes): the report's board page shows it as a tree with each model's value per node
    tree: Callable[[list[Instance]], list[TreeNode]] | None = None

    @property
    def judge_templates(self) -> tuple[str, ...]:
        """The judge templates this metric reads (none for a rule-scored metric)."""
        if self.judge is None:
            return ()
        return (self.judge,) if isinstance(self.judge, str) else tuple(self.judge)

    @property
    def full_version(self) -> str:
        return self.version if self.varies is None else f"{self.version}+{self.varies()}"

    def missing_modules(self) -> list[str]:
        """The modules this metric needs that are not installed (found without importing them)."""
        return [m for m in self.requires if not _installed(m)]

    def check_installed(self) -> None:
        """One line naming the extra to install when a module this metric needs is missing (inside
        :func:`tolerate_missing_extras`, the metric is noted there instead)."""
        missing = self.missing_modules()
        if not missing:
            return
        noted = _TOLERATED.get()
        if noted is None:
            raise MissingExtra(f"metric {self.name!r} needs {', '.join(missing)}: {install_command(self.extra or '?')}")
        noted[self.name] = self


class MissingExtra(HelmflowError):
    """A metric whose modules are not installed (an optional extra of the lean base install)."""


_TOLERATED: contextvars.ContextVar[dict[str, Metric] | None] = contextvars.ContextVar("tolerated", default=None)


@contextlib.contextmanager
def tolerate_missing_extras() -> Iterator[dict[str, Metric]]:
    """Within the block a metric whose extra is missing does not stop planning: it is noted in the
    yielded ``{name: metric}`` (``helmflow show`` describes a board on the base install and names
    the extras a run of it needs)."""
    noted: dict[str, Metric] = {}
    token = _TOLERATED.set(noted)
    try:
        yield noted
    finally:
        _TOLERATED.reset(token)


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


METRICS: Registry[Metric] = Registry("metric")

_BUILTIN = [
    "reference",
    "efficiency",
    "chain_of_thought",
    "ifeval",
    "wildbench",
    "omni_math",
    "harm_bench",
    "simple_safety_tests",
    "xstest",
    "anthropic_red_team",
    "bbq",
    "toxicity",
    "math_cot",
    "text_overlap",
    "calibration",
    "bias",
    "enterprise",
    "classification",
    "ranking",
    "summarization",
    "kpi_edgar",
    "language_modeling",
    "fin_qa",
    "financebench",
    "air_bench_2024",
    "alrage",
    "image2struct",
    "image_efficiency",
    "fractal_dimension",
    "skin_tone",
    "psnr",
    "uiqi",
    "multi_scale_ssim",
    "clip_score",
    "gender",
    "aesthetics",
    "nudity",
    "watermark",
    "q16",
    "medhelm_jury",
    "instruction_following",
    "table_reasoning",
    "medhelm",
    "ehr_sql",
    "copyright",
    "disinformation",
    "code_execution",
    "ruler_qa",
    "openai_mrcr",
]


def metric(
    name: str, version: str, scores_errors: bool = False, ratios: tuple[tuple[str, str, str], ...] = (),
    judge: str | tuple[str, ...] | None = None, pooled: tuple[Pooled, ...] = (), requires: tuple[str, ...] = (),
    extra: str | None = None, helm: HelmEquivalent | None = None, counted: tuple[Counted, ...] = (),
    check: Callable[[Instance], Any] | None = None, board_wide: BoardWide | None = None,
    varies: Callable[[], str] | None = None, tree: Callable[[list[Instance]], list[TreeNode]] | None = None,
    without_judge: str = "",
) -> Callable[[MetricFn], MetricFn]:
    """Register a metric. ``check`` states what it needs of an instance (raising :class:`MetricError`),
    so a board pairing it with a scenario that lacks it stops at load time, not inside a task."""
    def deco(fn: MetricFn) -> MetricFn:
        METRICS.add(name, Metric(name=name, fn=fn, version=version, scores_errors=scores_errors, ratios=ratios,
                                 judge=judge, pooled=pooled, requires=requires, extra=extra, helm=helm,
                                 counted=counted, check=check, board_wide=board_wide, varies=varies,
                                 tree=tree, without_judge=without_judge))
        return fn

    return deco


def check_scorable(metric_names: list[str], instances: list[Instance]) -> None:
    """Raise :class:`MetricError` for the first instance a metric, or the judge template it reads,
    cannot score (the template's fields are filled with an empty output, as a judge request would be)."""
    from helmflow.judges import TEMPLATES

    for name in metric_names:
        m = METRICS.get(name)
        templates = [TEMPLATES.get(t) for t in m.judge_templates]
        for inst in instances:
            if m.check is not None:
                m.check(inst)
            for template in templates:
                template.fields(inst, "")


def helm_stats() -> dict[str, str]:
    """HELM stat name -> the metric that reproduces it (the metrics declaring a :class:`HelmEquivalent`)."""
    out: dict[str, str] = {}
    for name in METRICS.names():
        equivalent = METRICS.get(name).helm
        for stat in equivalent.stats if equivalent else ():
            out.setdefault(stat, name)
    return out


def helm_verdicts() -> dict[str, Callable[[dict], tuple[float | None, dict]]]:
    """Judge template -> how a HELM annotator's output becomes its verdict (the judged metrics declaring
    ``HelmEquivalent.verdict_from_helm``)."""
    out: dict[str, Callable[[dict], tuple[float | None, dict]]] = {}
    for name in METRICS.names():
        m = METRICS.get(name)
        if isinstance(m.judge, str) and m.helm and m.helm.verdict_from_helm:
            out.setdefault(m.judge, m.helm.verdict_from_helm)
    return out


def import_required(names: list[str]) -> None:
    """Import the installed modules these metrics need, in the calling thread, before any task scores: threads
    that import NLTK at the same time can meet in its circular imports (Python's ``_DeadlockError``, then
    "partially initialized module 'nltk'" in the others), so a board imports them once, up front."""
    for name in sorted(set(names)):
        for module in METRICS.get(name).requires if name in METRICS else ():
            if _installed(module):
                importlib.import_module(module)


def metric_versions(names: list[str]) -> dict[str, str]:
    return {n: METRICS.get(n).full_version for n in sorted(set(names))}


for _module in _BUILTIN:
    importlib.import_module(f"helmflow.metrics.{_module}")

__all__ = ["ACROSS_RUNS", "METRICS", "AcrossRuns", "Counted", "HelmEquivalent", "Metric", "MetricInput",
           "MissingExtra", "Pooled", "TreeNode", "across_runs", "helm_stats", "helm_verdicts", "import_required",
           "metric", "metric_versions"]
