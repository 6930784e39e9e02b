"""Mental health counselling: the counsellor's next turn in a conversation, as MedHELM runs it
(``mental_health_scenario.py``, ``get_mental_health_spec``). Stanford-private.

HELM reads ``processed_dialogues.csv`` (``data_path=``: here the folder holding it) with ``pandas.read_csv``, so
cells are what pandas makes of them (a missing cell is ``nan``, a number column with a gap is floats). Every row
is a test instance: its ``topic``, ``dialogue_type`` and ``context`` (the conversation so far) under
``Topic:``, ``Type:`` and ``Previous conversation:``, then the request for the counsellor's reply; the reference is
``gold_counselor_response``. HELM wraps the text as a passage-question input with an empty passage, so it starts
with a newline and ``Question: ``; kept. Generation (no input noun, ``Counselor response:``, 512 tokens, no stop
sequence), scored by MedHELM's LLM jury (``mental_health_accuracy``). Reading needs pandas (the ``medhelm`` extra).
"""

from __future__ import annotations

import io

from pydantic import BaseModel, ConfigDict

from helmflow.errors import install_command
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation, user_file

FILENAME = "processed_dialogues.csv"
PROJECT = "https://crfm.stanford.edu/helm/medhelm/latest/#/"  # named in lines only: the file is not published
ACCESS = "counselling dialogues, private to Stanford: give the folder holding it as data_path="
COLUMNS = ("topic", "dialogue_type", "context", "gold_counselor_response")
INSTRUCTIONS = "Reply to the conversation below as its counsellor would: with empathy, and as the moment needs."
ASK = "Write the counsellor's next reply, with empathy and as the moment needs:"


class MentalHealthParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # a folder holding processed_dialogues.csv


def read_pandas_csv(scenario: str, url: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a CSV as ``pandas.read_csv`` reads it, each cell as ``str`` makes it (HELM's f-strings)."""
    try:
        import pandas as pd
    except ImportError:
        raise ScenarioError(f"scenario {scenario!r} reads its CSV as HELM does, with pandas: "
                            f"{install_command('medhelm')}") from None
    try:
        frame = pd.read_csv(io.BytesIO(read_source(scenario, url)))
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable CSV file: {exc}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ScenarioError(f"scenario {scenario!r}: {url} has no column {', '.join(missing)}")
    return [{c: str(row[c]) for c in columns} for _, row in frame.iterrows()]


@scenario("mental_health")
class MentalHealth(Scenario[MentalHealthParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = MentalHealthParams
    description = "Mental health counselling: the counsellor's next reply in a conversation (MedHELM; private)."
    main_metric = "mental_health_accuracy"
    metrics = ["mental_health_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, None, "Counselor response", 512, stop=())
    helm_wording = WORDING + "; the request line each input ends with is helmflow's too"
    publish_text = False  # Stanford's dialogues never leave the machine in exports
    helm_differences = ("mental_health: read from your folder (data_path= or its mirror folder), pinned by the sha256 "
                        "recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, FILENAME, PROJECT + FILENAME, ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for row in read_pandas_csv(self.name, files[FILENAME], COLUMNS):
            question = (f"Topic: {row['topic']}\nType: {row['dialogue_type']}\n\nPrevious conversation:\n"
                        f"{row['context']}\n\n{ASK}")
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=f"\nQuestion: {question}"),
                                references=[Reference(text=row["gold_counselor_response"], correct=True)]))
        return out
