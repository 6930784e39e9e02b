"""InfiniteBench En.Sum (HELM Long Context, ``InfiniteBenchEnSumScenario``): summarise a whole novel. Rows of
``longbook_sum_eng.jsonl`` (:mod:`helmflow.scenarios.infinite_bench`) whose novel and input hold at most
``max_num_words`` words (131,072 on HELM's board); the reference is the row's first answer; split test. The
prompt is the input alone (the novel, a blank line, the task's request), no examples, 1,200 tokens, greedy;
scored by ROUGE-L (the main metric) and HELM's open-ended generation metrics.
"""

from __future__ import annotations

from collections.abc import Iterator

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING
from helmflow.scenarios.infinite_bench import REPO, REVISION, InfiniteBenchParams, long_context_generation_spec, rows
from helmflow.scenarios.ruler_qa import words

FILE = "longbook_sum_eng.jsonl"


@scenario("infinite_bench_en_sum")
class InfiniteBenchEnSum(Scenario[InfiniteBenchParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = InfiniteBenchParams
    description = "InfiniteBench En.Sum: a summary of a whole novel (HELM Long Context)."
    main_metric = "rouge_l"
    metrics = ["rouge_l", "exact_match", "quasi_exact_match", "f1_score", "bleu_1", "bleu_4", "efficiency"]
    default_adapter = long_context_generation_spec(1200)
    helm_wording = RAW_PROMPT_WORDING

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.hub_url(FILE))]

    def load(self, files: dict[str, str]) -> Iterator[Instance]:
        url = files[FILE]
        for row in rows(self.name, url):
            if words(row.context) + words(row.input) > self.params.max_num_words:
                continue
            if not row.answer:
                raise ScenarioError(f"scenario {self.name!r}: {url} row {row.id} has no answer")
            yield Instance(id=str(row.id), split="test", input=Input(text=row.context + "\n\n" + row.input),
                           references=[Reference(text=row.answer[0], correct=True)])
