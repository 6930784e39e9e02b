"""HELM's synthetic_reasoning (pattern matching, variable substitution, induction), generated locally.

A sample is a *pattern* (rule symbols X/Y/Z shuffled with math symbols + - * =), a substitution of
each distinct rule symbol by one or two words (animals and fruits), and the substituted *result*.
The three modes ask for the result (variable_substitution), the pattern behind a result among four
candidates (pattern_match) or the pattern behind two results (induction).

The generator reproduces HELM's procedure draw for draw (benchmarks.md §3.4): one
``numpy.random.RandomState(seed)``, samples generated train → valid → test in one sequence, and per
sample the same RNG calls in the same order, so the same seed yields HELM's instances.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, EvalSample, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario
from helmflow.scenarios.base import LegacyDraws

ANIMALS = ["zebra", "cobra", "stork", "penguin", "shark", "lion", "buffalo", "whale", "seal", "eagle", "horse", "rat"]
FRUITS = ["apple", "peach", "watermelon", "banana", "grape", "kiwi", "pear", "strawberry", "blueberry", "blackberry"]
RULE_SYMBOLS = ["X", "Y", "Z"]
MATH_SYMBOLS = ["+", "-", "*", "="]
WORDS = ANIMALS + FRUITS


class SyntheticReasoningParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["pattern_match", "variable_substitution", "induction"]
    seed: int = 42
    num_train: int = Field(1000, ge=0, le=100_000)
    num_valid: int = Field(5000, ge=0, le=100_000)
    num_test: int = Field(5000, ge=0, le=100_000)


def substitute(pattern: list[str], substitution: dict[str, str]) -> list[str]:
    """Replace every rule symbol of ``pattern`` by its words (a multi-word value stays one item)."""
    return [substitution.get(symbol, symbol) for symbol in pattern]


class _Generator:
    """HELM's sampler; every method consumes the shared RandomState exactly as HELM's does."""

    def __init__(self, seed: int):
        self.rng = LegacyDraws(seed)

    def choice(self, items: list[str], size: int) -> list[str]:
        """``rng.choice(items, size=size)``: legacy ``choice`` draws ``randint(0, len, size)``."""
        return [items[self.rng.interval(len(items) - 1)] for _ in range(size)]

    def pattern(self, math_symbols: list[str], rule_symbols: list[str]) -> list[str]:
        pattern = list(rule_symbols) + list(math_symbols)
        self.rng.shuffle(pattern)
        return pattern

    def substitution(self, symbols: list[str]) -> tuple[dict[str, str], str]:
        mapping: dict[str, str] = {}
        shown: list[str] = []
        for symbol in symbols:
            length = self.rng.randint(1, 3)
            words = " ".join(self.choice(WORDS, length))
            mapping[symbol] = words
            shown += [symbol, "by", '"', words, '"', ","]
        return mapping, " ".join(shown[:-1])

    def sample(self, mode: str) -> tuple[str, str]:
        rule = self.choice(RULE_SYMBOLS, self.rng.randint(2, 4))
        distinct = sorted(set(rule))
        math = self.choice(MATH_SYMBOLS, self.rng.randint(2, 4))
        pattern = [str(s) for s in self.pattern(math, rule)]
        subst_1, subst_1_text = self.substitution(distinct)
        subst_2, _ = self.substitution(distinct)
        result = " ".join(substitute(pattern, subst_1))
        pattern_text = " ".join(pattern)
        if mode == "induction":
            return f"Two results: {result} | {' '.join(substitute(pattern, subst_2))}", f"Rule: {pattern_text}"
        if mode == "variable_substitution":
            return f"Rules: {pattern_text} | Substitutions: {subst_1_text}", result
        # pattern_match: three distractors built from the *distinct* rule symbols, then a shuffle
        candidates = [" ".join(str(s) for s in self.pattern(math, distinct)) for _ in range(3)] + [pattern_text]
        self.rng.shuffle(candidates)
        return f"Rules: {' | '.join(candidates)} | Result: {result}", pattern_text


@scenario("synthetic_reasoning")
class SyntheticReasoning(Scenario[SyntheticReasoningParams]):
    VERSION = "1"
    Params = SyntheticReasoningParams
    description = "HELM synthetic reasoning (LIME-style): pattern matching, variable substitution, induction."
    main_metric = "quasi_exact_match"
    metrics = ["exact_match", "quasi_exact_match", "prefix_exact_match", "f1_score", "efficiency"]
    # HELM's run spec: get_generation_adapter_spec(instructions, output_noun="Target", 5-shot, max_tokens 50)
    default_adapter = AdapterSpec(
        method="generation",
        instructions="Please solve the following problem.",
        input_prefix="",
        input_suffix="\n",
        output_prefix="Target: ",
        output_suffix="\n",
        max_train_instances=5,
        generation=GenerationParams(max_tokens=50, temperature=0.0, stop=["\n"]),
        sample=EvalSample(splits=["valid", "test"]),
    )

    def load(self, files: dict[str, str]) -> list[Instance]:
        p: SyntheticReasoningParams = self.params
        gen = _Generator(p.seed)
        splits = ["train"] * p.num_train + ["valid"] * p.num_valid + ["test"] * p.num_test
        out: list[Instance] = []
        for i, split in enumerate(splits):
            source, target = gen.sample(p.mode)
            out.append(
                Instance(
                    id=f"id{i}",
                    split=split,
                    input=Input(text=source),
                    references=[Reference(text=target, correct=True)],
                )
            )
        return out
