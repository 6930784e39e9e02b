"""NaturalQuestions (Kwiatkowski et al., 2019), dev set: open-book with the long answer, or closed-book,
as HELM Lite runs it.

The sources are the five ``nq-dev-0{0..4}.jsonl.gz`` files on Google's bucket (HELM's URLs, v1.0).
HELM keeps the examples with at least one short answer and, **in each file**, sends even positions to
train and odd ones to valid; one Python ``random`` stream seeded 0 before the first file draws
``randint(0, n-1)`` for every kept example (:func:`answer_index`), which picks the short answer a train
example shows and the long answer it comes from; valid examples keep every short answer, deduplicated
in order. Answers and long answers are the HTML bytes at their offsets, ``&nbsp;`` bytes as spaces,
entities unescaped, tags dropped. The question is ``str.capitalize()``-d (which lower-cases the rest)
and gets ``?``. ``mode=openbook_longans``: ``Passage: <long answer>``, blank line, ``Question: <q>``;
``closedbook``: the question alone behind ``Question:``. Generation, five examples, 300 tokens, stop at
a newline; F1. Ids ``id<i>`` over all files. The pins are recorded at first fetch (``sha256_unknown``).
"""

from __future__ import annotations

import html
import json
import random
import re
from collections.abc import Iterator
from typing import Literal

import fsspec
from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.helm_lite import GENERATION_WORDING, generation_spec

BASE_URL = "https://storage.googleapis.com/natural_questions/v1.0/dev"
FILES = [f"nq-dev-{i:02d}.jsonl.gz" for i in range(5)]
SEED = 0
_TAG = re.compile(r"<([^>]*)>")


class NaturalQAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["openbook_longans", "closedbook"] = "openbook_longans"
    follow_format: bool = False  # HELM's follow_format_instructions prefix/suffix (its instruction-following models)


def clean_html(raw: bytes) -> str:
    """HELM's ``_clean_text``: non-breaking spaces to spaces, entities unescaped, tags removed."""
    return _TAG.sub("", html.unescape(raw.replace(b"\xc2\xa0", b" ").decode("utf-8")))


def answers_of(example: dict) -> tuple[list[str], list[str]]:
    """(short answers, the long answer of each) over all annotations, in order."""
    page = example["document_html"].encode("utf-8")
    shorts, longs = [], []
    for annotation in example["annotations"]:
        span = annotation["long_answer"]
        long_text = clean_html(page[span["start_byte"]:span["end_byte"]])
        for short in annotation["short_answers"]:
            shorts.append(clean_html(page[short["start_byte"]:short["end_byte"]]))
            longs.append(long_text)
    return shorts, longs


def answer_index(rng: random.Random, n: int) -> int:
    return rng.randint(0, n - 1)


@scenario("natural_qa")
class NaturalQA(Scenario[NaturalQAParams]):
    VERSION = "1"
    SOURCE_REVISION = "v1.0-dev"
    Params = NaturalQAParams
    description = ("NaturalQuestions: Google queries with Wikipedia answers "
                   "(HELM Lite: open-book long answer, or closed-book).")
    main_metric = "f1_score"
    metrics = ["f1_score", "exact_match", "quasi_exact_match", "efficiency"]
    helm_wording = GENERATION_WORDING
    helm_differences = ("natural_qa: the five dev files HELM reads are pinned by sha256 (recorded at first fetch); "
                        "HELM pins none",)

    @property
    def mode(self) -> str:
        return self.params.mode

    @property
    def default_adapter(self) -> AdapterSpec:
        prefix = "" if self.mode == "openbook_longans" else "Question: "
        return generation_spec(prefix, "Answer", 300, ["\n"], follow_format=self.params.follow_format)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f, url=self.web_url(f"{BASE_URL}/{f}"), sha256_unknown=True) for f in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rng = random.Random(SEED)  # HELM's random.seed(0) before the first file
        out: list[Instance] = []
        for name in FILES:
            url = files[name]
            kept = 0
            for number, example in self._examples(url):
                if not any(a["short_answers"] for a in example["annotations"]):
                    continue
                try:
                    shorts, longs = answers_of(example)
                    question = example["question_text"]
                except (ValueError, KeyError, TypeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: not a NaturalQuestions example: "
                                        f"{type(exc).__name__}: {exc}") from None
                split = "train" if kept % 2 == 0 else "valid"  # HELM's even/odd, counted per file
                kept += 1
                out.append(self._instance(len(out), question, shorts, longs, split, answer_index(rng, len(shorts))))
        return out

    def _examples(self, url: str) -> Iterator[tuple[int, dict]]:
        """The examples of one gzipped JSON Lines file, streamed (a dev file is gigabytes of HTML unpacked)."""
        number = 0
        try:
            with fsspec.open(url, "rb", compression="gzip") as fh:
                for number, line in enumerate(fh, start=1):  # noqa: B007 - number names the line in errors
                    if line.strip():
                        example = json.loads(line)
                        if not isinstance(example, dict) or not isinstance(example.get("annotations"), list):
                            raise ValueError("no annotations list")
                        yield number, example
        except FileNotFoundError:
            raise ScenarioError(f"scenario {self.name!r}: {url} does not exist") from None
        except (OSError, EOFError, ValueError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} "
                                f"line {number + 1 if isinstance(exc, (OSError, EOFError)) else number}: "
                                f"not gzipped NaturalQuestions JSON Lines: {type(exc).__name__}: {exc}") from None

    def _instance(self, index: int, question: str, shorts: list[str], longs: list[str], split: str,
                  pick: int) -> Instance:
        question = question.capitalize()
        question += "" if question.endswith("?") else "?"
        text = question if self.mode == "closedbook" else f"Passage: {longs[pick]}\n\nQuestion: {question}"
        answers = shorts[pick:pick + 1] if split == "train" else list(dict.fromkeys(shorts))
        return Instance(id=f"id{index}", split=split, input=Input(text=text),
                        references=[Reference(text=a, correct=True) for a in answers])
