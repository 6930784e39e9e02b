"""OpenAI MRCR, multi-round co-reference resolution (HELM Long Context, ``OpenAIMRCRScenario``): a long
synthetic conversation in which the user asked for several pieces of writing, 2, 4 or 8 of them the same ask
(the needles); the last turn asks for the i-th of those, to be returned after a given random string.

The source is the Hub dataset ``openai/mrcr`` at HELM's revision ``204b0d4e…``, file ``<needles>needle.parquet``
(``prompt``: the conversation as a JSON list of ``{role, content}``; ``answer``; ``random_string_to_prepend``),
read a row group at a time. A row whose messages hold more than ``max_num_words`` words (whitespace-separated
pieces, summed over the messages, as HELM counts them) is left out; ids are ``<needles>needle<row>``, counting
every row. The conversation is sent as it is (HELM's chat adapter), 2,000 tokens, greedy, and scored by
``openai_mrcr_accuracy`` (the main metric: the answer after the random string, compared with difflib) and
exact match.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmflow.errors import format_validation_error
from helmflow.records import AdapterSpec, ChatMessage, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING, check_columns
from helmflow.scenarios.ruler_qa import words

REPO = "openai/mrcr"
REVISION = "204b0d4e8d9ca5c0a90bf942fdb2a5969094adc0"
COLUMNS = {"prompt": "string", "answer": "string", "random_string_to_prepend": "string"}
BATCH_ROWS = 8  # rows decoded at once: a conversation can hold a million characters


class MrcrParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    needles: Literal[2, 4, 8] = Field(description="how many identical asks hide in each conversation (2, 4 or 8)")
    max_num_words: int | None = Field(131072, ge=1, description="conversations with more words are left out "
                                                                "(none: every one)")


def mrcr_spec() -> AdapterSpec:
    """HELM's ``get_openai_mrcr_spec``: chat, the conversation as it is, 2,000 tokens, greedy."""
    return AdapterSpec(method="chat", input_prefix="", output_prefix="", max_train_instances=0,
                       generation=GenerationParams(max_tokens=2000, temperature=0.0, stop=[], num_outputs=1))


@scenario("openai_mrcr")
class OpenAIMRCR(Scenario[MrcrParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = MrcrParams
    description = ("OpenAI MRCR: return the i-th of several identical asks hidden in a long conversation (HELM Long "
                   "Context).")
    main_metric = "openai_mrcr_accuracy"
    metrics = ["openai_mrcr_accuracy", "exact_match", "quasi_exact_match", "prefix_exact_match",
               "quasi_prefix_exact_match", "efficiency"]
    default_adapter = mrcr_spec()
    helm_wording = RAW_PROMPT_WORDING

    @property
    def filename(self) -> str:
        return f"{self.params.needles}needle.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.hub_url(self.filename))]

    def load(self, files: dict[str, str]) -> Iterator[Instance]:
        url = files[self.filename]
        limit = self.params.max_num_words
        try:
            opened = fsspec.open(url, "rb").open()
        except FileNotFoundError:
            raise ScenarioError(f"scenario {self.name!r}: {url} does not exist") from None
        with opened as fh:
            try:
                parquet = pq.ParquetFile(fh)
            except pa.ArrowInvalid as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable Parquet file: {exc}") from None
            check_columns(self.name, url, parquet.schema_arrow, COLUMNS)
            number = 0
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(COLUMNS)):
                for row in batch.to_pylist():
                    where = f"scenario {self.name!r}: {url} row {number}"
                    number += 1
                    try:
                        messages = [ChatMessage.model_validate(m) for m in json.loads(row["prompt"])]
                    except (json.JSONDecodeError, TypeError) as exc:
                        raise ScenarioError(f"{where}: prompt is not a JSON list of messages: {exc}") from None
                    except ValidationError as exc:
                        raise ScenarioError(f"{where}: {format_validation_error(exc)}") from None
                    if limit and sum(words(m.content) for m in messages) > limit:
                        continue
                    yield Instance(id=f"{self.params.needles}needle{number - 1}", split="test",
                                   input=Input(messages=messages),
                                   references=[Reference(text=row["answer"], correct=True)],
                                   extra={"random_string_to_prepend": row["random_string_to_prepend"]})
