"""Fixture files for HELM Classic's harms scenarios, in the upstream shapes, every text written here (no row, book
passage or source file comes from the real datasets):

- copyright: HELM's JSON ``{"data": {prefix: prefix and the rest of the text}, "metadata": {...}}`` per data tag;
- disinformation: JSON Lines, reiteration ``{thesis, headlines, split, topic}`` (some rows without ``topic``),
  wedging ``{targeted_group, targeted_action, prompt}``;
- BOLD: one line per file, ``{group: {name: [prompt, ...]}}``;
- RealToxicityPrompts: ``prompts.jsonl`` rows ``{filename, begin, end, challenging, prompt: {text, toxicity, ...},
  continuation: {...}}`` (``toxicity`` sometimes null).

Paths are ``<host>/<path>``, the layout ``$HELMFLOW_SOURCE_HOST`` and ``$HELMFLOW_GITHUB_RAW`` read; Google Drive's
file id is in the query string, so those fixtures are named with it (the test server answers ``path?query`` with
such a file when there is one).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from helmflow.scenarios.bold import BOLD as BOLDScenario
from helmflow.scenarios.bold import DOMAINS
from helmflow.scenarios.copyright import FILES as COPYRIGHT_FILES
from helmflow.scenarios.disinformation import URLS as DISINFORMATION_URLS
from tests.support.lite_fixtures import jsonl

DRIVE = "drive.google.com/uc?"
BOLD = f"raw.githubusercontent.com/amazon-research/bold/{BOLDScenario.GIT_COMMIT}/prompts"
COPYRIGHT_TAGS = ["n_books_1000-extractions_per_book_1-prefix_length_125", "popular_books-prefix_length_125.json",
                  "prompt_num_line_1-min_lines_20.json", "prompt_num_line_10-min_lines_20.json"]  # the board's

# --------------------------------------------------------------------------- copyright
STORY_OPENINGS = ["The ferry left the harbour at dawn", "Nobody in Lower Whitby trusted the new clock",
                  "My grandmother kept seven keys on a string", "The rain arrived two days before the letter",
                  "Tomas learned to whistle the year the mill closed"]
STORY_RESTS = [" and the gulls followed it past the breakwater, shouting at the empty nets.",
               ", because it struck thirteen at noon and nobody could find its key.",
               "; none of them opened anything in the house, and she never said why.",
               " and soaked the porch so badly that the postman left it on the windowsill.",
               ", and he whistled the same four notes until the spring came back."]


def copyright_json(tag: str) -> bytes:
    """A few (prefix, text) entries: stories for the text tags, small C functions for the code tags."""
    data: dict[str, str] = {}
    if tag.startswith("prompt_num_line"):
        for k in range(4):
            prefix = f"/* {tag.split('-')[0]} */\nstatic int count_{k}(const int *xs, int n)\n{{\n"
            data[prefix] = prefix + f"    int total = {k};\n    for (int i = 0; i < n; i++)\n        total += xs[i];\n" \
                                    "    return total;\n}\n"
    else:
        for k, (opening, rest) in enumerate(zip(STORY_OPENINGS, STORY_RESTS, strict=True)):
            prefix = f"{opening} ({tag[:12]} {k})"
            data[prefix] = prefix + rest + " The end of this made-up chapter."
    return json.dumps({"data": data, "metadata": {"datatag": tag, "written_for": "helmflow tests"}}).encode()


def copyright_path(tag: str) -> str:
    """The fixture's ``<host>/<path>?<query>``: HELM's Google Drive file id is in the query."""
    return f"{DRIVE}export=download&id={COPYRIGHT_FILES[tag]}&confirm=t"


def copyright_files() -> dict[str, bytes]:
    return {copyright_path(tag): copyright_json(tag) for tag in COPYRIGHT_TAGS}


# --------------------------------------------------------------------------- disinformation
def reiteration_rows() -> list[dict]:
    """Made-up theses about a made-up town, each with five headlines; covid rows (some without a topic, which HELM
    reads as covid) and climate rows, train and valid."""
    rows = []
    for k in range(8):
        topic = "climate" if k % 2 else "covid"
        row = {"thesis": f"The Millbrook {topic} committee {k} keeps its meetings secret.",
               "headlines": [f"Millbrook committee {k} met behind closed doors again ({i})" for i in range(5)],
               "split": "train" if k < 4 else "valid"}
        if k % 4 != 0:  # rows 0 and 4 have no topic: covid's
            row["topic"] = topic
        rows.append(row)
    return rows


WEDGING_ACTIONS = ["vote_democrat", "vote_republican", "no_vote", "support_policy"]


def wedging_rows() -> list[dict]:
    return [{"targeted_group": f"gardeners {k}", "targeted_action": WEDGING_ACTIONS[k % 4],
             "prompt": f"Five reasons why gardeners {k} should care about the library budget\n\nReason 1: books.\n"
                       "Reason 2:"} for k in range(6)]


def disinformation_files() -> dict[str, bytes]:
    return {DRIVE + DISINFORMATION_URLS["reiteration"].split("?", 1)[1]: jsonl(reiteration_rows()),
            DRIVE + DISINFORMATION_URLS["wedging"].split("?", 1)[1]: jsonl(wedging_rows())}


# --------------------------------------------------------------------------- BOLD
def bold_json(domain: str) -> bytes:
    """One line: two groups, each with names holding one to three openings (HELM keeps the first); no newline at
    the end, as the real files."""
    data = {f"{domain}_group_{g}": {f"{domain}_{g}_name_{n}": [f"The {domain} {g}-{n} opening number {i} says that "
                                                               for i in range(1 + (g + n) % 3)]
                                    for n in range(3 + g)} for g in range(2)}
    return json.dumps(data).encode()


def bold_files() -> dict[str, bytes]:
    return {f"{BOLD}/{d}_prompt.json": bold_json(d) for d in DOMAINS}


# --------------------------------------------------------------------------- RealToxicityPrompts
def rtp_rows(n: int = 30, seed: int = 12) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        toxicity = None if k % 7 == 3 else round(rng.random(), 4)
        rows.append({"filename": f"fixture-{k:04d}.txt", "begin": 0, "end": 60, "challenging": k % 5 == 0,
                     "prompt": {"text": f"The fixture sentence {k} begins with a calm", "toxicity": toxicity,
                                "profanity": 0.01, "sexually_explicit": 0.0, "flirtation": 0.1,
                                "identity_attack": 0.0, "threat": 0.0, "insult": 0.02, "severe_toxicity": 0.0},
                     "continuation": {"text": f" thought about fixture {k}.", "toxicity": 0.05, "profanity": 0.0}})
    return rows


def rtp_mirror(root: Path) -> dict[str, str]:
    """prompts.jsonl (read from a mirror: it is a Hub file) as ``HELMFLOW_MIRROR_REAL_TOXICITY_PROMPTS``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "prompts.jsonl").write_bytes(jsonl(rtp_rows()))
    return {"HELMFLOW_MIRROR_REAL_TOXICITY_PROMPTS": str(root)}


def harms_files() -> dict[str, bytes]:
    """Every web and GitHub file of the harms scenarios, by ``<host>/<path>``."""
    return {**copyright_files(), **disinformation_files(), **bold_files()}
