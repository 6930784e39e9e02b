"""HELM's own HEIM scenarios against helmflow's, instance for instance, on the fixture files of the tests.

Runs crfm-helm 0.5.16's ``I2PScenario`` (its ``load_dataset`` pointed at the fixture CSV through datasets' own CSV
builder, as the Hub's one-file repository loads), ``RelationalUnderstandingScenario``, ``DetectionScenario`` and
``CUB200Scenario`` (their ``ensure_file_downloaded`` fetching the fixtures from a local server with wget, HELM's
own unpacking included; CUB-200's count check of the real 2,933 test photos is given the fixture's list),
``WinogroundScenario`` (its ``load_dataset`` given the fixture rows with the photos as a datasets ``Image``
column) and ``SuffixPerturbation`` (HEIM's art styles), and compares their instances with what helmflow's loaders
make of the same files (``tests.support.heim_fixtures.loader_views``). Prints one line per entry: the instance
count and whether they agree. ``--record PATH`` writes HELM's instances as JSON (tests/data/helm_heim_parity.json,
which tests/test_heim_helm_parity.py checks helmflow against). Run it in a throwaway environment with
crfm-helm 0.5.16 (``pip install --no-deps crfm-helm==0.5.16`` and the few modules its imports ask for), wget and
helmflow importable::

    cd /work/wt/<branch> && PYTHONPATH=. /tmp/helm-venv/bin/python benchmarks/helm_heim_parity.py \\
        --record tests/data/helm_heim_parity.json
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from random import Random

STYLES = ("oil painting", "watercolor", "pencil sketch", "animation", "vector graphics", "pixel art")


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _photo(instance, names: dict[str, str]) -> str:
    return names[_sha(instance.references[0].output.multimedia_content.media_objects[0].location)]


def helm_views(work: Path) -> dict[str, list]:
    """HELM's instances of each entry on the fixtures, in loader_views' shape."""
    import datasets
    from helm.benchmark.augmentations.suffix_perturbation import SuffixPerturbation
    from helm.benchmark.scenarios.image_generation import (
        cub200_scenario,
        detection_scenario,
        i2p_scenario,
        relational_understanding_scenario,
        winoground_scenario,
    )
    from helm.common import general

    from tests.support import heim_fixtures as fx
    from tests.support.lite_fixtures import serve

    root = fx.coco_sources(work / "src")
    names = fx.photo_names(root)
    views: dict[str, list] = {}
    i2p_csv = root / fx.I2P_PATH  # the Hub repository's one CSV, through the CSV builder load_dataset runs for it
    i2p_scenario.load_dataset = lambda *a, **k: datasets.load_dataset("csv", data_files=str(i2p_csv), split="train")
    for category in ("all", "hate", "harassment", "violence", "self-harm", "sexual", "shocking", "illegal"):
        helm = i2p_scenario.I2PScenario(category).get_instances(str(work / "helm"))
        views[f"i2p:category={category}"] = [i.input.text for i in helm]

    with serve(root) as host:
        real = general.ensure_file_downloaded

        def local(source_url: str, target_path: str, **kwargs):  # HELM's downloader, from the fixture server
            url = source_url.replace("https://", f"{host.url}/")
            return real(source_url=url, target_path=target_path, downloader_executable="wget", **kwargs)

        for module in (relational_understanding_scenario, detection_scenario, cub200_scenario):
            module.ensure_file_downloaded = local  # type: ignore[attr-defined]
        (work / "r").mkdir()
        helm = relational_understanding_scenario.RelationalUnderstandingScenario().get_instances(str(work / "r"))
        views["relational_understanding"] = [i.input.text for i in helm]
        for skill in ("object", "count", "spatial"):
            (work / f"d-{skill}").mkdir()
            helm = detection_scenario.DetectionScenario(skill).get_instances(str(work / f"d-{skill}"))
            views[f"detection:skill={skill}"] = [[i.input.text, [r.output.text for r in i.references], i.sub_split]
                                                 for i in helm]

        class TestList(list):  # HELM asserts the real list's 2,933 names; the fixture's list is its own
            def __len__(self) -> int:
                return 2_933

        (work / "cub").mkdir()
        read_pickle = cub200_scenario.pd.read_pickle
        cub200_scenario.pd.read_pickle = lambda path: TestList(read_pickle(path))
        helm = cub200_scenario.CUB200Scenario().get_instances(str(work / "cub"))
        cub200_scenario.pd.read_pickle = read_pickle
        views["cub200"] = [[i.input.text, _photo(i, names)] for i in helm]

    # Winoground: the loading script's rows, image_0 a decoded photo with its file name (what HELM copies)
    files = fx.winoground_files()
    zipfile.ZipFile(io.BytesIO(files["data/images.zip"])).extractall(work / "wino")
    rows = [json.loads(line) for line in files["data/examples.jsonl"].decode().splitlines()]
    table = datasets.Dataset.from_dict({"caption_0": [r["caption_0"] for r in rows],
                                        "image_0": [str(work / "wino" / "images" / f"{r['image_0']}.png")
                                                    for r in rows]}).cast_column("image_0", datasets.Image())
    winoground_scenario.load_dataset = lambda *a, **k: table
    (work / "w").mkdir()
    views["winoground"] = [[i.input.text, _photo(i, names)]
                           for i in winoground_scenario.WinogroundScenario().get_instances(str(work / "w"))]
    views["art styles"] = [SuffixPerturbation(s).perturb(fx.STYLED_CAPTION, Random(0)) for s in STYLES]
    return views


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", metavar="PATH", help="write HELM's instances to this JSON file")
    args = parser.parse_args()
    theirs = helm_views(Path(tempfile.mkdtemp(prefix="helm-heim-parity-helm-")))
    from tests.support.heim_fixtures import loader_views

    ours = loader_views(Path(tempfile.mkdtemp(prefix="helm-heim-parity-ours-")))
    differ = 0
    for name, helm in theirs.items():
        same = helm == ours.get(name)
        differ += not same
        print(f"{name:28} {len(helm):4} instances: {'equal' if same else 'DIFFER'}")
    print("all equal" if not differ else f"{differ} differ")
    if args.record:
        Path(args.record).write_text(json.dumps(theirs, indent=1, ensure_ascii=False) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
