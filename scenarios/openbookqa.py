"""OpenbookQA (AI2, 2018): 4-option elementary science questions, as HELM Lite runs them.

The source is AI2's zip ``OpenBookQA-V1-Sep2018.zip``; HELM reads ``Data/Main/train.jsonl`` (train)
and ``Data/Main/test.jsonl`` (test) and ignores dev. Instances in HELM's order (train rows, then test
rows, file order), ids ``id<i>`` as HELM numbers them; references are the four choices in order, the
one at ``answerKey`` correct. Multiple choice joint, five in-context examples (HELM's class-balanced
draw), exact match of the chosen option. Upstream publishes no checksum: the pins are recorded at
first fetch (``sha256_unknown``, see docs/boards/lite.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines
from helmflow.scenarios.helm_lite import MULTIPLE_CHOICE_WORDING, multiple_choice_spec

ZIP_URL = "https://ai2-public-datasets.s3.amazonaws.com/open-book-qa/OpenBookQA-V1-Sep2018.zip"
MEMBERS = {"train.jsonl": "OpenBookQA-V1-Sep2018/Data/Main/train.jsonl",
           "test.jsonl": "OpenBookQA-V1-Sep2018/Data/Main/test.jsonl"}
LETTERS = "ABCD"


class Choice(BaseModel):
    text: str
    label: str


class Question(BaseModel):
    stem: str
    choices: list[Choice]


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    question: Question
    answerKey: str  # noqa: N815 - the file's field name


@scenario("openbookqa")
class OpenbookQA(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "OpenBookQA-V1-Sep2018"
    description = "OpenbookQA: 4-option elementary science questions (HELM Lite, multiple choice joint)."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter = multiple_choice_spec("common sense and elementary science")
    helm_wording = MULTIPLE_CHOICE_WORDING
    helm_differences = ("openbookqa: the zip is read from AI2's S3 URL as HELM does, but pinned by the sha256 of "
                        "the two files read (recorded at first fetch: upstream publishes none)",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.archive_url(ZIP_URL, member), sha256_unknown=True)
                for name, member in MEMBERS.items()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in (("train.jsonl", "train"), ("test.jsonl", "test")):
            url = files[name]
            for number, line in read_jsonl_lines(self.name, url):
                where = f"scenario {self.name!r}: {url} line {number}"
                row = parse_jsonl_row(where, line, Row)
                texts = [c.text for c in row.question.choices]
                if (len(texts) != 4 or row.answerKey not in LETTERS
                        or row.question.choices[LETTERS.index(row.answerKey)].label != row.answerKey):
                    raise ScenarioError(f"{where} (id {row.id}): "
                                        "expected 4 choices labelled A-D and an answerKey among them")
                correct = texts[LETTERS.index(row.answerKey)]
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=row.question.stem),
                                    references=[Reference(text=t, correct=t == correct) for t in texts],
                                    extra={"source_id": row.id}))
        return out
