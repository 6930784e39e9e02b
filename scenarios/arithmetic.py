"""Multi-digit arithmetic, generated locally: a reasoning probe that needs no download.

With ``choices=N`` (N >= 2) each question also gets N lettered options (the answer plus seeded
near-miss distractors) and the scenario defaults to ``multiple_choice_joint``.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field, field_validator

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario

_DISTRACTOR_OFFSETS = [d for d in range(-10, 11) if d] + [-100, 100, -1000, 1000]
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


class ArithmeticParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    digits: int = Field(3, ge=1, le=12)
    ops: str = Field("+-", pattern=r"^[+\-*]+$")
    num_train: int = Field(20, ge=0, le=10_000)
    num_test: int = Field(200, ge=1, le=100_000)
    seed: int = 0
    choices: int = Field(0, ge=0, le=10)

    @field_validator("choices")
    @classmethod
    def _choices(cls, v: int) -> int:
        if v == 1:
            raise ValueError("choices must be 0 (free answer) or at least 2")
        return v


_FREE_ANSWER = AdapterSpec(
    method="generation",
    instructions="Compute the result. Answer with the number only.",
    input_prefix="Question: ",
    output_prefix="Answer: ",
    max_train_instances=3,
    generation=GenerationParams(max_tokens=8, temperature=0.0, stop=["\n"]),
)


def _options(rng: random.Random, answer: int, count: int) -> tuple[list[str], int]:
    """``count`` distinct options around ``answer`` and the index of the correct one."""
    wrong = [answer + d for d in rng.sample(_DISTRACTOR_OFFSETS, count - 1)]
    position = rng.randrange(count)
    return [str(v) for v in wrong[:position] + [answer] + wrong[position:]], position


@scenario("arithmetic")
class Arithmetic(Scenario[ArithmeticParams]):
    VERSION = "1"
    Params = ArithmeticParams
    description = "Multi-digit integer arithmetic (a op b) with a single exact answer."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]

    @property
    def default_adapter(self) -> AdapterSpec:
        if not self.params.choices:
            return _FREE_ANSWER
        return AdapterSpec(
            method="multiple_choice_joint",
            instructions="The following are multiple choice questions (with answers) about arithmetic.",
            input_prefix="Question: ",
            output_prefix="Answer: ",
            max_train_instances=3,
            generation=GenerationParams(max_tokens=5, temperature=0.0, stop=[]),
        )

    def load(self, files: dict[str, str]) -> list[Instance]:
        p: ArithmeticParams = self.params
        rng = random.Random(p.seed)
        low, high = 10 ** (p.digits - 1) if p.digits > 1 else 0, 10**p.digits - 1
        out: list[Instance] = []
        # train first, then test, so adding test items never changes the train pool
        for split, count in (("train", p.num_train), ("test", p.num_test)):
            for i in range(count):
                a, b, op = rng.randint(low, high), rng.randint(low, high), rng.choice(p.ops)
                answer = _OPS[op](a, b)
                if p.choices:
                    options, position = _options(rng, answer, p.choices)
                    references = [Reference(text=o, correct=k == position) for k, o in enumerate(options)]
                else:
                    references = [Reference(text=str(answer), correct=True)]
                out.append(
                    Instance(
                        id=f"{split}-{i:05d}",
                        split=split,
                        input=Input(text=f"What is {a} {op} {b}?"),
                        references=references,
                        extra={"a": a, "b": b, "op": op},
                    )
                )
        return out
