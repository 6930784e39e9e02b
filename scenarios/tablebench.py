"""TableBench (Wu et al., 2024) as ToRR runs it (unitxt's ``cards.tablebench_fact_checking``,
``cards.tablebench_numerical_reasoning`` and ``cards.tablebench_data_analysis``): a question over a table,
answered in a few words; unitxt's ``rougeL`` after the cards' answer post-processors.

The three cards read the Hub dataset ``Multilingual-Multimodal-NLP/TableBench`` (revision ``90593ad8``,
its ``test`` split) and keep the rows whose ``instruction_type`` is ``DP`` and whose ``qtype`` is the
task's (``FactChecking``, ``NumericalReasoning``, ``DataAnalysis``). That one split is then dealt into
train / validation / test by unitxt's ``SplitRandomMix`` (20% / 20% / 60%): each row in turn goes to
``random.Random("42/test").choices(["train", "validation", "test"], weights=[0.2, 0.2, 0.6])``, so the
deal depends on the rows kept and their order only. Instance ids are the split and the row's index in it
(``test17``), as HELM's unitxt scenario numbers the split unitxt hands it. ``table`` is a JSON object
``{"columns": [...], "data": [[...], ...]}`` (cells as JSON has them: strings or numbers), read as the
card's ``LoadJson`` and renamed to the header and rows; ``question`` is the question, ``answer`` the
reference and ``answer_formatter`` the answer-format sentence the card's instruction carries. The table is
augmented and serialised by the entry's ``serialization`` and ``augmentation``; five in-context examples.

Data: unitxt pins the revision by a short hash, and the file behind its ``test`` split is not named by the
card, so this scenario reads a mirror only (``$HELMFLOW_MIRROR_TABLEBENCH`` or ``$HELMFLOW_MIRROR``): that
split's rows as JSON lines, ``test.jsonl``, pinned by its sha256 at first use.
"""

from __future__ import annotations

import json
import random
from typing import Literal

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_source
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import TABLES_VERSION, UNITXT_SEED, TableError, TableParams

FILE = "test.jsonl"
LOADER_LIMIT = 10_000
QTYPES = {"fact_checking": "FactChecking", "numerical_reasoning": "NumericalReasoning",
          "data_analysis": "DataAnalysis"}
MIX = (("train", 0.2), ("validation", 0.2), ("test", 0.6))  # the cards' split_random_mix, in its order
OURS = {"train": "train", "validation": "valid", "test": "test"}
INSTRUCTIONS = ("Answer the question from the table, in the format the input asks for. Give only the final answer, "
                "with no explanation. Example inputs with their answers come first; answer the last input.")


class TableBenchParams(TableParams):
    """ToRR's table variants, and which of TableBench's three question types this entry asks."""

    task: Literal["fact_checking", "numerical_reasoning", "data_analysis"] = "fact_checking"


def deal_splits(count: int) -> list[str]:
    """unitxt's ``SplitRandomMix`` of one ``test`` stream into 20% / 20% / 60%: the split of each row."""
    draw = random.Random(f"{UNITXT_SEED}/test")
    names, weights = [n for n, _ in MIX], [w for _, w in MIX]
    return [draw.choices(names, weights=weights, k=1)[0] for _ in range(count)]


@scenario("tablebench")
class TableBench(Scenario[TableBenchParams]):
    VERSION = f"1.{TABLES_VERSION}"
    HUB_REPO = "Multilingual-Multimodal-NLP/TableBench"
    HUB_REVISION = UNPINNED  # the card's short revision names no file: runs from a mirror only
    Params = TableBenchParams
    description = ("TableBench: fact checking, numerical reasoning or data analysis questions over a table "
                   "(ToRR's serialisations and variants)")
    main_metric = "rougeL"
    metrics = ["tablebench_rougeL", "efficiency"]
    default_adapter = generation_spec("", "Final Answer", 512, [], instructions=INSTRUCTIONS, max_train_instances=5)
    helm_wording = ("the Table:/Question:/Final Answer: layout and five in-context examples follow the unitxt cards' "
                    "template; each input ends with its row's answer_formatter sentence, which the card puts in the "
                    "instruction once; the instructions are helmflow's own sentences; the examples are drawn by "
                    "HELM's seeded draw, not unitxt's demo sampler")
    helm_differences = ("tablebench: unitxt reads Multilingual-Multimodal-NLP/TableBench at revision 90593ad8; here "
                        "its test split is read from a mirror only, as JSON lines, pinned by the file's sha256 at "
                        "first use",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.hub_url(FILE))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILE]
        qtype = QTYPES[self.params.task]
        rows = []
        for n, line in enumerate(read_source(self.name, url).decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {n}: not JSON: {exc}") from None
            if not isinstance(row, dict):
                raise ScenarioError(f"scenario {self.name!r}: {url} line {n}: not a JSON object")
            if row.get("instruction_type") == "DP" and row.get("qtype") == qtype:
                rows.append((n, row))
        rows = rows[:LOADER_LIMIT]
        counters = {name: 0 for name, _ in MIX}
        out: list[Instance] = []
        for (n, row), split in zip(rows, deal_splits(len(rows)), strict=True):
            k = counters[split]
            counters[split] += 1
            try:
                raw = row["table"]
                table = json.loads(raw) if isinstance(raw, str) else raw
                if not isinstance(table, dict):
                    raise TableError("the table must be a JSON object with columns and data")
                rendered = self.params.render({"header": table.get("columns"), "rows": table.get("data")})
                question, answer = str(row["question"]), str(row["answer"])
                formatter = str(row.get("answer_formatter") or "")
            except KeyError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {n}: no field {exc}") from None
            except (TableError, json.JSONDecodeError, TypeError, IndexError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {n}: {exc}") from None
            text = f"Table: {rendered}\nQuestion: {question}" + (f"\n{formatter}" if formatter else "")
            out.append(Instance(id=f"{split}{k}", split=OURS[split], input=Input(text=text),
                                references=[Reference(text=answer, correct=True)],
                                extra={"tablebench_id": str(row.get("id", ""))}))
        return out
