"""HELM's own numbers for HELM Classic's harms metrics on inputs written for this project: the expected values
hard-coded in ``tests/test_classic_harms.py``.

Runs crfm-helm 0.5.16's ``BasicCopyrightMetric`` (HELM Classic's run-spec arguments:
``normalize_by_prefix_length=True``, ``normalize_newline_space_tab=False``) through its ``evaluate_generation``,
its ``_self_bleu`` and ``_monte_carlo_entropy`` (``disinformation_metrics.py``) and its ``ToxicityMetric`` (with a
fake metric service that answers fixed scores per text, as the Perspective client answers once per distinct
text), and HELM's four scenario classes on the fixture files of ``tests/support/harms_fixtures.py`` (a digest of
their instances). Run it in a throwaway environment that has HELM (``pip install crfm-helm==0.5.16 numba sacrebleu
google-api-python-client`` into a venv under /tmp, plus ``pip install --no-deps -e .`` and helmflow's small
dependencies such as pydantic-settings and tenacity, which the fixtures import), then copy the printed values
into the test::

    cd /tmp && /tmp/helm-venv/bin/python /work/wt/<branch>/benchmarks/helm_harms_parity.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from helm.benchmark.metrics.copyright_metrics import BasicCopyrightMetric, _edit_distance
from helm.benchmark.metrics.disinformation_metrics import _monte_carlo_entropy, _self_bleu
from helm.benchmark.metrics.toxicity_metrics import ToxicityMetric
from helm.common.request import GeneratedOutput, Token

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.harms_cases import (  # noqa: E402 - the repository's own inputs, after HELM's imports
    BLEU_CASES,
    COPYRIGHT_CASES,
    EDIT_PAIRS,
    ENTROPY_CASES,
    TOXICITY_CASES,
)


def copyright_values() -> list[dict[str, float]]:
    from helm.benchmark.scenarios.scenario import CORRECT_TAG, Input, Instance, Output, Reference

    out = []
    for prefix, text, outputs in COPYRIGHT_CASES:
        state = SimpleNamespace(
            instance=Instance(input=Input(text=prefix), references=[Reference(Output(text=text), tags=[CORRECT_TAG])]),
            result=SimpleNamespace(completions=[GeneratedOutput(text=o, logprob=0.0, tokens=[]) for o in outputs]))
        values = {}
        for name in ("longest_common_prefix_length", "edit_distance", "edit_similarity"):
            metric = BasicCopyrightMetric(name, normalize_by_prefix_length=True, normalize_newline_space_tab=False)
            [stat] = metric.evaluate_generation(None, state, None, "")
            values[name] = stat.mean
        out.append(values)
    return out


def toxicity_values() -> list[dict[str, float]]:
    from helm.common.perspective_api_request import PerspectiveAPIRequestResult, ToxicityAttributes

    out = []
    for outputs, scores in TOXICITY_CASES:
        def get_toxicity_scores(request, scores=scores):
            return PerspectiveAPIRequestResult(success=True, cached=True, text_to_toxicity_attributes={
                t: ToxicityAttributes(toxicity_score=scores[t]) for t in set(request.text_batch)})

        state = SimpleNamespace(result=SimpleNamespace(completions=[GeneratedOutput(text=o, logprob=0.0, tokens=[])
                                                                    for o in outputs]))
        stats = ToxicityMetric().evaluate_generation(None, state, SimpleNamespace(
            get_toxicity_scores=get_toxicity_scores), "")
        out.append({s.name.name: s.mean for s in stats})
    return out


def scenario_instances() -> dict[str, list]:
    """HELM's own scenario classes on this project's fixture files (tests/support/harms_fixtures.py; helmflow installed
    into the same throwaway environment with --no-deps to build them): each instance's (split, sub_split, input,
    references). HELM's downloads are replaced by the fixture bytes for the URL it asks for."""
    import os
    import tempfile

    from helm.benchmark.scenarios import (
        bold_scenario,
        copyright_scenario,
        disinformation_scenario,
        real_toxicity_prompts_scenario,
    )

    from tests.support.harms_fixtures import BOLD as BOLD_PATH
    from tests.support.harms_fixtures import COPYRIGHT_TAGS, harms_files, rtp_rows

    by_url = {"https://" + path: data for path, data in harms_files().items()}

    def our_url(helm_url: str) -> str:
        """HELM's URL as this project's fixtures name it: BOLD at its commit, Drive's download with confirm=t."""
        if helm_url.startswith("https://drive.google.com/uc?id="):
            return helm_url.replace("uc?id=", "uc?export=download&id=") + "&confirm=t"
        return helm_url.replace("https://raw.githubusercontent.com/amazon-research/bold/main/prompts",
                                "https://" + BOLD_PATH)

    def fake_download(source_url, target_path, unpack=False, **_):
        if unpack:  # RealToxicityPrompts' archive: the folder with prompts.jsonl
            os.makedirs(target_path, exist_ok=True)
            with open(os.path.join(target_path, "prompts.jsonl"), "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rtp_rows()))
            return
        url = our_url(source_url)
        with open(target_path, "wb") as f:
            f.write(by_url[url])

    for module in (bold_scenario, copyright_scenario, disinformation_scenario, real_toxicity_prompts_scenario):
        module.ensure_file_downloaded = fake_download

    def rows(scenario) -> list:
        with tempfile.TemporaryDirectory() as tmp:
            return [[i.split, i.sub_split, i.input.text, [r.output.text for r in i.references]]
                    for i in scenario.get_instances(tmp)]

    out = {f"copyright:{tag}": rows(copyright_scenario.CopyrightScenario(datatag=tag)) for tag in COPYRIGHT_TAGS}
    for topic in ("covid", "climate"):
        out[f"disinformation:reiteration,{topic}"] = rows(disinformation_scenario.DisinformationScenario(
            capability="reiteration", topic=topic))
    out["disinformation:wedging"] = rows(disinformation_scenario.DisinformationScenario(capability="wedging"))
    for subject in ("all", "race"):
        out[f"bold:{subject}"] = rows(bold_scenario.BOLDScenario(subject=subject))
    out["real_toxicity_prompts"] = rows(real_toxicity_prompts_scenario.RealToxicityPromptsScenario())
    return out


def main() -> None:
    import hashlib

    import numpy as np

    for name, instances in scenario_instances().items():
        digest = hashlib.sha256(json.dumps(instances).encode()).hexdigest()
        print(f"INSTANCES {name!r}: ({len(instances)}, {digest!r}),")

    print("COPYRIGHT =", json.dumps(copyright_values()))
    print("EDIT_DISTANCES =", json.dumps([_edit_distance(np.array(a), np.array(b)) for a, b in EDIT_PAIRS]))
    print("SELF_BLEU =", json.dumps([_self_bleu([GeneratedOutput(text=t, logprob=0.0, tokens=[]) for t in case])
                                     for case in BLEU_CASES]))
    print("ENTROPY =", json.dumps([_monte_carlo_entropy([
        GeneratedOutput(text="x", logprob=0.0, tokens=[Token(text="t", logprob=lp) for lp in lps]) for lps in case])
        for case in ENTROPY_CASES]))
    print("TOXICITY =", json.dumps(toxicity_values()))


if __name__ == "__main__":
    main()
