"""bAbI (Weston et al., 2015): twenty synthetic reading-and-reasoning tasks, as HELM Classic runs them
(``babi_qa_scenario.py``, run entries ``babi_qa:task=all`` and tasks 3, 15 and 19 at priority 2, a targeted
reasoning evaluation).

The source is HELM's: ``tasks_1-20_v1-2.tar.gz`` (Weston's site), files ``en-valid/qa<task>_{train,valid,test}.txt``
(HELM reads the ``en-valid`` folder), tasks in order, then splits in that order, lines in file order (ids
``id<i>``). HELM's parse, quirks kept: a line is ``<id> <text>``; id 1 starts a new story; a line whose text has a
``?`` is a question, ``<question>\\t<answer>\\t<supporting ids>``, else a fact appended to the story with its line
end. The input is the story's facts joined as they are (each ends with its newline), ``Question: `` and the
question stripped; the reference the answer stripped, task 19's path spelt out (``s,w`` -> ``south west``). HELM's
generation adapter (``Passage:`` / ``Answer:``, five examples, 5 tokens, stop at a newline); quasi-exact match.
The site publishes no checksum: the pin is recorded at first fetch.
"""

from __future__ import annotations

import io
import tarfile
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

URL = "http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz"
ARCHIVE = "tasks_1-20_v1-2.tar.gz"
SPLITS: dict[str, Split] = {"train": "train", "valid": "valid", "test": "test"}
DIRECTIONS = {"s": "south", "n": "north", "e": "east", "w": "west"}


class BabiParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: Literal["all", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17",
                  "18", "19", "20"] = "all"


def spelt_path(path: str) -> str:
    """HELM's ``process_path``: task 19's ``s,w`` as ``south west``."""
    return " ".join(DIRECTIONS[step] for step in path.split(","))


def parse(task: int, lines: list[str]) -> list[tuple[str, str]]:
    """HELM's reading of one file: (input, answer) per question line."""
    out: list[tuple[str, str]] = []
    story: list[str] = []
    for line in lines:
        words = line.split(" ")
        if int(words[0]) == 1:
            story = []
        fact = " ".join(words[1:])
        if "?" in fact:
            question, answer = fact.split("\t")[:2]
            answer = answer.strip()
            out.append(("".join(story) + "Question: " + question.strip(),
                        spelt_path(answer) if task == 19 else answer))
        else:
            story.append(fact)
    return out


@scenario("babi_qa")
class BabiQA(Scenario[BabiParams]):
    VERSION = "1"
    SOURCE_REVISION = "v1-2"
    Params = BabiParams
    description = ("bAbI: twenty synthetic reasoning tasks over short stories (HELM Classic's targeted reasoning "
                   "evaluation; quasi-exact match).")
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "efficiency"]
    helm_wording = "HELM's generation adapter: Passage:, the story and question, Answer:; five examples"
    helm_differences = ("babi_qa: the archive from Weston's site, pinned by its sha256 (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Passage: ", "Answer", 5, ["\n"])

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=ARCHIVE, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[ARCHIVE]
        tasks = range(1, 21) if self.params.task == "all" else [int(self.params.task)]
        try:
            with tarfile.open(fileobj=io.BytesIO(read_source(self.name, url)), mode="r:*") as tar:
                texts = {m.name.removeprefix("tasks_1-20_v1-2/"): m for m in tar if m.isfile()}
                out: list[Instance] = []
                for task in tasks:
                    for name, split in SPLITS.items():
                        path = f"en-valid/qa{task}_{name}.txt"
                        member = texts.get(path)
                        handle = tar.extractfile(member) if member is not None else None
                        if handle is None:
                            raise ScenarioError(f"scenario {self.name!r}: {url} has no {path}")
                        text = handle.read().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
                        lines = text.splitlines(keepends=True)  # HELM's list(open(...)): universal newlines
                        try:
                            pairs = parse(task, lines)
                        except (ValueError, KeyError) as exc:
                            raise ScenarioError(f"scenario {self.name!r}: {url}: {path} is not bAbI's format "
                                                f"({type(exc).__name__}: {exc})") from None
                        out += [Instance(id=f"id{len(out) + k}", split=split, input=Input(text=text),
                                         references=[Reference(text=answer, correct=True)])
                                for k, (text, answer) in enumerate(pairs)]
        except (tarfile.TarError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable tar.gz ({exc})") from None
        return out
