"""HELM's own numbers for the six instruction-following scenarios and the critique metric, on inputs written for
this project: the expected values ``tests/test_instruction_following.py`` reads from
``tests/data/helm_instruct_parity.json`` (this script's output, unedited).

Runs crfm-helm 0.5.16's ``SelfInstructScenario``, ``GrammarScenario``, ``OpenAssistantScenario``,
``VicunaScenario``, ``KoalaScenario`` and ``AnthropicHHRLHFScenario`` on the fixture files of
``tests/support/instruct_fixtures.py`` (downloads and ``load_dataset`` answered with the fixtures), then HELM's
``downsample_eval_instances`` on each, and ``InstructionFollowingCritiqueMetric`` through HELM's
``ModelCritiqueClient`` with a fake critic client answering fixed completions (the critique cases of
``tests/support/instruct_cases.py``; its "Keyword Feedback" stat, a constant 0, left out). For each of the six
entries of HELM's ``run_entries.conf`` (priority 1), HELM's own run spec function gives the scenario arguments,
the metric's ``num_respondents``, the adapter spec and, through HELM's ``GenerationAdapter``, the requests of the
entry's evaluated fixture instances (at ``max_eval_instances=1000``); and the critique's questions, options,
scores and critic requests as HELM's metric and ModelCritiqueClient make them. Prints one JSON object. Run it in a throwaway environment with HELM::

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
MAX_EVAL = 1000  # HELM Classic's --max-eval-instances, for the entries' requests
# HELM's run_entries.conf (v0.5.16), its six priority-1 instruction-following entries, as written there
CONF = {
    "self_instruct": "self_instruct:model=instruction_following,num_respondents=1",
    "grammar:": "grammar:path=src/helm/benchmark/scenarios/best_chatgpt_prompts.yaml,tags=,"
                "model=instruction_following,num_respondents=1",
    "open_assistant:en": "open_assistant:language=en,model=instruction_following,num_respondents=1",
    "vicuna:all": "vicuna:model=instruction_following,num_respondents=1",
    "koala": "koala:model=instruction_following,num_respondents=1",
    "anthropic_hh_rlhf:hh": "anthropic_hh_rlhf:subset=hh,model=instruction_following,num_respondents=1",
}
ADAPTER_FIELDS = ("method", "global_prefix", "global_suffix", "instructions", "input_prefix", "input_suffix",
                  "output_prefix", "output_suffix", "instance_prefix", "max_train_instances", "num_outputs",
                  "num_train_trials", "temperature", "max_tokens", "stop_sequences")


def _digest(instances) -> tuple[int, str]:
    rows = [[i.split, i.input.text, [r.output.text for r in i.references]] for i in instances]
    return len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _sampled(instances) -> list[int]:
    ids = with_instance_ids(instances)
    kept = downsample_eval_instances(ids, SAMPLE, [VALID_SPLIT, TEST_SPLIT])
    return [int(i.id[2:]) for i in kept if i.split != "train"]


LOADED: dict[str, list] = {}  # key -> HELM's instances on the fixtures, for the entries' requests


def scenarios() -> dict[str, object]:
    out: dict[str, object] = {}
    tmp = Path(tempfile.mkdtemp())

    def record(key: str, instances: list) -> None:
        LOADED[key] = instances
        out[key] = {"digest": _digest(instances), "sampled": _sampled(instances)}

    def github(module, cls, data: bytes, key: str, **kwargs) -> None:
        module.ensure_file_downloaded = lambda source_url, target_path, **_: Path(target_path).write_bytes(data)
        instances = cls(**kwargs).get_instances(str(tmp))
        record(key, instances)

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
        record(f"grammar:{tags}", instances)

    open_assistant_scenario.load_dataset = lambda *a, **k: {
        "train": [dict(m, model_name=None) for m in fx.OASST["train"]],
        "validation": [dict(m, model_name=None) for m in fx.OASST["valid"]]}
    for language in ("en", "es", "all"):
        instances = open_assistant_scenario.OpenAssistantScenario(language=language).get_instances(str(tmp))
        record(f"open_assistant:{language}", instances)

    def hh_dataset(*args, data_dir=None, **kwargs):
        if data_dir == "red-team-attempts":
            return {"train": fx.RED_TEAM}
        return {split: [row for d in anthropic_dirs for row in fx.hh_rows(d, split)] for split in ("train", "test")}

    anthropic_dirs = ("harmless-base", "helpful-base", "helpful-online", "helpful-rejection-sampled")
    anthropic_hh_rlhf_scenario.load_dataset = hh_dataset
    for subset in ("hh", "red_team"):
        instances = anthropic_hh_rlhf_scenario.AnthropicHHRLHFScenario(subset=subset).get_instances(str(tmp))
        record(f"anthropic_hh_rlhf:{subset}", instances)
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
        out.append({s.name.name: [s.count, s.sum] for s in stats if s.name.name != metric.KEYWORD_NAME})
    return out


def critique_template() -> dict[str, object]:
    """HELM's critique as its critic model is asked it: per question (in order) its name, type, text, options and
    their scores, and the max_tokens and temperature of the request ModelCritiqueClient makes for it."""
    from helm.benchmark.metrics.instruction_following_critique_metrics import InstructionFollowingCritiqueMetric
    from helm.proxy.critique.model_critique_client import ModelCritiqueClient

    metric = InstructionFollowingCritiqueMetric(num_respondents=1)
    template = metric._template
    client = ModelCritiqueClient.__new__(ModelCritiqueClient)
    client._model_name, client._model_deployment_name, client.vision_language = "test/critic", "test/critic", False
    requests = client._task_to_requests(template, {"instruction": "Name a colour.", "response": "Blue."})
    scores = {q.name: getattr(metric, f"{q.name.split()[0].upper()}_ANSWER_TO_SCORE", {}) for q in template.questions}
    return {"num_respondents": template.num_respondents, "questions": [
        {"name": q.name, "type": str(q.question_type), "text": q.text, "options": list(q.options),
         "scores": [scores[q.name][o] for o in q.options], "max_tokens": r.max_tokens, "temperature": r.temperature}
        for q, r in zip(template.questions, requests, strict=True)]}


def entries() -> dict[str, object]:
    """Per conf entry: HELM's run spec (its scenario arguments, num_respondents, adapter spec) and the requests
    HELM's GenerationAdapter makes for the entry's evaluated fixture instances, as (count, sha256 of the JSON list
    of [prompt, temperature, num_completions, max_tokens, stop_sequences]). Needs ``scenarios()`` first."""
    import helm.benchmark.run_specs.instruction_following_run_specs  # noqa: F401 - registers the functions
    from helm.benchmark.adaptation.adapters.generation_adapter import GenerationAdapter
    from helm.benchmark.run_spec import get_run_spec_function
    from helm.common.object_spec import parse_object_spec

    out: dict[str, object] = {}
    for key, description in CONF.items():
        spec = parse_object_spec(description)
        args = {k: v for k, v in spec.args.items() if k != "model"}  # model=: HELM's model expander
        run_spec = get_run_spec_function(spec.class_name)(**args)
        adapter = GenerationAdapter.__new__(GenerationAdapter)  # no model: the prompt is not cut to a window
        adapter.adapter_spec = run_spec.adapter_spec
        adapter._make_prompt_fit = lambda prompt: prompt
        kept = downsample_eval_instances(with_instance_ids(LOADED[key]), MAX_EVAL, [VALID_SPLIT, TEST_SPLIT])
        requests = [state.request for i in kept if i.split != "train"
                    for state in adapter.generate_requests(i, 0, [])]
        rows = [[r.prompt, r.temperature, r.num_completions, r.max_tokens, list(r.stop_sequences)] for r in requests]
        [metric] = run_spec.metric_specs
        out[key] = {
            "scenario_args": run_spec.scenario_spec.args,
            "metric": metric.class_name.rsplit(".", 1)[-1], "metric_args": metric.args,
            "adapter": {f: getattr(run_spec.adapter_spec, f) for f in ADAPTER_FIELDS},
            "requests": [len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest()],
        }
    return out


if __name__ == "__main__":
    print(json.dumps({"scenarios": scenarios(), "critiques": critiques(), "entries": entries(),
                      "critique_template": critique_template()}, indent=1))
