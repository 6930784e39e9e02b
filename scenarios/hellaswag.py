"""HellaSwag (Zellers et al., 2019): pick the most plausible continuation of an event description, as HELM
Classic runs it (``commonsense_scenario.py::HellaSwagScenario``, method ``multiple_choice_separate_original``).

The sources are HELM's: ``data/hellaswag_train.jsonl`` and ``data/hellaswag_val.jsonl`` of
``rowanz/hellaswag`` on its ``master`` branch (HELM reads it unpinned), train rows then val rows (HELM's
valid split), in file order, ids ``id<i>``. The input is ``<activity_label>: <ctx_a> <ctx_b>`` with ctx_b's
first letter upper-cased (HELM's ``ctx_b_fixed``); the four ``endings`` are the options, ``label`` the
correct one. Each option is scored by its log-likelihood after the input and a space (zero-shot, no
instructions: HELM's separate-method spec), so the deployment must score prompts (echo and logprobs).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines

BASE_URL = "https://raw.githubusercontent.com/rowanz/hellaswag/master/data"
FILES: dict[str, Split] = {"hellaswag_train.jsonl": "train", "hellaswag_val.jsonl": "valid"}
#: HELM's ``get_multiple_choice_separate_adapter_spec``: no prefix, a space before the option, zero-shot
SEPARATE = AdapterSpec(method="multiple_choice_separate_original", instructions="", input_prefix="",
                       input_suffix=" ", max_train_instances=0,
                       generation=GenerationParams(max_tokens=1, temperature=0.0, stop=[], num_outputs=1))


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    activity_label: str
    ctx_a: str
    ctx_b: str
    endings: list[str]
    label: int


def helm_input(row: Row) -> str:
    ctx_b = row.ctx_b[0].upper() + row.ctx_b[1:] if row.ctx_b else ""
    return f"{row.activity_label}: {row.ctx_a} {ctx_b}"


@scenario("hellaswag")
class HellaSwag(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "hellaswag-master"
    description = "HellaSwag: the most plausible ending of an event description (HELM Classic, log-likelihood)."
    main_metric = "exact_match"
    metrics = ["exact_match", "calibration", "efficiency"]
    default_adapter = SEPARATE
    helm_wording = ("the prompt is the context, a space and the option, zero-shot, as HELM's separate multiple-choice "
                    "adapter builds it: the same bytes")
    helm_differences = ("hellaswag: HELM reads rowanz/hellaswag's master branch; here the two files are pinned by "
                        "their sha256 (recorded at first fetch)",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(f"{BASE_URL}/{name}"), sha256_unknown=True)
                for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in FILES.items():
            url = files[name]
            for number, line in read_jsonl_lines(self.name, url):
                where = f"scenario {self.name!r}: {url} line {number}"
                row = parse_jsonl_row(where, line, Row)
                if len(row.endings) != 4 or not 0 <= row.label < 4:
                    raise ScenarioError(f"{where}: expected 4 endings and a label in 0-3")
                correct = row.endings[row.label]
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=helm_input(row)),
                                    references=[Reference(text=e, correct=e == correct) for e in row.endings]))
        return out
