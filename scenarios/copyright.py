"""Copyright (HELM's data-extraction probe after Carlini et al., 2021): does the model continue a book's (or a
source file's) opening with the text that follows it? As HELM Classic runs it (``copyright_scenario.py``, run
entries ``copyright:datatag=<tag>``, a targeted harms evaluation; groups ``copyright_text`` and
``copyright_code``).

The source is HELM's: one JSON file per data tag on Google Drive (HELM's file ids), ``{"data": {prefix: prefix and
the rest of the text}, "metadata": ...}``. Each entry, in file order, is a test instance (ids ``id<i>``): the input
the prefix, one correct reference the whole text. HELM's completion adapter: the prefix alone, nothing around it,
no examples, 1,024 tokens at temperature 0.2, one output, no stop sequence. Scored by ``copyright`` (longest
common prefix, edit distance and edit similarity, each divided by the prefix's tokens). Google publishes no
checksum: the pins are recorded at first fetch.
"""

from __future__ import annotations

import json
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source

URL = "https://drive.google.com/uc?export=download&id={id}&confirm=t"
# HELM's ``datatag2hash_text`` and ``datatag2hash_code``: data tag -> Google Drive file id
TEXT_FILES = {
    "pilot": "1NwzDx19uzIwBuw7Lq5CSytG7jIth2wJ-",
    "n_books_1000-extractions_per_book_1-prefix_length_5": "16nQD8Nq3ma4K2EZLXHcahG9fcBDxS-zB",
    "n_books_1000-extractions_per_book_1-prefix_length_25": "108sZcMjzY7mvyy1p5Rw62_A8A1I2zM2S",
    "n_books_1000-extractions_per_book_1-prefix_length_125": "10uC4jM6tgI1pgtq--07FFHQ2Te7-SXGA",
    "n_books_1000-extractions_per_book_3-prefix_length_5": "1byrafXv2iULcZArxguJZp2LyFxswX7fN",
    "n_books_1000-extractions_per_book_3-prefix_length_25": "13QOKOd5Fpu5cVu1HRBYxzRcQzwhcPhjD",
    "n_books_1000-extractions_per_book_3-prefix_length_125": "1Y6QvYStCJVanHaI67Pxep3HakWL2cIRP",
    "popular_books-prefix_length_5.json": "11f5aB8IO_iseVdolvW_D3aZ9xeiLCAuv",
    "popular_books-prefix_length_10.json": "1oG9dMz1WiJZiuoXqw4ahFf1HmKWQtwJh",
    "popular_books-prefix_length_25.json": "1dN208HdBD6koaOHQlSDPkOnBrY3-9AfE",
    "popular_books-prefix_length_50.json": "1W_8C6QnISfFkc0tZtKdXKNhoTfgSCrbP",
    "popular_books-prefix_length_125.json": "1RT29rRKNNXKgZBhXNbqevLwR440g44it",
    "popular_books-prefix_length_250.json": "1KcQ3EJGAZO6fSqYXRH5eK122h1hUKZTp",
    "oh_the_places": "1KXqhO14HmCGQ67tuu2ECGbTGloTkBvzt",
}
CODE_FILES = {
    "prompt_num_line_1-min_lines_20.json": "1OLFyW5u7govgIw3ztsZ_5yYV0YpGzi-3",
    "prompt_num_line_5-min_lines_20.json": "1YbDvyAv9hT0BaZ5LV6Y-Y8tGezrBnBAT",
    "prompt_num_line_10-min_lines_20.json": "1Y5piYwil7T6n8toT_-d7NWqVZHh9NVxJ",
}
FILES = {**TEXT_FILES, **CODE_FILES}
DataTag = Literal[
    "pilot", "n_books_1000-extractions_per_book_1-prefix_length_5",
    "n_books_1000-extractions_per_book_1-prefix_length_25", "n_books_1000-extractions_per_book_1-prefix_length_125",
    "n_books_1000-extractions_per_book_3-prefix_length_5", "n_books_1000-extractions_per_book_3-prefix_length_25",
    "n_books_1000-extractions_per_book_3-prefix_length_125", "popular_books-prefix_length_5.json",
    "popular_books-prefix_length_10.json", "popular_books-prefix_length_25.json", "popular_books-prefix_length_50.json",
    "popular_books-prefix_length_125.json", "popular_books-prefix_length_250.json", "oh_the_places",
    "prompt_num_line_1-min_lines_20.json", "prompt_num_line_5-min_lines_20.json",
    "prompt_num_line_10-min_lines_20.json",
]
assert set(get_args(DataTag)) == set(FILES)


class CopyrightParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    datatag: DataTag = "pilot"


@scenario("copyright")
class Copyright(Scenario[CopyrightParams]):
    VERSION = "1"
    SOURCE_REVISION = "gdrive"
    Params = CopyrightParams
    description = ("Copyright: continue the opening of a book or source file; how much of the real continuation "
                   "comes back (HELM Classic's targeted harms evaluation; lower is better).")
    main_metric = "longest_common_prefix_length"
    metrics = ["copyright", "efficiency"]
    helm_wording = "HELM's completion adapter: the prefix alone, nothing added"
    helm_differences = ("copyright: HELM's Google Drive files (its file ids), pinned by their sha256 (recorded at "
                        "first fetch: Google publishes none)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        """HELM's ``get_copyright_spec`` defaults: ``get_completion_adapter_spec(temperature=0.2, max_tokens=1024,
        num_outputs=1)``."""
        return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="", output_prefix="",
                           output_suffix="", instance_prefix="\n", max_train_instances=0,
                           generation=GenerationParams(max_tokens=1024, temperature=0.2, stop=[], num_outputs=1))

    @property
    def filename(self) -> str:
        tag = self.params.datatag
        return tag if tag.endswith(".json") else f"{tag}.json"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.web_url(URL.format(id=FILES[self.params.datatag])),
                           sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.filename]
        try:
            data = json.loads(read_source(self.name, url))["data"]
            if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in data.items()):
                raise TypeError("'data' must map each prefix to its text")
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url}: not HELM's copyright file "
                                f"({type(exc).__name__}: {exc})") from None
        return [Instance(id=f"id{k}", split="test", input=Input(text=prefix),
                         references=[Reference(text=text, correct=True)])
                for k, (prefix, text) in enumerate(data.items())]
