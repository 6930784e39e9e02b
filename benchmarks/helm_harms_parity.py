"""HELM's own numbers for HELM Classic's harms metrics on inputs written for this project: the expected values
hard-coded in ``tests/test_classic_harms.py``.

Runs crfm-helm 0.5.16's ``BasicCopyrightMetric`` (HELM Classic's run-spec arguments:
``normalize_by_prefix_length=True``, ``normalize_newline_space_tab=False``) through its ``evaluate_generation``,
its ``_self_bleu`` and ``_monte_carlo_entropy`` (``disinformation_metrics.py``) and its ``ToxicityMetric`` (with a
fake metric service that answers fixed scores per text, as the Perspective client answers once per distinct
text). Run it in a throwaway environment that has HELM (``pip install crfm-helm==0.5.16`` into a venv under
/tmp), then copy the printed values into the test::

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


def main() -> None:
    import numpy as np

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
