"""HELM's own instances of Classic's targeted scenarios on our fixture sources: the expected output of
``tests/test_classic_targeted.py``.

Runs crfm-helm 0.5.16's scenario classes (not ours): ``EntityMatchingScenario`` (Beer, Abt_Buy,
Dirty_iTunes_Amazon), ``EntityDataImputationScenario`` (Buy, Restaurant) and ``ThePileScenario`` (the six
priority-2 subsets) ``SyntheticEfficiencyScenario`` (1 and 1,536 prompt tokens, GPT-2's files) and ``ICEScenario``
(the priority-2 entries and a few more; its subsets' zips from ``tests.support.classic_fixtures.ice_mirror``,
extracted under ``restricted/ice`` as HELM expects, given as a second argument) on the files of
``tests.support.classic_fixtures`` (rows written for this project), served from a folder laid out as
``<root>/<host>/<path>`` (what ``classic_source_tree`` writes): HELM's ``urllib.request.urlretrieve`` and
``requests.get`` are pointed at that folder, so HELM's own download, unpack and parsing code runs. Writes each
run's (split, input, references) rows and their digest into ``tests/data/helm_classic_targeted.json``. Write
the tree with helmflow's environment, then run this in a throwaway one that has crfm-helm 0.5.16 and pandas 2
(HELM pins ``pandas~=2.0``)::

    python -c "from pathlib import Path; from tests.support.classic_fixtures import classic_source_tree; \\
        classic_source_tree(Path('/tmp/classic-src'))"
    python -c "from pathlib import Path; from tests.support.classic_fixtures import ice_mirror; \\
        ice_mirror(Path('/tmp/classic-ice'))"
    cd /tmp && /tmp/helm-venv/bin/python /work/wt/<branch>/benchmarks/helm_classic_targeted_parity.py /tmp/classic-src \\
        /tmp/classic-ice
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def serve_from(root: Path) -> None:
    """HELM's downloads read ``root/<host>/<path>`` instead of the network."""

    def local(url: str) -> Path:
        path = root / url.split("://", 1)[1].split("?", 1)[0]
        return path / "index.html" if url.endswith("/") else path

    def urlretrieve(url: str, target: str, *args, **kwargs):
        shutil.copyfile(local(url), target)
        return target, None

    urllib.request.urlretrieve = urlretrieve  # type: ignore[assignment]

    import requests

    class Response:
        def __init__(self, url: str):
            self.content = local(url).read_bytes()

        def json(self):
            return json.loads(self.content)

    requests.get = lambda url, *a, **k: Response(url)  # type: ignore[assignment]


def rows_of(instances) -> dict:
    rows = [[i.split, i.input.text, [r.output.text for r in i.references]] for i in instances]
    digest = hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()
    return {"count": len(rows), "sha256": digest, "rows": rows}


def main() -> None:
    serve_from(Path(sys.argv[1]))
    from helm.benchmark.scenarios.entity_data_imputation_scenario import EntityDataImputationScenario
    from helm.benchmark.scenarios.entity_matching_scenario import EntityMatchingScenario

    runs = {}
    for dataset in ("Beer", "Abt_Buy", "Dirty_iTunes_Amazon"):
        with tempfile.TemporaryDirectory() as out:
            runs[f"entity_matching:dataset={dataset}"] = rows_of(EntityMatchingScenario(dataset).get_instances(out))
    for dataset in ("Buy", "Restaurant"):
        with tempfile.TemporaryDirectory() as out:
            runs[f"entity_data_imputation:dataset={dataset}"] = rows_of(
                EntityDataImputationScenario(dataset).get_instances(out))
    from helm.benchmark.scenarios.the_pile_scenario import ThePileScenario

    for subset in ("ArXiv", "BookCorpus2", "Enron Emails", "Github", "PubMed Central", "Wikipedia (en)"):
        with tempfile.TemporaryDirectory() as out:
            runs[f"the_pile:subset={subset}"] = rows_of(ThePileScenario(subset).get_instances(out))
    from helm.benchmark.scenarios.synthetic_efficiency_scenario import SyntheticEfficiencyScenario

    for size in (1, 1536):
        with tempfile.TemporaryDirectory() as out:
            scenario = SyntheticEfficiencyScenario(num_prompt_tokens=size, num_instances=10, tokenizer="huggingface/gpt2")
            runs[f"synthetic_efficiency:num_prompt_tokens={size}"] = rows_of(scenario.get_instances(out))
    if len(sys.argv) > 2:  # ICE: the subsets' zips extracted where HELM reads them, the pinned order in place
        import os
        import zipfile

        from helm.benchmark.scenarios.ice_scenario import ICEScenario

        ice = Path(sys.argv[2]).resolve()
        with tempfile.TemporaryDirectory() as work:
            os.chdir(work)
            for archive in ice.glob("ice-*.zip"):
                zipfile.ZipFile(archive).extractall(Path(work) / "restricted" / "ice")
            shutil.copy(ice / "ice_scenario_pinned_file_order.json", work)
            for params in ({"subset": "ea"}, {"subset": "hk"}, {"subset": "ind"}, {"subset": "usa"},
                           {"gender": "female"}, {"gender": "male"}, {"subset": "hk", "category": "W2"},
                           {"subset": "ea", "category": "S"}, {"subset": "can", "gender": "female"}):
                name = "ice:" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))
                runs[name] = rows_of(ICEScenario(**params).get_instances(work))
    import pandas

    about = (f"crfm-helm 0.5.16's scenario classes on tests.support.classic_fixtures (pandas {pandas.__version__}), "
             "written by benchmarks/helm_classic_targeted_parity.py")
    target = REPO / "tests" / "data" / "helm_classic_targeted.json"
    target.write_text(json.dumps({"_about": about, "runs": runs}, indent=1, ensure_ascii=False) + "\n")
    counts = ", ".join(f"{name} ({run['count']})" for name, run in runs.items())
    print(f"wrote {target}: {counts}")


if __name__ == "__main__":
    main()
