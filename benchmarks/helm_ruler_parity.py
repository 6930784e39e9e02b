"""RULER QA samples: helmflow's synthesis against crfm-helm's own ``generate_samples``, on fixture files.

    python benchmarks/helm_ruler_parity.py --helm-python /path/to/venv/bin/python [--samples 30]

The other interpreter needs crfm-helm (``pip install --no-deps crfm-helm==0.5.16`` is enough: the helper
imports numpy and tqdm only). Both sides read the same SQuAD 2.0 and HotpotQA files (written here in the raw
shapes, tests/support/long_context_fixtures.py) with helmflow's template, at several word budgets, and every
sample (number, prompt, answers) is compared. Printed: one line per dataset and budget, ``equal`` or the first
differing sample.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUDGETS = (1000, 2500, 6000, 100_000)

HELM_SIDE = """
import json, sys
from helm.benchmark.scenarios.ruler_qa_scenario_helper import generate_samples
folder, samples, budgets = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
template = open(f"{folder}/template.txt").read()
out = {}
for ds, name in (("squad", "squad.json"), ("hotpotqa", "hotpot.json")):
    for budget in budgets:
        got = generate_samples(dataset=ds, dataset_path=f"{folder}/{name}", max_seq_length=budget,
                               tokens_to_generate=32, num_samples=samples, random_seed=42, pre_samples=0,
                               template=template)
        out[f"{ds}-{budget}"] = [[s["index"], s["input"], s["outputs"]] for s in got]
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--helm-python", required=True, help="an interpreter that imports crfm-helm")
    parser.add_argument("--samples", type=int, default=30, help="samples per budget (at most the questions)")
    args = parser.parse_args()
    from helmflow.scenarios.ruler_qa import TEMPLATE, Synthesis, hotpotqa_questions, squad_questions
    from tests.support.long_context_fixtures import hotpot_dev, squad_dev

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "squad.json").write_bytes(squad_dev(12, 5, words=50))
        (folder / "hotpot.json").write_bytes(hotpot_dev(30, words=30))
        (folder / "template.txt").write_text(TEMPLATE)
        out = subprocess.run([args.helm_python, "-c", HELM_SIDE, tmp, str(args.samples), json.dumps(BUDGETS)],
                             capture_output=True, text=True, check=True, timeout=600)
        helm = json.loads(out.stdout.strip().splitlines()[-1])
        for ds, name, read in (("squad", "squad.json", squad_questions), ("hotpotqa", "hotpot.json",
                                                                          hotpotqa_questions)):
            for budget in BUDGETS:
                questions, docs = read("ruler", str(folder / name))
                ours = [[i, t, a] for i, t, a in Synthesis(questions, docs, TEMPLATE, budget).samples(args.samples)]
                theirs = helm[f"{ds}-{budget}"]
                first = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
                verdict = "equal" if ours == theirs else f"DIFFERENT from sample {first}"
                print(f"{ds:9} {budget:>7} words: {len(ours)} samples, {verdict}")


if __name__ == "__main__":
    main()
