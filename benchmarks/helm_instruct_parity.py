"""HELM's own numbers for the six instruction-following scenarios and the critique metric, on inputs written for
this project: the expected values hard-coded in ``tests/test_instruction_following.py``.

Runs crfm-helm 0.5.16's ``SelfInstructScenario``, ``GrammarScenario``, ``OpenAssistantScenario``,
``VicunaScenario``, ``KoalaScenario`` and ``AnthropicHHRLHFScenario`` on the fixture files of
``tests/support/instruct_fixtures.py`` (downloads and ``load_dataset`` answered with the fixtures), then HELM's
``downsample_eval_instances`` on each, and ``InstructionFollowingCritiqueMetric`` through HELM's
``ModelCritiqueClient`` with a fake critic client answering fixed completions (the critique cases of
``tests/support/instruct_cases.py``). Prints one JSON object. Run it in a throwaway environment with HELM::

    python3 -m venv /work/venvs/helm && /work/venvs/helm/bin/pip install crfm-helm==0.5.16
    cd /tmp && /work/venvs/helm/bin/python /work/wt/<branch>/benchmarks/helm_instruct_parity.py
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from helm.benchmark.runner import downsample_eval_instances
from helm.benchmark.scenarios import (
    anthropic_hh_rlhf_scenario,
    grammar_scenario,
    koala_scenario,
    open_assistant_scenario,
    self_instruct_scenario,
    vicuna_scenario,
)
from helm.benchmark.scenarios.scenario import TEST_SPLIT, VALID_SPLIT, with_instance_ids

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support import instruct_fixtures as fx  # noqa: E402 - the repository's own inputs, after HELM's imports
from tests.support.instruct_cases import CRITIQUE_CASES  # noqa: E402

SAMPLE = 5  # max_eval_instances for the downsampling check


def _digest(instances) -> tuple[int, str]:
    rows = [[i.split, i.input.text, [r.output.text for r in i.references]] for i in instances]
    return len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _sampled(instances) -> list[int]:
    ids = with_instance_ids(instances)
    kept = downsample_eval_instances(ids, SAMPLE, [VALID_SPLIT, TEST_SPLIT])
    return [int(i.id[2:]) for i in kept if i.split != "train"]


def scenarios() -> dict[str, object]:
    out: dict[str, object] = {}
    tmp = Path(tempfile.mkdtemp())

    def github(module, cls, data: bytes, key: str, **kwargs) -> None:
        module.ensure_file_downloaded = lambda source_url, target_path, **_: Path(target_path).write_bytes(data)
        instances = cls(**kwargs).get_instances(str(tmp))
        out[key] = {"digest": _digest(instances), "sampled": _sampled(instances)}

    github(self_instruct_scenario, self_instruct_scenario.SelfInstructScenario, fx.jsonl(fx.SELF_INSTRUCT),
           "self_instruct")
    for category in ("all", "generic"):
        github(vicuna_scenario, vicuna_scenario.VicunaScenario, fx.jsonl(fx.VICUNA), f"vicuna:{category}",
               category=category)
    github(koala_scenario, koala_scenario.KoalaScenario, fx.jsonl(fx.KOALA), "koala")

    grammar = tmp / "grammar.yaml"
    grammar.write_text(fx.GRAMMAR)
    for tags in ("", "garden", "home,numbers"):
        instances = grammar_scenario.GrammarScenario(path=str(grammar), tags=tags).get_instances(str(tmp))
        out[f"grammar:{tags}"] = {"digest": _digest(instances), "sampled": _sampled(instances)}

    open_assistant_scenario.load_dataset = lambda *a, **k: {
        "train": [dict(m, model_name=None) for m in fx.OASST["train"]],
        "validation": [dict(m, model_name=None) for m in fx.OASST["valid"]]}
    for language in ("en", "es", "all"):
        instances = open_assistant_scenario.OpenAssistantScenario(language=language).get_instances(str(tmp))
        out[f"open_assistant:{language}"] = {"digest": _digest(instances), "sampled": _sampled(instances)}

    def hh_dataset(*args, data_dir=None, **kwargs):
        if data_dir == "red-team-attempts":
            return {"train": fx.RED_TEAM}
        return {split: [row for d in anthropic_dirs for row in fx.hh_rows(d, split)] for split in ("train", "test")}

    anthropic_dirs = ("harmless-base", "helpful-base", "helpful-online", "helpful-rejection-sampled")
    anthropic_hh_rlhf_scenario.load_dataset = hh_dataset
    for subset in ("hh", "red_team"):
        instances = anthropic_hh_rlhf_scenario.AnthropicHHRLHFScenario(subset=subset).get_instances(str(tmp))
        out[f"anthropic_hh_rlhf:{subset}"] = {"digest": _digest(instances), "sampled": _sampled(instances)}
    shutil.rmtree(tmp)
    return out


def critiques() -> list[object]:
    """HELM's stats per case: the critic's completions per (question, respondent), num_respondents."""
    from helm.benchmark.metrics.instruction_following_critique_metrics import InstructionFollowingCritiqueMetric
    from helm.benchmark.scenarios.scenario import Input, Instance
    from helm.common.request import GeneratedOutput, RequestResult
    from helm.proxy.critique.model_critique_client import ModelCritiqueClient

    out = []
    for answers, respondents in CRITIQUE_CASES:
        metric = InstructionFollowingCritiqueMetric(num_respondents=respondents)
        calls = {"n": 0}
        prompts: list[str] = []

        class Critic:
            def make_request(self, request):
                prompts.append(request.prompt)
                text = answers[calls["n"] // respondents][int(request.random)]
                calls["n"] += 1
                return RequestResult(success=True, cached=False, embedding=[],
                                     completions=[GeneratedOutput(text=text, logprob=0.0, tokens=[])])

        client = ModelCritiqueClient.__new__(ModelCritiqueClient)
        client._client, client._model_name, client._model_deployment_name = Critic(), "test/critic", "test/critic"
        client.vision_language = False
        service = SimpleNamespace(make_critique_request=client.make_critique_request)
        state = SimpleNamespace(instance=Instance(input=Input(text="Name a colour."), references=[]),
                                result=SimpleNamespace(completions=[GeneratedOutput(text="Blue.", logprob=0.0,
                                                                                    tokens=[])]))
        stats = metric.evaluate_generation(None, state, service, "")
        out.append({s.name.name: [s.count, s.sum] for s in stats})
    return out


if __name__ == "__main__":
    print(json.dumps({"scenarios": scenarios(), "critiques": critiques()}, indent=1))
