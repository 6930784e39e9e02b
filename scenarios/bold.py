"""BOLD (Dhamala et al., 2021): open-ended continuations of Wikipedia sentence openings about professions, genders,
races, religious and political ideologies, scored for toxicity and bias. As HELM Classic runs it
(``bold_scenario.py``, run entry ``bold:subject=all``, a targeted harms evaluation).

The source is HELM's: ``prompts/<domain>_prompt.json`` of ``amazon-research/bold`` (HELM reads branch ``main``; here
its commit, which ``main`` has not moved from since 2021), domains in HELM's order (gender, political_ideology,
profession, race, religious_ideology; ``all`` reads the five). Each line of a file is one JSON object
``{group: {name: [prompt, ...]}}``; HELM keeps the **first** prompt of each name, shuffles the (group, prompt) pairs
with ``random.seed(0)``, and its train/test cut (computed from an empty list) puts every one in test. The input
is the prompt and a space (ids ``id<i>`` in shuffled order). HELM's completion adapter: the prompt alone, no
examples, 20 tokens at temperature 0.9, one output, no stop sequence. The files' sha256s at the commit are in
docs/boards/classic.md; they are recorded at first fetch, as the board's other GitHub sources are.
"""

from __future__ import annotations

import json
import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source

DOMAINS = ("gender", "political_ideology", "profession", "race", "religious_ideology")  # HELM's order


class BOLDParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Literal["all", "gender", "political_ideology", "profession", "race", "religious_ideology"] = "all"


def first_prompts(text: str, where: str) -> list[tuple[str, str]]:
    """HELM's reading of one domain file: (group, the first prompt of each name), line by line."""
    out: list[tuple[str, str]] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # Python's universal newlines
    if lines[-1] == "":
        lines.pop()  # the newline ending the last line (an open file's iteration yields no line after it)
    for number, line in enumerate(lines, start=1):
        try:
            for group, names in json.loads(line).items():
                for prompts in names.values():
                    if not isinstance(prompts[0], str):
                        raise TypeError(f"{group}: a prompt is not text")
                    out.append((group, prompts[0]))
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
            raise ScenarioError(f"{where} line {number}: not BOLD's shape ({type(exc).__name__}: {exc})") from None
    return out


@scenario("bold")
class BOLD(Scenario[BOLDParams]):
    VERSION = "1"
    GIT_REPO = "amazon-research/bold"
    GIT_COMMIT = "3ad652c773f5d1e30d5f6f61657ed934d768ecad"
    Params = BOLDParams
    description = ("BOLD: open-ended continuations of sentence openings about groups of people, scored for "
                   "toxicity and bias (HELM Classic's targeted harms evaluation).")
    main_metric = "toxic_fraction"
    metrics = ["efficiency"]  # the board's toxicity and bias metrics score it
    helm_wording = "HELM's completion adapter: the prompt alone, then a space"
    helm_differences = ("bold: amazon-research/bold at its commit (HELM reads the main branch, at that commit since "
                        "2021); HELM 0.5.16's run spec asks for no toxicity or bias metric, the published Classic "
                        "board shows both: the board's toxicity and bias score it",)

    @property
    def default_adapter(self) -> AdapterSpec:
        """HELM's ``get_completion_adapter_spec(temperature=0.9, max_tokens=20)``."""
        return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="", output_prefix="",
                           output_suffix="", instance_prefix="\n", max_train_instances=0,
                           generation=GenerationParams(max_tokens=20, temperature=0.9, stop=[], num_outputs=1))

    @property
    def domains(self) -> tuple[str, ...]:
        return DOMAINS if self.params.subject == "all" else (self.params.subject,)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{d}_prompt.json", url=self.git_url(f"prompts/{d}_prompt.json"),
                           sha256_unknown=True)
                for d in self.domains]

    def load(self, files: dict[str, str]) -> list[Instance]:
        pairs: list[tuple[str, str]] = []
        for domain in self.domains:
            url = files[f"{domain}_prompt.json"]
            try:
                text = read_source(self.name, url).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not UTF-8 text: {exc}") from None
            pairs.extend(first_prompts(text, f"scenario {self.name!r}: {url}"))
        random.Random(0).shuffle(pairs)  # HELM: random.seed(0); random.shuffle(...)
        return [Instance(id=f"id{k}", split="test", input=Input(text=f"{prompt} "), sub_split=None)
                for k, (_, prompt) in enumerate(pairs)]
