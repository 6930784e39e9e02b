"""HELM's own denoised-runtime estimates for a grid of (deployment, prompt tokens, output tokens): the
expected values of ``tests/test_classic_board.py::test_denoised_runtime_is_helms``.

Runs crfm-helm 0.5.16's ``_compute_estimated_time_from_prompt_size_and_num_output_tokens`` with its
``EfficiencyMetric().inference_denoised_runtimes_dict`` (not ours) on every case of
``tests/data/helm_denoised_runtime.json`` (cases written for this project: each tabulated prompt size and its
neighbours, past the largest, 0 and 1 output tokens, a deployment without a table) and writes HELM's answer
into each case. Run it in a throwaway environment that has HELM (see ``benchmarks/helm_perturbation_parity.py``)::

    cd /tmp && /work/venvs/helm-ref/bin/python /work/wt/<branch>/benchmarks/helm_denoised_runtime_parity.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from helm.benchmark.metrics.efficiency_metrics import (
    EfficiencyMetric,
    _compute_estimated_time_from_prompt_size_and_num_output_tokens,
)

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "helm_denoised_runtime.json"


def main() -> None:
    tables = EfficiencyMetric().inference_denoised_runtimes_dict
    data = json.loads(CASES.read_text())
    for case in data["cases"]:
        state = SimpleNamespace(request=SimpleNamespace(model_deployment=case["deployment"]))
        case["helm"] = _compute_estimated_time_from_prompt_size_and_num_output_tokens(
            state, tables, case["prompt_tokens"], case["output_tokens"])
    cases = ",\n".join("  " + json.dumps(c) for c in data["cases"])
    CASES.write_text(f'{{"_about": {json.dumps(data["_about"])},\n "cases": [\n{cases}\n]}}\n')
    print(f"wrote HELM's estimate for {len(data['cases'])} cases to {CASES}", file=sys.stderr)


if __name__ == "__main__":
    main()
