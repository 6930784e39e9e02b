"""Common syntactic processes (HEIM reasoning): prompts built in code, no download.

From "DALL-E 2 Fails to Reliably Capture Common Syntactic Processes" (arXiv 2210.12889): prompts of
eight grammatical phenomena, as HELM's ``CommonSyntacticProcessesScenario`` lists them (Table 1 of the
paper's appendix). ``phenomenon`` selects one (HELM's run entries take one each); there are no
reference images.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.scenarios import scenario
from helmflow.scenarios.text_to_image import TextToImageScenario

PHENOMENA = ("binding_principles", "passives", "word_order", "coordination", "comparatives", "negation", "ellipsis",
             "ambiguity")
#: (prompt, phenomenon), in HELM's order
PROMPTS: tuple[tuple[str, str], ...] = (
    ('The man paints a picture of him', "binding_principles"),
    ('The man paints a picture of himself', "binding_principles"),
    ('The woman paints a portrait of her', "binding_principles"),
    ('The woman paints a portrait of herself', "binding_principles"),
    ('The boy looks at a picture of him', "binding_principles"),
    ('The boy looks at a picture of himself', "binding_principles"),
    ('The young lady looks at a picture of her', "binding_principles"),
    ('The young lady looks at a picture of herself', "binding_principles"),
    ('The man takes a picture of him', "binding_principles"),
    ('The man takes a picture of himself', "binding_principles"),
    ('The woman broke the vase', "passives"),
    ('The vase was broken by the woman', "passives"),
    ('The plate was broken by the woman', "passives"),
    ('The glass was broken by the man', "passives"),
    ('The jar was broken by the man', "passives"),
    ('The flowerpot was broken by the man', "passives"),
    ('The dog is chasing the man', "word_order"),
    ('The man is chasing the dog', "word_order"),
    ('The man gave the letter to the woman', "word_order"),
    ('The man gave the woman the letter', "word_order"),
    ('The man is watering the plant', "word_order"),
    ('The plant is watering the man', "word_order"),
    ('The mother combs the boy', "word_order"),
    ('The boy combs the mother', "word_order"),
    ('The man gave the comb to the woman', "word_order"),
    ('The man gave the woman the comb', "word_order"),
    ('The man is drinking water and the woman is drinking orange juice', "coordination"),
    ('The woman is eating red apple and the man is eating a green apple', "coordination"),
    ('The cat is wearing two red socks and the dog is wearing one red sock', "coordination"),
    ('The boy wears a red hat and the girl wears a blue tie', "coordination"),
    ('The woman is washing the dishes and the man is washing the floor', "coordination"),
    ('The bowl has more cucumbers than strawberries', "comparatives"),
    ('The bowl has fewer strawberries than cucumbers', "comparatives"),
    ('The plate has more peas than carrots', "comparatives"),
    ('The plate has fewer carrots than peas', "comparatives"),
    ('The plate has more than seven eggs', "comparatives"),
    ('A tall woman without a handbag', "negation"),
    ('A man with a red sweater and blue sweater and he is not wearing the former', "negation"),
    ('A rainy street without cars', "negation"),
    ('A boy with a green t-shirt without red buttons', "negation"),
    ('A tall tree not green or black', "negation"),
    ('The man is eating a sandwich and the woman an apple', "ellipsis"),
    ('The man eats pizza but the woman does not', "ellipsis"),
    ('The girl starts a sandwich and the boy a book', "ellipsis"),
    ('The man drinks water and the woman orange juice', "ellipsis"),
    ('The woman wears a blue shirt, but the man does not', "ellipsis"),
    ('The man saw the boy in his car', "ambiguity"),
    ('The man saw the lion with the binoculars', "ambiguity"),
    ('The boy saw the girl using a magnifying glass', "ambiguity"),
    ('There are three boys and each is wearing a hat', "ambiguity"),
    ('Two cars painted a different color', "ambiguity"),
    ('Two cars each painted a different color', "ambiguity"),
)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    phenomenon: Literal["binding_principles", "passives", "word_order", "coordination", "comparatives", "negation",
                        "ellipsis", "ambiguity"]


@scenario("common_syntactic_processes")
class CommonSyntacticProcesses(TextToImageScenario):
    VERSION = "1"
    Params = Params
    description = "HEIM: prompts of 8 grammatical phenomena (arXiv 2210.12889); built in code, no reference images."

    def prompts(self) -> list[tuple[str, str | None]]:
        return [(text, None) for text, phenomenon in PROMPTS if phenomenon == self.params.phenomenon]
