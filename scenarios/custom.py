"""A private benchmark with no code: a CSV or JSONL file and a column mapping (like HELM's custom_mcqa).

``custom:path=<fsspec url>,format=csv|jsonl,question=<col>,choices=<col>|<col>...,answer=<col>,id=<col>``

- ``choices``: several columns (``a|b|c|d``, one option each) or one column holding a list (a JSON
  list in CSV). Without ``choices`` the answer is a free-text reference (generation).
- ``answer``: the correct option as a letter (``B``), a 0-based index or the option's text
  (``answer_format=auto`` tells them apart in that order), or the reference text without choices.
- ``split``: the column with train / valid / test per row; by default a column named ``split`` when
  the file has one, else every row is test. Train rows are the few-shot pool; valid and test rows
  are evaluated (HELM's eval splits).

The file is pinned by its sha256 at plan time (the dataset "revision"), mirrored to
``datasets/custom/<sha256>/`` with a checksum manifest, and a missing or malformed column is one
error naming the file, the column and the row.
"""

from __future__ import annotations

import csv
import io
import json
import posixpath
import re
from typing import Any, Literal

import fsspec
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from helmflow.records import AdapterSpec, EvalSample, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import check_unique_ids

_SPLITS = {"train", "valid", "test"}
DEFAULT_SPLIT_COLUMN = "split"  # read when present, so train rows are never evaluated by omission


class CustomParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1)
    format: Literal["csv", "jsonl"] | None = None
    question: str = "question"
    choices: str | None = None
    answer: str = "answer"
    answer_format: Literal["auto", "letter", "index", "text"] = "auto"
    id: str | None = None
    split: str | None = None

    @field_validator("choices", "id", "split")
    @classmethod
    def _empty_is_none(cls, v: str | None) -> str | None:
        return v or None

    @model_validator(mode="after")
    def _infer_format(self) -> CustomParams:
        if self.format is None:
            ext = posixpath.splitext(self.path.split("?")[0])[1].lower()
            if ext not in (".csv", ".jsonl"):
                raise ValueError(f"cannot tell the format of {self.path!r} from its extension; "
                                 "pass format=csv or format=jsonl")
            self.format = "csv" if ext == ".csv" else "jsonl"
        return self

    @property
    def choice_columns(self) -> list[str]:
        return [c.strip() for c in (self.choices or "").split("|") if c.strip()]


def read_rows(who: str, path: str, url: str, fmt: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) pairs of a CSV (with a header, whole records) or JSON Lines file (objects); a
    malformed file is one :class:`ScenarioError` starting with ``who`` and naming ``path`` and the line."""
    with fsspec.open(url, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{who}: {path} is not UTF-8 text: {exc}") from None
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            raise ScenarioError(f"{who}: {path} has no header row")
        out = []
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise ScenarioError(
                    f"{who}: {path}: line {reader.line_num} does not have {len(reader.fieldnames)} fields"
                )
            out.append((reader.line_num, row))
        return out
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{who}: {path}: line {number} is not JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise ScenarioError(f"{who}: {path}: line {number} is not a JSON object")
        out.append((number, row))
    return out


def _digest(url: str) -> str:
    from helmflow.datasets import sha256_of

    return sha256_of("custom", url)


@scenario("custom")
class Custom(Scenario[CustomParams]):
    VERSION = "2"  # 2: a column named `split` is read without being mapped
    Params = CustomParams
    description = "Your own CSV/JSONL file with a column mapping (question, choices, answer, id); no code."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "f1_score", "efficiency"]

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._revision: str | None = None

    @property
    def p(self) -> CustomParams:
        return self.params

    @property
    def filename(self) -> str:
        return posixpath.basename(self.p.path.rstrip("/")) or "data"

    @property
    def default_adapter(self) -> AdapterSpec:
        if self.p.choices:
            return AdapterSpec(
                method="multiple_choice_joint",
                instructions="The following are multiple choice questions (with answers).",
                input_prefix="Question: ",
                output_prefix="Answer: ",
                max_train_instances=5,
                generation=GenerationParams(max_tokens=5, temperature=0.0, stop=[]),
                sample=EvalSample(splits=["valid", "test"]),  # HELM evaluates both eval splits
            )
        return AdapterSpec(
            method="generation",
            input_prefix="Question: ",
            output_prefix="Answer: ",
            max_train_instances=5,
            generation=GenerationParams(max_tokens=100, temperature=0.0, stop=["\n"]),
            sample=EvalSample(splits=["valid", "test"]),
        )

    def dataset_revision(self) -> str:
        """The file's sha256: a changed file is a new revision (and a new scenario_version)."""
        if self._revision is None:
            self._revision = _digest(self.p.path)
        return self._revision

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.p.path, sha256=None)]

    # ------------------------------------------------------------------ loading
    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.filename]
        rows = self._rows(url)
        needed = [self.p.question, self.p.answer, *self.p.choice_columns, *(c for c in (self.p.id, self.p.split) if c)]
        for column in needed:
            if rows and column not in rows[0][1]:
                raise ScenarioError(
                    f"scenario 'custom': {self.p.path}: no column {column!r} "
                    f"(row {rows[0][0]} has: {', '.join(rows[0][1]) or 'nothing'})"
                )
        if not rows:
            raise ScenarioError(f"scenario 'custom': {self.p.path} has no data rows"
                                + (" (a header only)" if self.p.format == "csv" else ""))
        instances = [self._instance(line, row) for line, row in rows]
        check_unique_ids(f"scenario 'custom': {self.p.path}",
                         [(line, i.id) for (line, _), i in zip(rows, instances)])
        return instances

    def _rows(self, url: str) -> list[tuple[int, dict[str, Any]]]:
        assert self.p.format is not None  # inferred from the extension by the params
        return read_rows("scenario 'custom'", self.p.path, url, self.p.format)

    def _field(self, line: int, row: dict[str, Any], column: str) -> Any:
        if column not in row:
            raise ScenarioError(f"scenario 'custom': {self.p.path}: line {line} has no column {column!r}")
        return row[column]

    def _text(self, line: int, row: dict[str, Any], column: str) -> str:
        value = self._field(line, row, column)
        if isinstance(value, (dict, list)) or value is None or (isinstance(value, str) and not value.strip()):
            raise ScenarioError(f"scenario 'custom': {self.p.path}: line {line}, column {column!r}: "
                                f"expected non-empty text, got {value!r}")
        return str(value)

    def _options(self, line: int, row: dict[str, Any]) -> list[str]:
        columns = self.p.choice_columns
        if len(columns) > 1:
            return [self._text(line, row, c) for c in columns]
        value = self._field(line, row, columns[0])
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = None
        if not isinstance(value, list) or len(value) < 2 or not all(isinstance(v, (str, int, float)) for v in value):
            raise ScenarioError(
                f"scenario 'custom': {self.p.path}: line {line}, column {columns[0]!r}: expected a list of at least "
                f"two options (a JSON list), got {row[columns[0]]!r}"
            )
        return [str(v) for v in value]

    def _correct_index(self, line: int, answer: Any, options: list[str]) -> int:
        text = str(answer).strip()
        fmt = self.p.answer_format
        where = f"scenario 'custom': {self.p.path}: line {line}, column {self.p.answer!r}"
        if fmt in ("auto", "letter") and re.fullmatch(r"[A-Z]", text) and ord(text) - 65 < len(options):
            return ord(text) - 65
        if fmt in ("auto", "index") and re.fullmatch(r"\d+", text) and int(text) < len(options):
            return int(text)
        if fmt in ("auto", "text") and text in options:
            return options.index(text)
        raise ScenarioError(
            f"{where}: {answer!r} is not "
            f"{'a letter, a 0-based index or the text of' if fmt == 'auto' else f'the {fmt} of'} "
            f"one of its {len(options)} options"
        )

    def _instance(self, line: int, row: dict[str, Any]) -> Instance:
        question = self._text(line, row, self.p.question)
        if self.p.choices:
            options = self._options(line, row)
            correct = self._correct_index(line, self._field(line, row, self.p.answer), options)
            references = [Reference(text=o, correct=i == correct) for i, o in enumerate(options)]
        else:
            references = [Reference(text=self._text(line, row, self.p.answer), correct=True)]
        split = "test"
        column = self.p.split or (DEFAULT_SPLIT_COLUMN if DEFAULT_SPLIT_COLUMN in row else None)
        if column:
            split = str(self._field(line, row, column)).strip().lower()
            if split not in _SPLITS:
                raise ScenarioError(
                    f"scenario 'custom': {self.p.path}: line {line}, column {column!r}: "
                    f"{split!r} is not one of train, valid, test"
                )
        ident = self._text(line, row, self.p.id) if self.p.id else f"line{line}"
        return Instance(id=ident, split=split, input=Input(text=question), references=references)
