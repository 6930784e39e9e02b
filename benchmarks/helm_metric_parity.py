"""HELM's own BBQ and calibration numbers on the hand-made cases of ``tests/test_safety_judges.py``
(several completions per instance) and ``tests/test_calibration.py`` (``HELM_OUTPUTS``), and its
reference metrics on ``tests/data/helm_reference_metrics.json``'s pairs (``--reference``, which writes
HELM's value of each pair into that file).

Runs HELM 0.5.16's ``BBQMetric`` and ``compute_calibration_metrics`` (not ours) and prints their stats, which
the tests hold helmflow to. Run it in a throwaway environment with ``crfm-helm==0.5.16`` (see
``helm_perturbation_parity.py``), never in helmflow's own: ``cd /tmp && <venv>/bin/python <this file>``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.metrics.basic_metrics import compute_calibration_metrics
from helm.benchmark.metrics.bbq_metrics import BBQMetric
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import CORRECT_TAG, Input, Instance, Output, Reference
from helm.common.request import GeneratedOutput, Request, RequestResult

# (polarity, context, correct letter, completions); target A, non-target B, unknown C
BBQ_CASES = [("negative", "non-ambiguous", "A", ["A", "B", ""]), ("non-negative", "non-ambiguous", "B", ["B"]),
             ("negative", "ambiguous", "C", ["A", "A", "C"]), ("negative", "ambiguous", "C", ["", ""])]
# (logprob of the answer, exact match) per instance
CALIBRATION_CASES = {
    "a confidence of 0": [(math.log(0.9), 1), (-math.inf, 0), (math.log(0.6), 1), (math.log(0.3), 0)],
    "0 twice, 0.8 four times": [(-math.inf, 1), (-math.inf, 0)] + [(math.log(0.8), 1)] * 3 + [(math.log(0.8), 0)],
}


def bbq() -> None:
    states = []
    for k, (polarity, context, correct, texts) in enumerate(BBQ_CASES):
        tags = [CORRECT_TAG, polarity, context, correct, "A", "B", "C"]
        instance = Instance(input=Input(text="x"), references=[Reference(Output(text="a"), tags=tags)], id=f"id{k}")
        result = RequestResult(success=True, embedding=[], cached=False,
                               completions=[GeneratedOutput(text=t, logprob=0.0, tokens=[]) for t in texts])
        states.append(RequestState(instance=instance, reference_index=None, request_mode=None, train_trial_index=0,
                                   output_mapping=None, request=Request(model="m", model_deployment="m", prompt="p"),
                                   result=result, num_train_instances=0, prompt_truncated=False))
    for stat in BBQMetric().evaluate_instances(states, ""):
        print("bbq", stat.name.name, repr(stat.mean))


def calibration() -> None:
    for label, pairs in CALIBRATION_CASES.items():
        per_instance = {}
        for k, (logprob, em) in enumerate(pairs):
            instance = Instance(input=Input(text=f"q{k}"), references=[], id=f"id{k}")
            per_instance[instance] = [Stat(MetricName("max_prob")).add(float(np.exp(logprob))),
                                      Stat(MetricName("exact_match")).add(em), Stat(MetricName("logprob")).add(logprob)]
        for stat in compute_calibration_metrics(per_instance):
            print("calibration", label, stat.name.name, repr(float(stat.mean)))


REFERENCE_CASES = Path(__file__).resolve().parent.parent / "tests" / "data" / "helm_reference_metrics.json"


def reference() -> None:
    """Each case through HELM's ``compute_reference_metrics`` (its completions stripped, the best of the
    correct references), the whole request state built as HELM's generation adapter builds it."""
    from helm.benchmark.adaptation.adapter_spec import AdapterSpec
    from helm.benchmark.metrics.evaluate_reference_metrics import compute_reference_metrics

    cases = json.loads(REFERENCE_CASES.read_text())
    for case in cases:
        refs = [Reference(Output(text=g), tags=[CORRECT_TAG]) for g in case["golds"]]
        instance = Instance(input=Input(text="q"), references=refs, id="id0")
        result = RequestResult(success=True, embedding=[], cached=False,
                               completions=[GeneratedOutput(text=case["output"], logprob=0.0, tokens=[])])
        state = RequestState(instance=instance, reference_index=None, request_mode=None, train_trial_index=0,
                             output_mapping=None, request=Request(model="m", model_deployment="m", prompt="q"),
                             result=result, num_train_instances=0, prompt_truncated=False)
        stats = compute_reference_metrics([case["metric"]], AdapterSpec(), state, None)  # type: ignore[arg-type]
        (value,) = [s.mean for s in stats if s.name.name == case["metric"]]
        case["helm"] = float(value)
        print("reference", case["metric"], case["golds"], repr(case["output"]), repr(case["helm"]))
    REFERENCE_CASES.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if "--reference" in sys.argv:
        reference()
    else:
        bbq()
        calibration()
