"""InfiniteBench (Zhang et al., 2024): what HELM's two English novel tasks share (``infinite_bench_en_mc`` and
``infinite_bench_en_sum``). HELM loads the Hub dataset ``xinrongzhang2022/InfiniteBench`` at revision
``90f03943…`` with ``load_dataset(split=<task>)``, which reads the repository's ``<task>.jsonl``: one JSON object
a line (``id``, ``context``, ``input``, ``answer`` and ``options``, lists of strings). The rows are read a line at a
time here (each holds a whole novel), in file order, and kept when their words (whitespace-separated pieces,
as HELM counts them: an empty text is one) are at most ``max_num_words``; the input is the novel, a blank line
and the task's input, as HELM joins them; ids are the rows' own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import fsspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmflow.errors import format_validation_error
from helmflow.records import AdapterSpec, GenerationParams
from helmflow.scenarios import ScenarioError

REPO = "xinrongzhang2022/InfiniteBench"
REVISION = "90f0394333616266d9fe85824ceaf505093cbaa5"


class InfiniteBenchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_num_words: int = Field(131072, ge=1, description="rows with more words (novel, input and options) are left out")


class Row(BaseModel):
    """A row as HELM's ``Features`` cast it."""

    model_config = ConfigDict(extra="ignore")
    id: int
    context: str
    input: str
    answer: list[str]
    options: list[str] = Field(default_factory=list)


def rows(scenario: str, url: str) -> Iterator[Row]:
    """The file's rows, one line at a time (never the whole file)."""
    try:
        opened = fsspec.open(url, "rb").open()
    except FileNotFoundError:
        raise ScenarioError(f"scenario {scenario!r}: {url} does not exist") from None
    with opened as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data: Any = json.loads(raw)
                yield Row.model_validate(data)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ScenarioError(f"scenario {scenario!r}: {url} line {number} is not JSON: {exc}") from None
            except ValidationError as exc:
                raise ScenarioError(f"scenario {scenario!r}: {url} line {number}: "
                                    f"{format_validation_error(exc)}") from None


def long_context_generation_spec(max_tokens: int) -> AdapterSpec:
    """HELM's ``_get_long_context_generation_adapter_spec``: the input alone, no examples, greedy, no stop."""
    return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="", output_prefix="",
                       output_suffix="", instance_prefix="", reference_prefix="A. ", reference_suffix="",
                       max_train_instances=0,
                       generation=GenerationParams(max_tokens=max_tokens, temperature=0.0, stop=[], num_outputs=1))
