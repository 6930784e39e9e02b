"""HELM's own instances of ``summarization_xsum_sampled`` for our fixture pickle: the expected output of
``tests/test_summarization.py::test_xsum_sampled_is_helms``.

Runs crfm-helm 0.5.16's ``SummarizationScenario(dataset_name="xsum-sampled", 50, 150, 512)`` (not ours) on
``tests.support.summarization_fixtures.xsum_sampled_pickle()`` (rows written for this project), placed where
HELM's ``ensure_file_downloaded`` finds it already downloaded, and writes the splits and the digest of
(split, input, references) into ``tests/data/helm_summarization.json`` under ``summarization_xsum_sampled``.
Write the fixture with helmflow's environment, then run this in a throwaway one that has HELM (see
``benchmarks/helm_perturbation_parity.py``)::

    python -c "import sys; from tests.support.summarization_fixtures import xsum_sampled_pickle; \\
        sys.stdout.buffer.write(xsum_sampled_pickle())" > /tmp/xsum-sampled.pk
    cd /tmp && /work/venvs/helm-ref/bin/python /work/wt/<branch>/benchmarks/helm_xsum_sampled_parity.py \\
        /tmp/xsum-sampled.pk
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from helm.benchmark.scenarios.summarization_scenario import SummarizationScenario

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    with tempfile.TemporaryDirectory() as out:
        (Path(out) / "data").mkdir()
        (Path(out) / "data" / "xsum-sampled.pk").write_bytes(Path(sys.argv[1]).read_bytes())
        scenario = SummarizationScenario(dataset_name="xsum-sampled", sampling_min_length=50,
                                         sampling_max_length=150, doc_max_length=512)
        instances = scenario.get_instances(out)
    rows = [[i.split, i.input.text, [r.output.text for r in i.references]] for i in instances]
    digest = hashlib.sha256(json.dumps(rows, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
    target = REPO / "tests" / "data" / "helm_summarization.json"
    data = json.loads(target.read_text())
    data["summarization_xsum_sampled"] = {"splits": [i.split for i in instances], "sha256": digest}
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(instances)} instances' digest to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
