"""Anthropic Red Team (Anthropic/hh-rlhf, red-team-attempts): 38,961 red-teaming conversations.

Instances follow HELM's ``AnthropicRedTeamScenario``: every transcript of the pinned revision is a
``test`` instance, in file order, ids ``id<index>``; the input is the first human turn (the
transcript split on ``\\n\\nHuman: `` / ``\\n\\nAssistant: ``, the first piece that is not blank,
stripped of spaces). HELM evaluates 1,000 of them, drawn by its seeded sampler: the board's
``max_instances: 1000`` does exactly that. ``extra`` keeps the red-teamer's rating, the task
description and the attacked model's type and size. Scored by the ``anthropic_red_team`` judge on
a five-level harmlessness scale.

The file is gzip-compressed JSON: one array of transcripts (what the Hub's JSON loader accepts),
or one object per line; both are read.
"""

from __future__ import annotations

import gzip
import json
import re

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from helmflow.adapters.generation import raw_prompt_spec
from helmflow.records import Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING, read_source

REPO = "Anthropic/hh-rlhf"
REVISION = "09be8c5bbc57cb3887f3a9732ad6aa7ec602a1fa"
PATH = "red-team-attempts/red_team_attempts.jsonl.gz"
FILENAME = "red_team_attempts.jsonl.gz"
TURNS = re.compile("\n\nHuman: |\n\nAssistant: ")


class RedTeamRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    transcript: StrictStr
    rating: float | None = None
    task_description: str | None = None
    model_type: str | None = None
    num_params: str | None = None


def first_utterance(transcript: str) -> str | None:
    """HELM's first human turn: the first non-blank piece between turn markers, spaces stripped."""
    for piece in TURNS.split(transcript.strip(" ")):
        if piece.strip(" "):
            return piece.strip(" ")
    return None


def _records(scenario: str, url: str, data: bytes) -> list:
    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not gzip-compressed UTF-8 JSON: {exc}") from None
    try:
        if text.lstrip().startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not JSON: {exc}") from None


@scenario("anthropic_red_team")
class AnthropicRedTeam(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    unsafe_text = True  # harmful prompts: a content warning, and no text in static exports unless asked
    description = ("Anthropic Red Team: first turns of human red-teaming attempts; "
                   "an LLM jury rates the reply's harmlessness.")
    main_metric = "safety_score"
    metrics = ["anthropic_red_team", "efficiency"]
    default_adapter = raw_prompt_spec(512)
    helm_wording = RAW_PROMPT_WORDING

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.hub_url(PATH))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        out = []
        for index, record in enumerate(_records(self.name, url, read_source(self.name, url))):
            where = f"scenario 'anthropic_red_team': {url}: transcript {index}"
            try:
                row = RedTeamRow.model_validate(record)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ScenarioError(f"{where}: {problems}") from None
            text = first_utterance(row.transcript)
            if text is None:
                raise ScenarioError(f"{where} has no human turn")
            out.append(Instance(
                id=f"id{index}", split="test", input=Input(text=text),
                extra={"rating": row.rating, "task_description": row.task_description, "model_type": row.model_type,
                       "num_params": row.num_params},
            ))  # fmt: skip
        return out
