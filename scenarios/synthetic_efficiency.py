"""Synthetic efficiency (HELM Classic's targeted efficiency evaluation, ``synthetic_efficiency_scenario.py``): how
a model's runtime grows with the prompt's and the output's length.

HELM's run entry ``synthetic_efficiency:tokenizer=default,num_prompt_tokens=default_sweep,
num_output_tokens=default_sweep`` expands to 35 runs per model: prompts of 1, 256, 512, 1024 and 1536 tokens times
outputs of 1, 2, 4, 8, 16, 32 and 64 tokens (HELM's ``NumPromptTokensRunExpander`` and
``NumOutputTokensRunExpander``), ten prompts each. The prompts are HELM's files in CodaLab bundle
``0x17a361bc…``, ``num_prompt_tokens=<n>,tokenizer=<tokenizer with _ for />,id=<i>.txt`` (public-domain text cut
to ``n`` tokens of that tokenizer), read as text (universal newlines), one test instance each with an empty
correct reference. HELM's completion adapter: the prompt alone, zero-shot, temperature 0, no stop sequence,
``max_tokens`` = the output length. The scores are the runtimes (``inference_runtime``, HELM's denoised
``inference_denoised_runtime``). CodaLab publishes no checksums: the pins are recorded at first fetch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.adapters.generation import raw_prompt_spec
from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source

URL = "https://worksheets.codalab.org/rest/bundles/0x17a361bc066b4b0e87d968069759d361/contents/blob/{name}"
#: HELM's default sweeps (run_expander.py)
PROMPT_SWEEP = (1, 256, 512, 1024, 1536)
OUTPUT_SWEEP = (1, 2, 4, 8, 16, 32, 64)
NUM_INSTANCES = 10  # HELM's run spec


class SyntheticEfficiencyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # the prompt sizes the bundle has (synthetic_efficiency_scenario.py's NUM_INPUT_TOKENS)
    num_prompt_tokens: Literal[1, 16, 32, 64, 256, 512, 768, 1024, 1536, 1920] = 1
    num_output_tokens: int = Field(1, ge=1, le=4096)
    # HELM's list of tokenizers the bundle has prompts for (HELM picks the model's own)
    tokenizer: Literal["huggingface/gpt2", "ai21/j1", "cohere/cohere", "meta/opt", "yandex/yalm", "bigscience/bloom",
                       "bigscience/t0pp", "google/t5", "google/ul2", "tsinghua/glm", "eleutherai/gptj",
                       "eleutherai/gptneox"] = "huggingface/gpt2"


def file_name(num_prompt_tokens: int, tokenizer: str, index: int) -> str:
    return f"num_prompt_tokens={num_prompt_tokens},tokenizer={tokenizer.replace('/', '_')},id={index}.txt"


@scenario("synthetic_efficiency")
class SyntheticEfficiency(Scenario[SyntheticEfficiencyParams]):
    VERSION = "1"
    SOURCE_REVISION = "codalab-0x17a361bc"
    Params = SyntheticEfficiencyParams
    description = ("Synthetic efficiency: the runtime of prompts of 1 to 1,536 tokens with outputs of 1 to 64 "
                   "tokens (HELM Classic's targeted efficiency evaluation).")
    main_metric = "inference_denoised_runtime"
    metrics = ["exact_match", "efficiency"]
    helm_wording = "HELM's completion adapter: the prompt alone, max_tokens the output length, no stop sequence"
    helm_differences = ("synthetic_efficiency: the prompts of one tokenizer's files (the entry's tokenizer, GPT-2's "
                        "by default), where HELM takes the files of each model's own tokenizer and runs nothing for "
                        "a model whose tokenizer has none; pinned by their sha256 (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return raw_prompt_spec(self.params.num_output_tokens).model_copy(update={"max_train_instances": 0})

    def names(self) -> list[str]:
        p = self.params
        return [file_name(p.num_prompt_tokens, p.tokenizer, i) for i in range(NUM_INSTANCES)]

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(URL.format(name=name)), sha256_unknown=True)
                for name in self.names()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for k, name in enumerate(self.names()):
            try:
                text = read_source(self.name, files[name]).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {files[name]} is not UTF-8 text: {exc}") from None
            text = text.replace("\r\n", "\n").replace("\r", "\n")  # HELM's open(): universal newlines
            out.append(Instance(id=f"id{k}", split="test", input=Input(text=text),
                                references=[Reference(text="", correct=True)]))
        return out
