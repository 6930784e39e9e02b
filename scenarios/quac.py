"""QuAC (Choi et al., 2018): question answering in the context of a student-teacher dialogue, as HELM Classic
runs it (``quac_scenario.py``).

The sources are HELM's: ``train_v0.2.json`` and ``val_v0.2.json`` from the ``my89public/quac`` S3 bucket
(train → HELM's train split, val → valid), each ``{"data": [dialogue, ...]}``, one instance per dialogue in
file order, ids ``id<i>``. HELM seeds Python's ``random`` with 0 once, before the train file, and for each
dialogue draws ``k = randint(3, number of questions) - 1``, the question asked. The input is ``Title:``,
``Background:`` (each followed by a blank line), ``Section:``, ``Passage:`` (the section text without its
trailing `` CANNOTANSWER``, then a blank line), then question/answer pairs 0 to k-2 (HELM's loop stops one
pair short of k, so pair k-1 is never shown: a quirk kept), each ``Question:``/``Answer:`` (the original
answer) and a blank line, and last ``Question: <question k>``. The references are question k's answers,
duplicates dropped in order; when the only one is ``CANNOTANSWER``, HELM adds three paraphrases of it.
Generation (no input label, ``Answer:``), five examples, 100 tokens, stop at a newline; F1. Upstream publishes
no checksum: the pins are recorded at first fetch.
"""

from __future__ import annotations

import json
import random

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

BASE_URL = "https://s3.amazonaws.com/my89public/quac"
FILES: dict[str, Split] = {"train_v0.2.json": "train", "val_v0.2.json": "valid"}
SEED = 0
UNANSWERABLE = "CANNOTANSWER"
#: HELM's extra references when a question has no answer in the passage
UNANSWERABLE_ALSO = ["Not enough information", "Cannot answer", "Do not know"]


def helm_prompt(sample: dict, rng: random.Random) -> tuple[str, list[str]]:
    """HELM's ``create_prompt``: the dialogue's prompt and question k's references (one ``randint`` draw)."""
    prompt = f"Title: {sample['title']}\n\nBackground: {sample['background']}\n\n"
    prompt += f"Section: {sample['section_title']}\n"
    dialogue = sample["paragraphs"][0]
    context = dialogue["context"]
    if not context.endswith(" " + UNANSWERABLE):
        raise ValueError(f"the context does not end with ' {UNANSWERABLE}' (HELM asserts it does)")
    prompt += f"Passage: {context[:-len(' ' + UNANSWERABLE)]}\n\n"
    qas = dialogue["qas"]
    k = rng.randint(3, len(qas)) - 1
    for i in range(k - 1):
        prompt += f"Question: {qas[i]['question']}\nAnswer: {qas[i]['orig_answer']['text']}\n\n"
    prompt += f"Question: {qas[k]['question']}"
    answers = list(dict.fromkeys(a["text"] for a in qas[k]["answers"]))
    if answers == [UNANSWERABLE]:
        answers.extend(UNANSWERABLE_ALSO)
    return prompt, answers


@scenario("quac")
class QuAC(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "quac-v0.2"
    description = "QuAC: answer the next question of a dialogue about a Wikipedia section (HELM Classic)."
    main_metric = "f1_score"
    metrics = ["f1_score", "exact_match", "quasi_exact_match", "calibration", "efficiency"]
    helm_wording = ("the Answer: label, the blank line between examples, five in-context examples and 100 output "
                    "tokens follow HELM's generation adapter; the Title:/Background:/Section:/Passage: layout of the "
                    "input is HELM's; no instructions, as in HELM")
    helm_differences = ("quac: the two JSON files are read from HELM's S3 URLs and pinned by their sha256 (recorded "
                        "at first fetch: upstream publishes none)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("", "Answer", 100, ["\n"])

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(f"{BASE_URL}/{name}"), sha256_unknown=True)
                for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rng = random.Random(SEED)  # HELM's random.seed(0), once, before the first split
        out: list[Instance] = []
        for name, split in FILES.items():
            url = files[name]
            try:
                samples = json.loads(read_source(self.name, url).decode("utf-8"))["data"]
            except (ValueError, KeyError, TypeError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not QuAC's JSON ({exc})") from None
            for number, sample in enumerate(samples):
                try:
                    prompt, answers = helm_prompt(sample, rng)
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url}: dialogue {number}: {exc!r}") from None
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=prompt),
                                    references=[Reference(text=a, correct=True) for a in answers]))
        return out
