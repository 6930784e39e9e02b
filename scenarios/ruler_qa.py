"""RULER's QA task (Hsieh et al., 2024): a SQuAD or HotpotQA question asked over as many documents as fit in a
length budget, as HELM's Long Context board synthesises it (``ruler_qa_scenarios.py`` and its helper, NVIDIA
RULER's ``scripts/data/synthetic/qa.py`` at ``860f2bd5``). The two scenarios are ``ruler_squad`` and
``ruler_hotpotqa``; this module holds what they share: reading each dataset's documents and questions, and
HELM's sample synthesis, reimplemented here draw for draw.

How HELM builds its 500 samples (``generate_samples``; a "token" is a whitespace-separated word):

- ``random.seed(42)`` once; the documents are the dataset's distinct paragraphs, sorted; each question keeps the
  indices of its own paragraphs (SQuAD: its paragraph, plus the other paragraphs of its article as
  ``more_context``; HotpotQA: its ten given paragraphs) in the dataset's order.
- The number of documents is found once, on question 0: from 10, in steps of 10, until the prompt and the
  answer (written as Python prints a list) and 32 output tokens pass ``max_num_words``, then one step back; it
  stops at the number of documents there are.
- Sample ``i`` is question ``i`` with its own documents, then (when more are needed) its article's others, then
  documents drawn with ``random.sample`` from the rest (by index, in order); all of them shuffled by a fresh
  ``random.Random(42)`` and numbered ``Document 1:`` on. A sample whose words plus 32 pass the budget is drawn
  again with 10 documents fewer (the draws consumed stay consumed), and at 10 or fewer drawn again as it is
  (HELM tries for ever; here 1,000 draws, then one line). When every document is used, HELM shuffles
  its own document list in place, so the next samples see it in the new order: that is kept too.
- The instance is the filled template (split ``valid``, id the sample's number), its references the answers.

The template is helmflow's wording of RULER's (the instructions, the documents, the instructions again, the
question and ``Answer:``), of about its length: its words enter the document count, as in HELM, so it is part of
the instances (and of ``VERSION``), not a prompt key a board rewords. Samples are produced one at a time: a run
never holds them all.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import fsspec
from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError
from helmflow.scenarios.infinite_bench import long_context_generation_spec

SEED = 42
NUM_SAMPLES = 500  # HELM's
TOKENS_TO_GENERATE = 32  # what RULER reserves for the answer when it sizes a sample (HELM asks for 100)
INCREMENTAL = 10
MAX_REDRAWS = 1000  # draws at the smallest document count before a question is given up (HELM: never)
DOCUMENT = "Document {i}:\n{document}"
# helmflow's wording of RULER's QA template ({context}: the numbered documents, {query}: the question)
TEMPLATE = ("Answer the question using the documents given. Reply with the answer alone, and no other words.\n\n"
            "The documents follow.\n\n{context}\n\n"
            "Answer the question using the documents given. Reply with the answer alone, and no other words.\n\n"
            "Question: {query} Answer:")
WORDING = ("the prompt is the filled template alone (HELM's generation adapter adds nothing, no examples, 100 "
           "tokens); the template is helmflow's wording of RULER's QA template, of about its length")


class RulerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_num_words: int = Field(131072, ge=64, description="the words (whitespace-separated) a prompt may hold, "
                                                          "with 32 for the answer")


@dataclass
class Question:
    query: str
    outputs: list[str]
    context: list[int]
    more_context: list[int] = field(default_factory=list)


def words(text: str) -> int:
    """RULER's token count: the pieces of the stripped text split at whitespace (an empty text is one)."""
    return len(re.split(r"\s+", text.strip()))


def read_json(scenario: str, url: str) -> Any:
    try:
        with fsspec.open(url, "rb") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise ScenarioError(f"scenario {scenario!r}: {url} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not JSON: {exc}") from None


def squad_questions(scenario: str, url: str) -> tuple[list[Question], list[str]]:
    """SQuAD 2.0's answerable questions and its distinct paragraphs (sorted), as RULER's ``read_squad``."""
    data = read_json(scenario, url)
    try:
        articles = data["data"]
        docs = sorted({p["context"] for a in articles for p in a["paragraphs"]})
        index = {c: k for k, c in enumerate(docs)}
        out = []
        for a in articles:
            article = [index[p["context"]] for p in a["paragraphs"]]
            for p in a["paragraphs"]:
                own = index[p["context"]]
                for qa in p["qas"]:
                    if not qa["is_impossible"]:
                        out.append(Question(qa["question"], [x["text"] for x in qa["answers"]], [own],
                                            [k for k in article if k != own]))
    except (KeyError, TypeError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not SQuAD 2.0's JSON (data, paragraphs, context, qas, "
                            f"question, answers, is_impossible): missing {exc}") from None
    return out, docs


def hotpotqa_questions(scenario: str, url: str) -> tuple[list[Question], list[str]]:
    """HotpotQA's questions and its distinct paragraphs (title, newline, sentences joined; sorted), as RULER's
    ``read_hotpotqa``."""
    data = read_json(scenario, url)
    try:
        docs = sorted({f"{t}\n{''.join(p)}" for d in data for t, p in d["context"]})
        index = {c: k for k, c in enumerate(docs)}
        out = [Question(d["question"], [d["answer"]], [index[f"{t}\n{''.join(p)}"] for t, p in d["context"]])
               for d in data]
    except (KeyError, TypeError, ValueError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not HotpotQA's JSON (a list of question, answer, "
                            f"context [title, sentences]): {exc}") from None
    return out, docs


class Synthesis:
    """HELM's RULER sampler over one dataset: the module-level ``random`` stream it seeds, as its own generator."""

    def __init__(self, questions: list[Question], docs: list[str], template: str, max_words: int):
        self.questions, self.docs, self.template, self.max_words = questions, docs, template, max_words
        self.rng = random.Random(SEED)

    def sample(self, index: int, num_docs: int) -> tuple[str, list[str]]:
        """RULER's ``generate_input_output``: the prompt of question ``index`` over ``num_docs`` documents."""
        q = self.questions[index]
        if num_docs < len(self.docs):
            if num_docs - len(q.context) > len(q.more_context):
                taken = set(q.context) | set(q.more_context)
                rest = [i for i in range(len(self.docs)) if i not in taken]
                chosen = q.context + q.more_context + self.rng.sample(
                    rest, max(0, num_docs - len(q.context) - len(q.more_context)))
            else:
                chosen = q.context + self.rng.sample(q.more_context, num_docs - len(q.context))
            picked = [self.docs[i] for i in chosen]
        else:
            picked = self.docs  # HELM shuffles its own list here: later samples see the new order
        random.Random(SEED).shuffle(picked)
        context = "\n\n".join(DOCUMENT.format(i=i + 1, document=d) for i, d in enumerate(picked))
        return self.template.format(context=context, query=q.query), q.outputs

    def num_docs(self) -> int:
        """RULER's search for the document count, on question 0."""
        num_docs, total = INCREMENTAL, 0
        while total + TOKENS_TO_GENERATE < self.max_words:
            text, answer = self.sample(0, num_docs)
            total = words(text + f" {answer}")
            if total + TOKENS_TO_GENERATE > self.max_words:
                num_docs -= INCREMENTAL
                break
            num_docs += INCREMENTAL
            if num_docs > len(self.docs):
                num_docs = len(self.docs)
                break
        return num_docs

    def samples(self, count: int) -> Iterator[tuple[int, str, list[str]]]:
        """(number, prompt, answers) of the first ``count`` samples, one at a time."""
        if not self.questions:
            return
        num_docs = self.num_docs()
        for index in range(min(count, len(self.questions))):
            used, tries = num_docs, 0
            while True:
                try:  # HELM's bare except: a draw that cannot be made (more documents than there are) fails too
                    text, answer = self.sample(index, used)
                except ValueError:
                    text, answer = "", []
                if text and words(text) + TOKENS_TO_GENERATE <= self.max_words:
                    break
                if used > INCREMENTAL:
                    used -= INCREMENTAL
                    continue
                tries += 1  # HELM draws again at this count until the draw fits, for ever
                if tries >= MAX_REDRAWS:
                    raise ScenarioError(f"question {index} does not fit in {self.max_words} words with {used} "
                                        f"documents in {MAX_REDRAWS} draws")
            yield index, text, answer


class RulerQA(Scenario[RulerParams]):
    """A RULER QA scenario over one dataset file (``FILENAME`` at ``URL``, read by ``read``)."""

    VERSION = "1"
    Params = RulerParams
    main_metric = "ruler_string_match_part"
    metrics = ["ruler_string_match_part", "exact_match", "quasi_exact_match", "f1_score", "rouge_l", "bleu_1",
               "bleu_4", "efficiency"]
    helm_wording = WORDING
    FILENAME: ClassVar[str] = ""
    URL: ClassVar[str] = ""

    @property
    def default_adapter(self) -> AdapterSpec:
        return long_context_generation_spec(100)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.FILENAME, url=self.web_url(self.URL), sha256_unknown=True)]

    def read(self, url: str) -> tuple[list[Question], list[str]]:
        raise NotImplementedError

    def load(self, files: dict[str, str]) -> Iterator[Instance]:
        questions, docs = self.read(files[self.FILENAME])
        synthesis = Synthesis(questions, docs, TEMPLATE, self.params.max_num_words)
        try:
            for index, text, answers in synthesis.samples(NUM_SAMPLES):
                yield Instance(id=str(index), split="valid", input=Input(text=text),
                               references=[Reference(text=a, correct=True) for a in answers])
        except (ScenarioError, ValueError) as exc:  # ValueError: a draw the data cannot make (too few documents)
            raise ScenarioError(f"scenario {self.name!r}: {files[self.FILENAME]}: {exc}") from None
