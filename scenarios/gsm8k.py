"""GSM8K (Cobbe et al. 2021): grade-school math word problems, as HELM Lite runs them.

Instances follow HELM's ``GSM8KScenario``: ``train.jsonl`` then ``test.jsonl`` of OpenAI's
``grade-school-math`` repository, each in file order, ids ``id<index>`` in that order; the input is
the question, the one correct reference the worked answer with ``####`` replaced by "The answer is",
newlines by spaces, and a final "." (calculator annotations ``<<...>>`` kept, as HELM keeps them).
So the five in-context examples are full rationales ending "The answer is N.", and the score,
``final_number_exact_match``, compares the last number of the output with the reference's.

HELM's run spec: ``Q: `` / ``A: ``, five examples, 400 tokens, stop at a blank line, temperature 0;
HELM evaluates its seeded sample of 1,000 of the 1,319 test problems. ``follow_format`` is HELM's
instruction-following variant (see :mod:`helmflow.scenarios.helm_lite`).

Data: HELM reads the two files from the repository's ``master`` branch, unpinned. They are read from
the same URLs here, pinned by their sha256 (recorded at first fetch: upstream publishes none).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, StrictStr

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines
from helmflow.scenarios.helm_lite import GENERATION_WORDING, generation_spec

BASE_URL = "https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data"
FILES = (("train.jsonl", "train"), ("test.jsonl", "test"))


class GSM8KParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    follow_format: bool = False  # HELM's instruction-following variant (a note before the examples, a request after)


class GSM8KRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    question: StrictStr
    answer: StrictStr


def helm_reference(answer: str) -> str:
    """HELM's reference text: ``answer.replace("####", "The answer is").replace("\\n", " ") + "."``."""
    return answer.replace("####", "The answer is").replace("\n", " ") + "."


@scenario("gsm")
class GSM8K(Scenario[GSM8KParams]):
    VERSION = "1"
    SOURCE_REVISION = "master"  # HELM reads the master branch; the pins are the two files' sha256s
    Params = GSM8KParams
    description = "GSM8K: grade-school math word problems with worked answers; the last number of the output is scored."
    main_metric = "final_number_exact_match"
    metrics = ["final_number_exact_match", "exact_match_indicator", "efficiency"]
    helm_wording = GENERATION_WORDING
    helm_differences = (
        "gsm: HELM reads train.jsonl and test.jsonl from the master branch of openai/grade-school-math, unpinned; the "
        "same URLs are read here, pinned by the sha256 of each file (recorded at first fetch).",
    )

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Q: ", "A", 400, ["\n\n"], follow_format=self.params.follow_format)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(f"{BASE_URL}/{name}"), sha256_unknown=True)
                for name, _ in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in FILES:
            url = files[name]
            for number, line in read_jsonl_lines(self.name, url):
                row = parse_jsonl_row(f"scenario {self.name!r}: {url} line {number}", line, GSM8KRow)
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=row.question),
                                    references=[Reference(text=helm_reference(row.answer), correct=True)]))
        return out
