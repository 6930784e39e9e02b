"""AIR-Bench 2024 (Zeng et al., 2024): harmful prompts across the AIR 2024 risk taxonomy, a safety benchmark
derived from government regulations and company policies, as HELM runs it (``air_bench_scenario.py``, run spec
``get_air_bench_2024_spec``, ``run_entries_air_bench.conf``).

The source is the Hub dataset ``stanford-crfm/air-bench-2024`` at HELM's revision ``976d9fbb…``: its default
configuration's test split, the 43 CSV files ``category_<n>.csv`` its dataset card lists, read in that order
(the order ``datasets.load_dataset`` concatenates them in). Each row (``cate-idx``, ``l2-name``, ``l3-name``,
``l4-name``, ``prompt``) is one ``test`` instance, ids ``id<row>`` over all files: the input is the prompt, and,
as in HELM, the references are the category id (``<l2>.<l3>.<l4>``, e.g. ``1.1.1``) and the level 2, 3 and 4
category names, none of them correct (metadata, not answers).

The prompt is the row's text and nothing else, zero-shot, greedy, 512 output tokens. A judge scores each reply
with its category's template (``metrics/air_bench_2024.py``): 1 a refusal, 0.5 neither, 0 compliance; ``air_score``
is the mean, and the same mean over each node of the taxonomy is its ``air_category_<id>_score``.
"""

from __future__ import annotations

import re

from helmflow.adapters.generation import raw_prompt_spec
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING, read_csv_source

REPO = "stanford-crfm/air-bench-2024"
REVISION = "976d9fbb0f52bce704dcbef5bd7a2652e65f2a21"
#: the default configuration's data files, in the dataset card's order (levels 3 39-40 and 41-42 share a file)
FILES = tuple(f"category_{n}.csv" for n in (*range(1, 39), "3940", "4142", 43, 44, 45))
COLUMNS = ["cate-idx", "l2-name", "l3-name", "l4-name", "prompt"]
#: the taxonomy levels a category id names, in order (HELM's l2, l3 and l4)
LEVELS = ("l2", "l3", "l4")
CATEGORY_ID = re.compile(r"^[0-9]+\.[0-9]+(?:-[0-9]+)?\.[0-9]+$")


def category_path(instance: Instance) -> list[tuple[str, str]]:
    """The instance's taxonomy nodes, top down: ``[(id, name)]`` for levels 2, 3 and 4, ids as ``1``, ``1.1``,
    ``1.1.1`` (HELM's references: the category id, then the three names)."""
    refs = instance.references
    if len(refs) != 4 or not CATEGORY_ID.match(refs[0].text):
        raise ScenarioError(f"instance {instance.id!r} is not an AIR-Bench instance: its references are not a "
                            "category id (<l2>.<l3>.<l4>) and the three category names")
    parts = refs[0].text.split(".")
    return [(".".join(parts[:k + 1]), refs[k + 1].text) for k in range(3)]


@scenario("air_bench_2024")
class AIRBench2024(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    unsafe_text = True  # harmful prompts: a content warning, and no text in static exports unless asked
    description = ("AIR-Bench 2024: harmful prompts across the regulation-derived AIR 2024 risk taxonomy (16 level-2, "
                   "43 level-3 and 314 level-4 categories); a judge rates each refusal with its category's template.")
    main_metric = "air_score"
    metrics = ["air_bench_2024", "efficiency"]
    default_adapter = raw_prompt_spec(512)
    helm_wording = RAW_PROMPT_WORDING
    pin_unverified = (f"the 43 file names in the repository (category_1.csv ... category_45.csv) were read off the "
                      f"dataset card at {REVISION[:7]}, not checked against the Hub repository")

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(name)) for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name in FILES:
            for number, row in enumerate(read_csv_source(self.name, files[name], COLUMNS)):
                if not CATEGORY_ID.match(row["cate-idx"]):
                    raise ScenarioError(f"scenario {self.name!r}: {name} data row {number}: cate-idx "
                                        f"{row['cate-idx'][:40]!r} is not <l2>.<l3>.<l4>")
                references = [Reference(text=row[c]) for c in ("cate-idx", "l2-name", "l3-name", "l4-name")]
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row["prompt"]),
                                    references=references))
        return out
