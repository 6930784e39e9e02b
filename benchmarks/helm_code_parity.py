"""HELM's own verdicts on HumanEval and APPS programs: the expected values of
``tests/test_code_sandbox.py::test_the_jail_gives_helms_own_verdicts``.

Runs crfm-helm 0.5.16's ``code_metrics_helper`` (not ours): ``run_test`` on each APPS case of
``tests/data/helm_code_parity.json`` (programs and test cases written for this project), in a child process
with HELM's 11 s join as its ``APPSMetric`` does (no result: HELM's 21 failed tests), its verdicts converted by
HELM's ``_convert_scores``; ``check_correctness`` on each HumanEval case. It writes HELM's answer into each case.
The programs are the project's own, never a model's; run it in a throwaway environment that has HELM::

    python -m venv /work/venvs/helm-code
    /work/venvs/helm-code/bin/pip install --no-deps crfm-helm==0.5.16
    /work/venvs/helm-code/bin/pip install numpy pyyaml colorlog   # what code_metrics_helper imports
    cd /tmp && /work/venvs/helm-code/bin/python /work/wt/<branch>/benchmarks/helm_code_parity.py
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import tempfile
from pathlib import Path

from helm.benchmark.metrics import code_metrics_helper
from helm.benchmark.metrics.code_metrics import _convert_scores

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "helm_code_parity.json"
APPS_TIMEOUT = 1  # seconds per test case (HELM's conf says 3; the same value is given to both sides)


def _apps_child(root: str, completion: str, out: list) -> None:
    out.append(code_metrics_helper.run_test(root, completion, APPS_TIMEOUT))


def helm_apps(tests: dict, completion: str) -> list[float]:
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "input_output.json").write_text(json.dumps(tests))
        shared = multiprocessing.Manager().list()
        p = multiprocessing.Process(target=_apps_child, args=(root, completion, shared))
        p.start()
        p.join(timeout=11)
        if p.is_alive():
            p.kill()
            p.join()
        scores = shared[0] if len(shared) else [-1] * 21
    return _convert_scores(scores)


def main() -> None:
    data = json.loads(CASES.read_text())
    for case in data["apps"]:
        case["helm"] = helm_apps(case["tests"], case["completion"])
    for case in data["humaneval"]:
        result = code_metrics_helper.check_correctness(case["problem"], case["completion"], 3.0)
        case["helm"] = {"passed": result["passed"], "kind": result["result"].split(":")[0]}
    CASES.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote HELM's verdicts for {len(data['apps'])} APPS and {len(data['humaneval'])} HumanEval cases to "
          f"{CASES}", file=sys.stderr)


if __name__ == "__main__":
    main()
