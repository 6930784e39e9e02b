"""MedHELM's configurable benchmark (HELM's ``medhelm_configurable_benchmark:config_path=<yaml>``): a medical
benchmark described in a YAML file, run with no code (``helmflow eval my_benchmark.yaml --models ...``).

The YAML (HELM's keys; ``prompt`` and a jury's ``prompt`` may also be written inline, and a jury may name its
``criteria``)::

    name: discharge_questions            # the benchmark's name (letters, digits, _ and -): its board column
    description: Patients' questions about their discharge instructions
    prompt_file: prompt.txt              # or `prompt: |` inline; {column} placeholders, filled per row
    dataset_file: questions.csv          # CSV or JSON Lines; a local path (relative to the YAML) or fsspec URL
    max_tokens: 256                      # default 1024, as HELM
    metrics:                             # the first is the main one unless one says `main: true`
      - name: exact_match                # needs the `correct_answer` column (HELM's)
      - name: jury_score                 # an LLM jury with its own prompt and judges
        prompt_file: judge.txt           # or `prompt:`; {{QUESTION}}, {{RESPONSE}}, {{GOLD_RESPONSE}}
        criteria: [accuracy, clarity]    # or HELM's <rubric_criteria>{...}</rubric_criteria> block in the prompt
        judges: [openai/gpt-4o-2024-05-13]   # deployment names (HELM's {name: ..., model_name: ...} too)

The dataset's ``correct_answer`` column is the reference (exact match, ROUGE and the jury's gold response);
``incorrect_answers`` (a JSON list) adds wrong references, as in HELM. ``correct_answer`` may be absent only
when the jury is the only metric (HELM's rule). ``output:`` and ``id:`` name other columns for the reference and
the instance id. Every row is a test instance. The metrics are ``exact_match`` (HELM's four exact-match stats),
``rouge_1``/``rouge_2``/``rouge_l`` (the three ROUGE F-measures; the named one is the main stat) and
``jury_score`` (HELM's jury parser and pooled score, on the judges' 1-5 scale; ``default_score``, 0 as HELM's
metric class, when no judge parsed).

Everything wrong with the file (an unknown key, a missing field, a placeholder naming no column of the
dataset) is one error naming the file and the field, before any request. The YAML (but its metrics), the
prompt and the dataset's sha256 make the dataset revision, so editing any of them is a new scenario version;
the jury's wording and criteria are in its template VERSION, so editing only those re-judges without
re-querying.
"""

from __future__ import annotations

import os
import posixpath
import string
from functools import cached_property
from typing import Any, Literal

import fsspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from helmflow.errors import format_validation_error, read_yaml_file
from helmflow.records import AdapterSpec, Instance, Reference
from helmflow.records import Input as InstanceInput
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import check_unique_ids
from helmflow.scenarios.custom import read_rows
from helmflow.scenarios.medhelm import generation

NAME = "medhelm_configurable_benchmark"
EXACT_MATCH = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match"]
ROUGE = ["rouge_1", "rouge_2", "rouge_l"]


class Judge(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)  # the deployment
    model_name: str | None = None  # HELM's; our deployment names their model


class MetricConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Literal["exact_match", "rouge_1", "rouge_2", "rouge_l", "jury_score"]
    main: bool = False
    prompt: str | None = None
    prompt_file: str | None = None
    criteria: list[str] | None = None
    judges: list[Judge] = Field(default_factory=list)
    default_score: float = 0.0

    @field_validator("judges", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        return [{"name": j} if isinstance(j, str) else j for j in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _jury_fields(self) -> MetricConfig:
        jury = ("prompt", "prompt_file", "criteria", "judges")
        if self.name != "jury_score":
            given = [f for f in jury if getattr(self, f)]
            if given:
                raise ValueError(f"{', '.join(given)}: only a jury_score metric takes these")
        elif bool(self.prompt) == bool(self.prompt_file):
            raise ValueError("jury_score needs its judge prompt: prompt_file (HELM's) or prompt, one of them")
        return self


class BenchmarkConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
    description: str = ""
    prompt: str | None = None
    prompt_file: str | None = None
    dataset_file: str = Field(min_length=1)
    format: Literal["csv", "jsonl"] | None = None
    output: str = "correct_answer"
    incorrect: str = "incorrect_answers"
    id: str | None = None
    max_tokens: int = Field(1024, gt=0)
    metrics: list[MetricConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> BenchmarkConfig:
        if bool(self.prompt) == bool(self.prompt_file):
            raise ValueError("prompt_file (HELM's) or prompt: give one of them")
        if sum(m.main for m in self.metrics) > 1:
            raise ValueError("metrics: more than one says main: true")
        if sum(m.name == "jury_score" for m in self.metrics) > 1:
            raise ValueError("metrics: one jury_score at most")
        if len({m.name for m in self.metrics}) != len(self.metrics):
            raise ValueError("metrics: a metric is listed twice")
        if self.format is None:
            ext = posixpath.splitext(self.dataset_file.split("?")[0])[1].lower()
            if ext not in (".csv", ".jsonl"):
                raise ValueError(f"dataset_file: cannot tell the format of {self.dataset_file!r} from its "
                                 "extension; set format: csv or format: jsonl")
            self.format = "csv" if ext == ".csv" else "jsonl"
        return self

    @property
    def main(self) -> MetricConfig:
        return next((m for m in self.metrics if m.main), self.metrics[0])

    @property
    def jury(self) -> MetricConfig | None:
        return next((m for m in self.metrics if m.name == "jury_score"), None)


def _resolve(base: str, path: str) -> str:
    """A path relative to the YAML's folder (a URL or an absolute path stays as written)."""
    if "://" in path or "::" in path or posixpath.isabs(path):
        return path
    if "://" in base:
        return posixpath.join(posixpath.dirname(base), path)
    return os.path.join(os.path.dirname(os.path.abspath(base)), path)


def _read_text(who: str, field: str, url: str) -> str:
    try:
        with fsspec.open(url, "rb") as fh:
            return fh.read().decode("utf-8-sig")
    except FileNotFoundError:
        raise ScenarioError(f"{who}: {field}: {url} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{who}: {field}: cannot read {url}: {exc}") from None


def template_fields(who: str, field: str, template: str) -> list[str]:
    """The ``{column}`` placeholders of a prompt, as HELM finds them (``string.Formatter``)."""
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ScenarioError(f"{who}: {field}: not a template with {{column}} placeholders: {exc} "
                            "(write a literal brace twice: {{ or }})") from None
    bad = [n for n in names if not n or any(c in n for c in ".[]")]
    if bad:
        raise ScenarioError(f"{who}: {field}: placeholder {{{bad[0]}}} is not a column name")
    return list(dict.fromkeys(names))


class ConfigParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    config_path: str = Field(min_length=1)


@scenario(NAME)
class MedHELMConfigurable(Scenario[ConfigParams]):
    VERSION = "1"
    Params = ConfigParams
    description = "A medical benchmark described in a YAML file: prompt template, CSV/JSONL dataset, metrics and jury."
    helm_wording = ("the prompt is the user's template filled with the row, with nothing added (HELM's generation "
                    "layout with no instructions and no nouns, zero-shot, no stop sequence)")
    helm_differences = (
        "a placeholder that names no column of the dataset is an error before any request (HELM fills it with "
        "an empty string), and an empty CSV cell is an empty string (pandas gives HELM the text 'nan')",
        "with no metric marked main, the first is the main one (HELM's code refuses such a file)",
    )

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._revision: str | None = None
        cfg = self.config
        jury = cfg.jury
        names: list[str] = []
        self.jury_metric: str | None = None
        for m in cfg.metrics:
            if m.name == "exact_match":
                names += EXACT_MATCH
            elif m.name in ROUGE:
                names += [r for r in ROUGE if r not in names]
            elif jury is not None:
                from helmflow.metrics.medhelm_jury import register_configured, rubric_criteria

                text = self.jury_text
                try:
                    criteria = tuple(jury.criteria or ()) or rubric_criteria(text)
                except ValueError as exc:
                    raise ScenarioError(f"{self.who}: metrics.jury_score.prompt: {exc}") from None
                if not criteria:
                    raise ScenarioError(f"{self.who}: metrics.jury_score: name the criteria (criteria: [...]) or "
                                        "put HELM's <rubric_criteria>{...}</rubric_criteria> block in its prompt")
                self.jury_metric = register_configured(cfg.name, text, criteria, jury.default_score)
                names.append(self.jury_metric)
        # this benchmark's own metrics and main stat (the class's are the defaults of a scenario with none)
        self.metrics = [*names, "efficiency"]  # type: ignore[misc]
        main = cfg.main.name
        self.main_metric = "jury_score" if main == "jury_score" else main  # type: ignore[misc]
        self.description = cfg.description or cfg.name  # type: ignore[misc]

    # ------------------------------------------------------------------ the file
    @property
    def who(self) -> str:
        return f"benchmark config {self.params.config_path}"

    @cached_property
    def config(self) -> BenchmarkConfig:
        path = self.params.config_path
        if "://" in path:
            import yaml

            try:
                data = yaml.safe_load(_read_text(self.who, "config_path", path))
            except yaml.YAMLError as exc:
                raise ScenarioError(f"{self.who} is not valid YAML: {' '.join(str(exc).split())}") from None
        else:
            data = read_yaml_file(path, "benchmark config", ScenarioError)
        if not isinstance(data, dict):
            raise ScenarioError(f"{self.who}: expected a mapping with name, prompt_file, dataset_file and metrics")
        try:
            return BenchmarkConfig(**data)
        except ValidationError as exc:
            raise ScenarioError(f"{self.who}: {format_validation_error(exc)}") from None

    def _url(self, path: str) -> str:
        return _resolve(self.params.config_path, path)

    @cached_property
    def prompt_template(self) -> str:
        cfg = self.config
        text = cfg.prompt if cfg.prompt else _read_text(self.who, "prompt_file", self._url(cfg.prompt_file or ""))
        if not text.strip():
            raise ScenarioError(f"{self.who}: the prompt is empty")
        template_fields(self.who, "prompt", text)
        return text

    @cached_property
    def jury_text(self) -> str:
        jury = self.config.jury
        assert jury is not None
        text = jury.prompt if jury.prompt else _read_text(self.who, "metrics.jury_score.prompt_file",
                                                          self._url(jury.prompt_file or ""))
        if not text.strip():
            raise ScenarioError(f"{self.who}: metrics.jury_score: the judge prompt is empty")
        return text

    @property
    def judges(self) -> list[str]:
        jury = self.config.jury
        return [j.name for j in jury.judges] if jury else []

    @property
    def label(self) -> str:
        return self.config.name

    @property
    def dataset_url(self) -> str:
        return self._url(self.config.dataset_file)

    @property
    def filename(self) -> str:
        return posixpath.basename(self.config.dataset_file.split("?")[0].rstrip("/")) or "data"

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation("", None, None, self.config.max_tokens, stop=())

    def dataset_revision(self) -> str:
        """The YAML (but its metrics), its prompt and the dataset's sha256: editing any of them is a new revision."""
        if self._revision is None:
            from helmflow.datasets import sha256_of
            from helmflow.versions import stable_hash

            # the metrics (the jury's wording, criteria, judges) are metric_version's, not the instances'
            self._revision = stable_hash({
                "config": self.config.model_dump(mode="json", exclude={"metrics"}), "prompt": self.prompt_template,
                "dataset": sha256_of(NAME, self.dataset_url)}, 16)
        return self._revision

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.dataset_url, sha256=None)]

    # ------------------------------------------------------------------ loading
    def check_dataset(self) -> None:
        """Read the dataset as :meth:`load` will (at plan time, so a wrong column stops before any request)."""
        self._instances(self.dataset_url)

    def load(self, files: dict[str, str]) -> list[Instance]:
        return self._instances(files[self.filename])

    def _instances(self, url: str) -> list[Instance]:
        cfg = self.config
        where = f"{self.who}: dataset_file {cfg.dataset_file}"
        try:
            rows = read_rows(self.who, cfg.dataset_file, url, cfg.format or "csv")
        except FileNotFoundError:
            raise ScenarioError(f"{where} does not exist") from None
        if not rows:
            raise ScenarioError(f"{where} has no data rows")
        columns = list(rows[0][1])
        fields = template_fields(self.who, "prompt", self.prompt_template)
        scored = [m.name for m in cfg.metrics if m.name != "jury_score"]
        needed = [*fields, *([cfg.output] if scored else []), *([cfg.id] if cfg.id else [])]
        for column in needed:
            if column not in columns:
                why = (f" (the {', '.join(scored)} metric needs the reference; HELM's column is correct_answer)"
                       if column == cfg.output else "")
                raise ScenarioError(f"{where}: no column {column!r}{why}; it has: {', '.join(columns) or 'nothing'}")
        instances = []
        for line, row in rows:
            values = {f: "" if row.get(f) is None else str(row.get(f)) for f in fields}
            text = self.prompt_template.format_map(values)
            references = []
            if cfg.output in row and row[cfg.output] not in (None, ""):
                references.append(Reference(text=str(row[cfg.output]), correct=True))
            elif scored:
                raise ScenarioError(f"{where}: line {line}: column {cfg.output!r} is empty")
            if cfg.incorrect in row and row[cfg.incorrect] not in (None, ""):
                references += [Reference(text=t, correct=False) for t in self._list(where, line, row[cfg.incorrect])]
            ident = str(row[cfg.id]) if cfg.id else f"line{line}"
            instances.append(Instance(id=ident, split="test", input=InstanceInput(text=text), references=references))
        check_unique_ids(where, [(line, i.id) for (line, _), i in zip(rows, instances, strict=True)])
        return instances

    def _list(self, where: str, line: int, value: Any) -> list[str]:
        import json

        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = None
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            raise ScenarioError(f"{where}: line {line}: column {self.config.incorrect!r} is not a JSON list of answers")
        return [str(v) for v in value]
