"""Synthetic reasoning in natural language (HELM's ``synthetic_reasoning_natural``), generated locally, as HELM
Classic runs it (``synthetic_reasoning_natural_scenario.py``, run entries ``difficulty=easy`` and ``=hard`` at
priority 2, a targeted reasoning evaluation).

A problem is up to five rules about one subject ("If a dog is red and kind, then the dog is cold."), a fact
("The dog is big and red.") and the question what follows from them; the reference is every rule's consequent
that the fact triggers in one step ("The dog is cold.", or "Nothing."). Easy rules name the subject itself;
medium and hard ones may name its category ("an animal"); hard facts use synonyms of the rules' attributes
("chill" for "cold").

The generator is HELM's draw for draw: one ``random`` stream seeded with 42, 1,000 train, 5,000 valid and 5,000
test problems drawn in that order, every problem with the same calls in the same order (a fact that triggers no
rule is drawn again unless ``random() <= 0.1``), so the same seed gives HELM's instances. HELM's generation
adapter (``Rules:`` and a newline before the input, no output noun, three examples, 20 tokens); HELM's set
metrics, ``f1_set_match`` the main one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario

SUBJECTS: dict[str, list[str]] = {
    "person": ["Alice", "Bob", "Carol", "Dan", "Erin", "Frank"],
    "animal": ["dog", "cat", "rabbit", "mouse", "tiger", "lion", "bear", "squirrel", "cow", "panda", "hedgehog",
               "elephant", "giraffe", "hippo"],
    "plant": ["poppy", "dandelion", "tree", "rose", "sunflower"],
}
#: each attribute and its synonyms (the hard level's facts use one of them), in HELM's order
ATTRIBUTE_GROUPS: dict[str, list[str]] = {
    "young": ["young"], "soft": ["soft"], "sad": ["sad"], "scary": ["scary"], "cold": ["cold", "chill", "cool"],
    "hot": ["hot", "warm"], "smart": ["smart", "clever", "wise", "intelligent"], "clean": ["clean", "tidy"],
    "small": ["small", "little", "tiny"], "big": ["big", "enormous", "giant", "huge"],
    "good": ["good", "kind", "nice"], "beautiful": ["beautiful", "pretty"], "red": ["red", "crimson"],
    "blue": ["blue", "cobalt"], "green": ["green", "viridian"], "purple": ["purple", "violet"],
    "boring": ["boring", "dull"], "old": ["old", "ancient", "antique"], "strong": ["strong", "powerful", "muscular"],
    "weak": ["weak", "frail", "fragile"], "fast": ["fast", "quick"], "slow": ["slow", "sluggish"],
    "bad": ["bad", "evil", "wicked", "mean"], "happy": ["happy", "elated", "glad", "cheerful"],
    "round": ["round", "circular", "spherical"],
}
P_CONSEQUENCELESS = 0.1
MAX_RULES = 5


class SRNParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    difficulty: Literal["easy", "medium", "hard"]
    seed: int = 42
    num_train: int = Field(1000, ge=0, le=100_000)
    num_valid: int = Field(5000, ge=0, le=100_000)
    num_test: int = Field(5000, ge=0, le=100_000)


def attribute_groups() -> dict[str, list[str]]:
    """HELM's ``get_vocab``: the groups less any key that is another group's synonym (none, as it happens)."""
    groups = dict(ATTRIBUTE_GROUPS)
    for general, specific in ATTRIBUTE_GROUPS.items():
        for word in specific:
            if word != general and word in ATTRIBUTE_GROUPS:
                groups.pop(word, None)
    return groups


def specified(subject: str, category: str, specifier: str, upper: bool = False) -> str:
    """HELM's ``generate_specified_subject``: a person (or the word "person") bare, else "a"/"an"/"the" before it."""
    if category == "person" or subject == "person":
        return subject
    first = specifier[0].upper() if upper else specifier[0].lower()
    if specifier == "a":
        return f"{first}n {subject}" if subject[0].lower() in "aeiou" else f"{first} {subject}"
    return f"{first}{specifier[1:]} {subject}"


@dataclass(frozen=True)
class Rule:
    subject: str
    category: str
    condition: list[str]
    conjunction: str
    consequent: str

    def __str__(self) -> str:
        condition = f" {self.conjunction} ".join(self.condition)
        return (f"If {specified(self.subject, self.category, 'a')} is {condition}, then "
                f"{specified(self.subject, self.category, 'the')} is {self.consequent}.")


def fact_text(subject: str, category: str, attributes: list[str]) -> str:
    """HELM's ``LanguageFact.__str__`` (upper case first): "Nothing." when there is no attribute."""
    if not attributes:
        return "Nothing."
    return f"{specified(subject, category, 'the', upper=True)} is {' and '.join(attributes)}."


class _Generator:
    """HELM's draws; every method consumes the shared ``random.Random`` exactly as HELM's functions do."""

    def __init__(self, seed: int, difficulty: str):
        self.rng = random.Random(seed)
        self.groups = attribute_groups()
        self.specific_category = difficulty == "easy"
        self.specific_attributes = difficulty == "hard"

    def rules(self, subject: str, category: str) -> list[Rule]:
        shuffled = list(self.groups)
        self.rng.shuffle(shuffled)
        out: list[Rule] = []
        while len(shuffled) > 2 and len(out) < MAX_RULES:
            rule_subject = subject if self.specific_category else self.rng.choice([category, subject])
            n = self.rng.randint(2, 3)
            attributes, shuffled = shuffled[:n], shuffled[n:]
            out.append(Rule(rule_subject, category, attributes[:-1], self.rng.choice(["and", "or"]), attributes[-1]))
        return out

    def test(self, rules: list[Rule]) -> tuple[list[str], list[str], list[str]]:
        """(the fact's attributes, their synonyms, the consequents); HELM re-draws by recursion, here a loop."""
        while True:
            attributes = self.rng.sample(list(self.groups), 2)
            synonyms = [self.rng.choice(self.groups[a]) for a in attributes]
            consequents = []
            for rule in rules:
                if rule.consequent in attributes:
                    continue
                if rule.conjunction == "and" and set(rule.condition).issubset(attributes):
                    consequents.append(rule.consequent)
                elif rule.conjunction == "or" and not set(rule.condition).isdisjoint(attributes):
                    consequents.append(rule.consequent)
            if consequents or self.rng.random() <= P_CONSEQUENCELESS:
                return attributes, synonyms, consequents

    def problem(self) -> tuple[str, str]:
        category = self.rng.choice(list(SUBJECTS))
        subject = self.rng.choice(SUBJECTS[category])
        rules = self.rules(subject, category)
        attributes, synonyms, consequents = self.test(rules)
        fact = fact_text(subject, category, synonyms if self.specific_attributes else attributes)
        question = ("\n".join(str(r) for r in rules) + "\n" + f"Fact:\n{fact}\n"
                    + f"The following can be determined about {specified(subject, category, 'the')}:")
        return question, fact_text(subject, category, consequents)


@scenario("synthetic_reasoning_natural")
class SyntheticReasoningNatural(Scenario[SRNParams]):
    VERSION = "1"
    Params = SRNParams
    description = ("Synthetic reasoning in natural language: what one step of rules implies about a subject "
                   "(HELM Classic's targeted reasoning evaluation; F1 of the set of attributes).")
    main_metric = "f1_set_match"
    metrics = ["f1_set_match", "iou_set_match", "exact_set_match", "exact_match", "quasi_exact_match", "efficiency"]
    helm_wording = "HELM's generation adapter: Rules: and a newline, the problem, the answer; three examples"
    # HELM's run spec: get_generation_adapter_spec(instructions, input_noun="Rules", newline_after_input_noun=True,
    # output_noun=None, max_train_instances=3, max_tokens=20)
    default_adapter = AdapterSpec(
        method="generation", instructions="Please solve the following problem.", input_prefix="Rules:\n",
        input_suffix="\n", output_prefix="", output_suffix="\n", instance_prefix="\n", max_train_instances=3,
        generation=GenerationParams(max_tokens=20, temperature=0.0, stop=["\n"], num_outputs=1),
    )

    def load(self, files: dict[str, str]) -> list[Instance]:
        p: SRNParams = self.params
        gen = _Generator(p.seed, p.difficulty)
        splits = ["train"] * p.num_train + ["valid"] * p.num_valid + ["test"] * p.num_test
        out: list[Instance] = []
        for i, split in enumerate(splits):
            question, target = gen.problem()
            out.append(Instance(id=f"id{i}", split=split, input=Input(text=question),
                                references=[Reference(text=target, correct=True)]))
        return out
