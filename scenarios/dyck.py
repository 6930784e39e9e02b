"""HELM's dyck_language: close the last few brackets of a Dyck-n prefix, generated locally.

Sequences come from HELM's PCFG (wrap in a random pair with probability p, concatenate two with
probability q, else empty; depth capped). A random depth 1..max_output_size of trailing closers is
cut off; the answer is the closers the prefix still needs, with a leading space.

The generator reproduces HELM's draw for draw (benchmarks.md §3.4): HELM seeds the global
``random`` and ``numpy.random`` with the same seed; here two private generators seeded alike
(``random.Random(seed)``, ``numpy.random.RandomState(seed)``) give the same streams without touching
global state. Train is generated first, then test sequences not seen in train.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field, model_validator

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario
from helmflow.scenarios.base import LegacyDraws

PAIRS = [("(", ")"), ("[", "]"), ("{", "}"), ("<", ">")]


class DyckParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_parenthesis_pairs: int = Field(ge=1, le=4)
    num_train: int = Field(3, ge=0, le=10_000)
    num_test: int = Field(500, ge=1, le=100_000)
    prob_p: float = Field(0.5, gt=0, lt=1)
    prob_q: float = Field(0.25, gt=0, lt=1)
    max_recursive_depth: int = Field(100, ge=1, le=200)
    min_seq_train_length: int = Field(4, ge=1)
    max_seq_train_length: int = Field(50, ge=2)
    min_seq_test_length: int = Field(52, ge=1)
    max_seq_test_length: int = Field(100, ge=2)
    max_output_size: int = Field(3, ge=1)
    seed: int = 42

    @model_validator(mode="after")
    def _check(self) -> DyckParams:
        if self.prob_p + self.prob_q >= 1:
            raise ValueError("prob_p + prob_q must be below 1")
        if self.min_seq_train_length > self.max_seq_train_length or self.min_seq_test_length > self.max_seq_test_length:
            raise ValueError("a minimum sequence length exceeds its maximum")
        return self


class _Generator:
    """HELM's sampler. Sequences are strings of one-character brackets (HELM joins lists of them),
    which keeps the 1.2 million recursive draws behind HELM's 500 test items cheap; every draw is
    still made by the same generator, in the same order (``FULL_DIGESTS`` in the tests)."""

    def __init__(self, p: DyckParams):
        self.p = p
        self.opening = "".join(a for a, _ in PAIRS[: p.num_parenthesis_pairs])
        self.closing = "".join(b for _, b in PAIRS[: p.num_parenthesis_pairs])
        self.py = random.Random(p.seed)
        self.np = LegacyDraws(p.seed)  # numpy.random.RandomState(seed)'s draws
        self.sequence = self._sequence_drawer()

    def _sequence_drawer(self):
        """``sequence(depth, max_length)``: one draw of the PCFG; nested draws keep HELM's default
        length cap of 100. Closures over locals, since this is about 1.2 million nodes for HELM's
        500 test items: ``node`` expands a node whose draw was made, and a parent makes each child's
        draw itself, so the quarter of children that draw "empty" cost no call. The draws are HELM's,
        in HELM's order (pre-order: a node's draw, then its subtrees'; the bracket kinds are their own
        stream)."""
        wrap, wrap_or_concat = self.p.prob_p, self.p.prob_p + self.p.prob_q
        max_depth, top = self.p.max_recursive_depth, self.p.num_parenthesis_pairs - 1
        # the bracket kinds are this generator's only numpy draws: one stream of them
        uniform, next_kind, opening, closing = self.py.random, self.np.stream(top).__next__, self.opening, self.closing

        def node(depth: int, draw: float, max_length: int = 100) -> str:
            if draw < wrap:
                kind = next_kind()  # np.random.randint(0, pairs)
                if depth < max_depth:  # the child, at depth + 1, draws
                    draw = uniform()
                    inner = node(depth + 1, draw) if draw < wrap_or_concat else ""
                else:
                    inner = ""
                out = opening[kind] + inner + closing[kind]
            else:  # two children at this depth, each drawing
                draw = uniform()
                out = node(depth, draw) if draw < wrap_or_concat else ""
                draw = uniform()
                if draw < wrap_or_concat:
                    out += node(depth, draw)
            return out if len(out) <= max_length else ""

        def sequence(depth: int = 0, max_length: int = 100) -> str:
            if depth > max_depth:
                return ""
            draw = uniform()
            return node(depth, draw, max_length) if draw < wrap_or_concat else ""

        return sequence

    def cut(self, seq: str, depth: int) -> str:
        """The prefix before the trailing run of closers whose net depth is ``depth``."""
        depth_now = 0  # HELM sums a per-kind balance vector; only the sum is ever read
        for i in range(len(seq) - 1, -1, -1):
            depth_now += -1 if seq[i] in self.opening else 1
            if depth_now == depth:
                return seq[:i]
        return ""

    def closers(self, prefix: str) -> str:
        stack: list[str] = []
        for symbol in prefix:
            if symbol in self.opening:
                stack.append(self.closing[self.opening.index(symbol)])
            else:
                stack.pop()
        return "".join(reversed(stack))

    def pair(self, min_length: int, max_length: int) -> tuple[str, str]:
        while True:
            seq = self.sequence(0, max_length)
            if len(seq) >= min_length:
                prefix = self.cut(seq, self.py.randint(1, self.p.max_output_size))
                if prefix:
                    return " ".join(prefix), " ".join(self.closers(prefix))

    def corpus(self, size: int, min_length: int, max_length: int, not_allowed: set[str]) -> list[tuple[str, str]]:
        seen: set[str] = set()
        out: list[tuple[str, str]] = []
        while len(out) < size:
            source, target = self.pair(min_length, max_length)
            if source not in seen and source not in not_allowed:
                seen.add(source)
                out.append((source, " " + target))
        return out


@scenario("dyck_language")
class DyckLanguage(Scenario[DyckParams]):
    VERSION = "1"
    Params = DyckParams
    description = "HELM Dyck-n completion: output the closing brackets a prefix still needs."
    main_metric = "exact_match_indicator"
    metrics = ["exact_match_indicator", "exact_match", "quasi_exact_match", "efficiency"]
    # HELM's run spec: get_completion_adapter_spec(instructions, input_prefix "Input: ", 3-shot, max_tokens 5)
    default_adapter = AdapterSpec(
        method="generation",
        instructions="Please complete the rest of the following Dyck sequences, "
                     "making sure that the parentheses are closed properly.",
        input_prefix="Input: ",
        input_suffix="",
        output_prefix="",
        output_suffix="",
        max_train_instances=3,
        generation=GenerationParams(max_tokens=5, temperature=0.0, stop=["\n"]),
    )

    def load(self, files: dict[str, str]) -> list[Instance]:
        p: DyckParams = self.params
        gen = _Generator(p)
        train = gen.corpus(p.num_train, p.min_seq_train_length, p.max_seq_train_length, set())
        test = gen.corpus(p.num_test, p.min_seq_test_length, p.max_seq_test_length, {s for s, _ in train})
        rows = [("train", s, t) for s, t in train] + [("test", s, t) for s, t in test]
        return [
            Instance(id=f"id{i}", split=split, input=Input(text=source),
                     references=[Reference(text=target, correct=True)])
            for i, (split, source, target) in enumerate(rows)
        ]
