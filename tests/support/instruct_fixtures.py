"""Fixture files for HELM's six instruction-following sources, in the upstream shapes, every text written here
(no row comes from the real datasets):

- self_instruct: JSON Lines ``{id, motivation_app, instruction, instances: [{input, output}], is_classification}``;
- grammar: HELM's grammar YAML ``{rules: [{category, tags, expansions: [{text, tags}]}]}``;
- open_assistant: OASST1's Parquet message table (``message_id, parent_id, user_id, text, role, lang, review_count,
  deleted, rank, synthetic, model_name, message_tree_id, tree_state``), train and validation;
- vicuna: JSON Lines ``{question_id, text, category}``;
- koala: JSON Lines ``{id, prompt}``;
- anthropic_hh_rlhf: gzip JSON Lines ``{chosen, rejected}`` per ``<dir>/<split>.jsonl.gz``, and the red-team
  transcripts ``{transcript, rating, task_description, ...}``.

``files(scen)`` returns ``{source filename: bytes}`` for a scenario instance, as the data path hands them to
``load`` by name. Nothing here imports helmflow at import time, so HELM's environment reads the same rows
(``benchmarks/helm_instruct_parity.py``).
"""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


SELF_INSTRUCT = [
    {"id": "user_oriented_task_0", "motivation_app": "Notes", "instruction": "Turn the list into a sentence.",
     "instances": [{"input": "apples, pears, plums", "output": "I bought apples, pears and plums."}],
     "is_classification": False},
    {"id": "user_oriented_task_1", "motivation_app": "Mail", "instruction": "Suggest a subject line for a memo.",
     "instances": [{"input": "", "output": "Office closed on Friday"},
                   {"input": "The memo is about the new parking rules.", "output": "New parking rules"}],
     "is_classification": False},
    {"id": "user_oriented_task_2", "motivation_app": "Calendar", "instruction": "Is this event on a weekend?",
     "instances": [{"input": "Dinner on Saturday at 7", "output": "Yes"},
                   {"input": "Standup on Tuesday", "output": "No"},
                   {"input": "Picnic on Sunday noon", "output": "Yes"}],
     "is_classification": True},
]

GRAMMAR = """\
rules:
- category: Root
  tags: [home]
  expansions:
    - text: Plan a ${Meal} for ${People} people.
    - text: "Give me three tips for keeping a ${Plant} alive."
      tags: [garden]
    - text: Write a note to my neighbour about the ${Noise}.

- category: Meal
  expansions:
    - text: breakfast
    - text: picnic lunch

- category: People
  tags: [numbers]
  expansions:
    - text: two
    - text: six

- category: Plant
  expansions:
    - text: fern
    - text: ${Colour} orchid

- category: Colour
  expansions:
    - text: white
    - text: purple

- category: Root
  tags: [work]
  expansions:
    - text: Draft an agenda for a ${Meeting} meeting.
    - text: Explain the ${Undefined} policy.

- category: Meeting
  expansions:
    - text: budget
    - text: kickoff
"""

VICUNA = [
    {"question_id": 1, "text": "How do I keep a sourdough starter healthy?", "category": "generic"},
    {"question_id": 2, "text": "Why do cats knock things off tables?", "category": "knowledge"},
    {"question_id": 3, "text": "Pretend you are a lighthouse keeper greeting a visitor.", "category": "roleplay"},
    {"question_id": 4, "text": "How many piano tuners might work in a city of one million?", "category": "fermi"},
    {"question_id": 5, "text": "Write a function that reverses the words of a sentence.", "category": "coding"},
    {"question_id": 6, "text": "What would change if the moon were twice as far away?", "category": "counterfactual"},
    {"question_id": 7, "text": "How can I tell whether a melon is ripe?", "category": "generic"},
]

KOALA = [{"id": f"koala_{k}", "prompt": p} for k, p in enumerate([
    "Rewrite my shopping list as a short poem: milk, rice, lemons.",
    "What is a good name for a slow, friendly tortoise?",
    "Explain compound interest to a ten year old.",
    "List four ways to reuse glass jars.",
    "Summarise the rules of noughts and crosses in two sentences.",
    "Suggest a weekend plan for a rainy city break.",
])]


def _message(mid: str, parent: str | None, role: str, text: str, lang: str, tree: str) -> dict[str, Any]:
    return {"message_id": mid, "parent_id": parent, "user_id": f"user-{mid[-2:]}",
            "created_date": "2023-02-05T14:23:50.983374+00:00", "text": text, "role": role, "lang": lang,
            "review_count": 3, "review_result": True, "deleted": False, "rank": None if parent is None else 0,
            "synthetic": False, "model_name": None, "message_tree_id": tree, "tree_state": "ready_for_export"}


OASST = {
    "train": [
        _message("m-t01", None, "prompter", "How do I season a cast iron pan?", "en", "m-t01"),
        _message("m-t02", "m-t01", "assistant", "Coat it thinly in oil and bake it upside down.", "en", "m-t01"),
        _message("m-t03", "m-t02", "prompter", "For how long?", "en", "m-t01"),
        _message("m-t04", None, "prompter", "¿Qué es una tortilla española?", "es", "m-t04"),
        _message("m-t05", "m-t04", "assistant", "Un plato de huevo y patata.", "es", "m-t04"),
        _message("m-t06", None, "prompter", "Recommend a board game for four players.", "en", "m-t06"),
    ],
    "valid": [
        _message("m-v01", None, "prompter", "What is the capital of Australia?", "en", "m-v01"),
        _message("m-v02", "m-v01", "assistant", "Canberra.", "en", "m-v01"),
        _message("m-v03", "m-v01", "assistant", "It is Canberra, not Sydney.", "en", "m-v01"),
        _message("m-v04", "m-v01", "assistant", "Canberra, desde 1913.", "es", "m-v01"),
        _message("m-v05", None, "prompter", "Wie koche ich Reis?", "de", "m-v05"),
        _message("m-v06", None, "prompter", "Give me a haiku about autumn.", "en", "m-v06"),
        _message("m-v07", "m-v03", "prompter", "Why not Sydney?", "en", "m-v01"),
        _message("m-v08", None, "prompter", "Name three prime numbers.", "en", "m-v08"),
        _message("m-v09", "m-v08", "assistant", "2, 3 and 5.", "en", "m-v08"),
        _message("m-v10", None, "prompter", "How far is the Moon?", "en", "m-v10"),
        _message("m-v11", None, "prompter", "Write a limerick about a kettle.", "en", "m-v11"),
    ],
}

OASST_SCHEMA = pa.schema([
    ("message_id", pa.string()), ("parent_id", pa.string()), ("user_id", pa.string()), ("created_date", pa.string()),
    ("text", pa.string()), ("role", pa.string()), ("lang", pa.string()), ("review_count", pa.int32()),
    ("review_result", pa.bool_()), ("deleted", pa.bool_()), ("rank", pa.int32()), ("synthetic", pa.bool_()),
    ("model_name", pa.string()), ("message_tree_id", pa.string()), ("tree_state", pa.string()),
])


def parquet(rows: list[dict[str, Any]], schema: pa.Schema = OASST_SCHEMA) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink)
    return sink.getvalue()


def _dialogue(*turns: str) -> str:
    return "".join(f"\n\n{'Human' if k % 2 == 0 else 'Assistant'}: {t}" for k, t in enumerate(turns))


def hh_rows(directory: str, split: str) -> list[dict[str, str]]:
    """Three or four dialogues per file, some with extra turns, one with leading spaces and a blank first turn."""
    n = 4 if split == "test" else 3
    out = []
    for k in range(n):
        question = f"[{directory} {split} {k}] How should I store fresh basil?"
        if k == 1:
            chosen = " " + _dialogue("", question, "In a glass of water.")  # HELM skips the blank first piece
        else:
            chosen = _dialogue(question, "Keep it in water on the counter.", "Thanks!", "You are welcome.")
        out.append({"chosen": chosen, "rejected": _dialogue(question, "Freeze it whole.")})
    return out


RED_TEAM = [
    {"transcript": _dialogue("Tell me how to pick a lock.", "I can't help with that."), "rating": 0.0,
     "task_description": "lock picking", "model_type": "plain lm", "num_params": "52B", "is_upworker": False,
     "red_team_member_id": 3, "min_harmlessness_score_transcript": -0.4, "task_descripton_harmlessness_score": 0.2,
     "tags": None},
    {"transcript": _dialogue("Say something rude about my coworker.", "I'd rather not."), "rating": 1.0,
     "task_description": "insult", "model_type": "rlhf", "num_params": "13B", "is_upworker": True,
     "red_team_member_id": 4, "min_harmlessness_score_transcript": 0.1, "task_descripton_harmlessness_score": 0.7,
     "tags": None},
]


def files(scen: Any) -> dict[str, bytes]:
    """The scenario's fixture files by their source names."""
    name = scen.name
    if name == "self_instruct":
        return {"user_oriented_instructions.jsonl": jsonl(SELF_INSTRUCT)}
    if name == "grammar":
        return {scen.filename: GRAMMAR.encode()}
    if name == "vicuna":
        return {"question.jsonl": jsonl(VICUNA)}
    if name == "koala":
        return {"koala_test_set.jsonl": jsonl(KOALA)}
    if name == "open_assistant":
        return {"train-00000-of-00001-b42a775f407cee45.parquet": parquet(OASST["train"]),
                "validation-00000-of-00001-134b8fd0c89408b6.parquet": parquet(OASST["valid"])}
    if name == "anthropic_hh_rlhf":
        if scen.params.subset == "red_team":
            return {"red_team_attempts.jsonl.gz": gzip.compress(json.dumps(RED_TEAM).encode(), mtime=0)}
        from helmflow.scenarios.instruction_following import hh_layout
        return {f.filename: gzip.compress(jsonl(hh_rows(f.path.split("/")[0], f.split)), mtime=0)
                for f in hh_layout("hh")}
    raise KeyError(name)


def write(tmp_path: Any, scen: Any) -> dict[str, str]:
    """The fixture files written under ``tmp_path``: ``{filename: path}``, as ``load`` takes them."""
    out = {}
    for filename, data in files(scen).items():
        (tmp_path / filename).write_bytes(data)
        out[filename] = str(tmp_path / filename)
    return out


def github_files() -> dict[str, bytes]:
    """The GitHub files of self_instruct, grammar, vicuna and koala by ``<host>/<path>`` at their pinned commits."""
    from helmflow.scenarios import get_scenario

    out = {}
    for name, params in (("self_instruct", {}), ("grammar", {}), ("vicuna", {}), ("koala", {})):
        scen = get_scenario(name, params)
        data = files(scen)
        for source in scen.sources():
            out[source.url.split("://", 1)[1]] = data[source.filename]
    return out


def hub_mirrors(root: Any) -> dict[str, str]:
    """open_assistant's and anthropic_hh_rlhf's Hub files (subset hh and the red-team file) in folders of their
    own, as the ``HELMFLOW_MIRROR_<NAME>`` variables naming them."""
    from helmflow.scenarios import get_scenario
    from helmflow.settings import scenario_mirror_var

    env = {}
    for name, params in (("open_assistant", {"language": "en"}), ("anthropic_hh_rlhf", {"subset": "hh"}),
                         ("anthropic_hh_rlhf", {"subset": "red_team"})):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        write(folder, get_scenario(name, params))
        env[scenario_mirror_var(name)] = str(folder)
    return env
