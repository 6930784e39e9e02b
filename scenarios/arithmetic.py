"""Multi-digit arithmetic, generated locally: a reasoning probe that needs no download."""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


class ArithmeticParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    digits: int = Field(3, ge=1, le=12)
    ops: str = Field("+-", pattern=r"^[+\-*]+$")
    num_train: int = Field(20, ge=0, le=10_000)
    num_test: int = Field(200, ge=1, le=100_000)
    seed: int = 0


@scenario("arithmetic")
class Arithmetic(Scenario):
    VERSION = "1"
    Params = ArithmeticParams
    description = "Multi-digit integer arithmetic (a op b) with a single exact answer."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter = AdapterSpec(
        method="generation",
        instructions="Compute the result. Answer with the number only.",
        input_prefix="Question: ",
        output_prefix="Answer: ",
        max_train_instances=3,
        generation=GenerationParams(max_tokens=8, temperature=0.0, stop=["\n"]),
    )

    def load(self, files: dict[str, str]) -> list[Instance]:
        p: ArithmeticParams = self.params  # type: ignore[assignment]
        rng = random.Random(p.seed)
        low, high = 10 ** (p.digits - 1) if p.digits > 1 else 0, 10**p.digits - 1
        out: list[Instance] = []
        # train first, then test, so adding test items never changes the train pool
        for split, count in (("train", p.num_train), ("test", p.num_test)):
            for i in range(count):
                a, b, op = rng.randint(low, high), rng.randint(low, high), rng.choice(p.ops)
                out.append(
                    Instance(
                        id=f"{split}-{i:05d}",
                        split=split,
                        input=Input(text=f"What is {a} {op} {b}?"),
                        references=[Reference(text=str(_OPS[op](a, b)), correct=True)],
                        extra={"a": a, "b": b, "op": op},
                    )
                )
        return out
