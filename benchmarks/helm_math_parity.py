"""HELM's own ``MATHScenario`` against helmflow's ``math`` scenario, instance for instance, on fixture files.

Runs crfm-helm 0.5.16's class (its ``datasets`` sort and seeded shuffle, its subject and level filter, its
``get_answer``, its hard-coded official examples) on Parquet files of rows written for the tests
(``tests.support.lite_hub_fixtures.math_rows``), with ``load_dataset`` pointed at them; helmflow's loader reads the same files and the
official examples from HELM's ``math_scenario.py`` at v0.5.16 (pass its path: it is not in this repository, e.g.
``git show v0.5.16:src/helm/benchmark/scenarios/math_scenario.py`` in a clone of stanford-crfm/helm). Prints one
line per (subject, variant): the instance count and whether the (split, input, references) lists are equal.
Run it in a throwaway environment with crfm-helm 0.5.16 and helmflow importable::

    cd /work/wt/<branch> && PYTHONPATH=. /tmp/helm-venv/bin/python benchmarks/helm_math_parity.py /tmp/helm_math_scenario.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

VARIANTS = {  # HELM's arguments -> ours
    "official examples (math_regular)": ({"use_official_examples": True}, {"use_chain_of_thought": False,
                                                                         "use_official_examples": True}),
    "regular, train examples": ({}, {"use_chain_of_thought": False}),
    "chain of thought": ({"use_chain_of_thought": True}, {}),
}


def fixture_files(folder: Path) -> dict[str, str]:
    from tests.support.lite_hub_fixtures import math_files

    for name, data in math_files().items():
        (folder / name).write_bytes(data)
    return {name: str(folder / name) for name in ("train.parquet", "test.parquet")}


def main(helm_source: str) -> int:
    import datasets
    from helm.benchmark.scenarios import math_scenario as helm_math

    from helmflow.scenarios import get_scenario
    from helmflow.scenarios.competition_math import HELM_SOURCE, SUBJECTS

    work = Path(tempfile.mkdtemp(prefix="helm-math-parity-"))
    files = {**fixture_files(work), HELM_SOURCE: helm_source}
    data = datasets.DatasetDict({split: datasets.Dataset.from_parquet(files[f"{split}.parquet"])
                                 for split in ("train", "test")})
    helm_math.load_dataset = lambda *args, **kwargs: data  # HELM's own code from here on
    differ = 0
    for subject in SUBJECTS:
        for name, (helm_args, our_args) in VARIANTS.items():
            helm = helm_math.MATHScenario(subject=subject, level="1", **helm_args).get_instances(str(work / "helm"))
            theirs = [(i.split, i.input.text, [r.output.text for r in i.references if r.is_correct]) for i in helm]
            ours = [(i.split, i.input.text, [r.text for r in i.references if r.correct])
                    for i in get_scenario("math", {"subject": subject, "level": 1, **our_args}).load(files)]
            differ += ours != theirs
            print(f"{subject:26} {name:34} {len(theirs):4} instances: {'equal' if ours == theirs else 'DIFFER'}")
    print("all equal" if not differ else f"{differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
