"""HELM's own HEIM scenarios against helmflow's, instance for instance, on the fixture files of the tests.

Runs crfm-helm 0.5.16's ``I2PScenario`` (its ``load_dataset`` pointed at the fixture CSV through datasets' own CSV
builder, as the Hub's one-file repository loads), ``RelationalUnderstandingScenario``, ``DetectionScenario`` and
``CUB200Scenario`` (their ``ensure_file_downloaded`` fetching the fixtures from a local server with wget, HELM's
own unpacking included), ``WinogroundScenario`` (its ``load_dataset`` given the fixture rows with the photos as a
datasets ``Image`` column) and ``SuffixPerturbation`` (HEIM's art styles), and helmflow's loaders on the same
files. Prints one line per scenario: the instance count and whether (input, references, sub_split) agree.
Run it in a throwaway environment with crfm-helm 0.5.16 (``pip install --no-deps crfm-helm==0.5.16`` and the few
modules its imports ask for), wget and helmflow importable::

    cd /work/wt/<branch> && PYTHONPATH=. /tmp/helm-venv/bin/python benchmarks/helm_heim_parity.py
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main() -> int:  # noqa: PLR0915 - one comparison after another
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

    from helmflow.media import MediaStore
    from helmflow.perturbations import PERTURBATIONS, SETS
    from helmflow.records import Input, Instance
    from helmflow.scenarios import get_scenario
    from helmflow.storage import Store
    from tests.support import heim_fixtures as fx
    from tests.support.lite_fixtures import serve

    work = Path(tempfile.mkdtemp(prefix="helm-heim-parity-"))
    root = fx.coco_sources(work / "src")
    store = MediaStore(Store(str(work / "store")))
    differ = 0

    def report(name: str, theirs: list, ours: list) -> None:
        nonlocal differ
        differ += theirs != ours
        print(f"{name:34} {len(theirs):4} instances: {'equal' if theirs == ours else 'DIFFER'}")
        if theirs != ours:
            print(f"  HELM: {theirs[:3]}\n  ours: {ours[:3]}")

    def ours(name: str, params: dict, files: dict[str, Path]) -> list:
        scen = get_scenario(name, params)
        scen.media = store
        return list(scen.load({k: str(v) for k, v in files.items()}))

    # I2P: the Hub repository's one CSV, through datasets' CSV builder (what load_dataset runs for it)
    i2p_csv = root / fx.I2P_PATH
    i2p_scenario.load_dataset = lambda *a, **k: datasets.load_dataset("csv", data_files=str(i2p_csv), split="train")
    for category in ("all", "hate", "harassment", "violence", "self-harm", "sexual", "shocking", "illegal"):
        theirs = [i.input.text for i in i2p_scenario.I2PScenario(category).get_instances(str(work / "helm"))]
        report(f"i2p:category={category}", theirs,
               [i.input.text for i in ours("i2p", {"category": category}, {"i2p_benchmark.csv": i2p_csv})])

    with serve(root) as host:
        real = general.ensure_file_downloaded

        def local(source_url: str, target_path: str, **kwargs):  # HELM's downloader, from the fixture server
            url = source_url.replace("https://", f"{host.url}/")
            return real(source_url=url, target_path=target_path, downloader_executable="wget", **kwargs)

        for module in (relational_understanding_scenario, detection_scenario, cub200_scenario):
            module.ensure_file_downloaded = local  # type: ignore[attr-defined]
        helm = relational_understanding_scenario.RelationalUnderstandingScenario().get_instances(str(work / "r"))
        report("relational_understanding", [i.input.text for i in helm],
               [i.input.text for i in ours("relational_understanding", {},
                                           {"choice_data.csv": root / fx.RELATIONAL_PATH})])
        for skill in ("object", "count", "spatial"):
            (work / f"d-{skill}").mkdir()
            helm = detection_scenario.DetectionScenario(skill).get_instances(str(work / f"d-{skill}"))
            report(f"detection:skill={skill}",
                   [(i.input.text, [r.output.text for r in i.references], i.sub_split) for i in helm],
                   [(i.input.text, [r.text for r in i.references], i.sub_split)
                    for i in ours("detection", {"skill": skill}, {"prompts.csv": root / fx.DETECTION_PATH})])
        (work / "cub").mkdir()

        class TestList(list):  # HELM asserts the real list's 2,933 names; the fixture's are its own
            def __len__(self) -> int:
                return 2_933

        read_pickle = cub200_scenario.pd.read_pickle
        cub200_scenario.pd.read_pickle = lambda path: TestList(read_pickle(path))
        helm = cub200_scenario.CUB200Scenario().get_instances(str(work / "cub"))
        cub200_scenario.pd.read_pickle = read_pickle
        report("cub200", [(i.input.text, _sha(i.references[0].output.multimedia_content.media_objects[0].location))
                          for i in helm],
               [(i.input.text, i.references[0].image.sha256)
                for i in ours("cub200", {}, {"CUB_200_2011.tgz": root / fx.CUB_IMAGES_PATH,
                                             "birds.zip": root / fx.CUB_CAPTIONS_PATH})])

    # Winoground: the loading script's rows, image_0 a decoded photo with its file name (what HELM copies)
    wino = work / "winoground"
    wino.mkdir()
    files = fx.winoground_files()
    import io
    import json
    import zipfile

    (wino / "examples.jsonl").write_bytes(files["data/examples.jsonl"])
    (wino / "images.zip").write_bytes(files["data/images.zip"])
    zipfile.ZipFile(io.BytesIO(files["data/images.zip"])).extractall(wino)
    rows = [json.loads(line) for line in files["data/examples.jsonl"].decode().splitlines()]
    table = datasets.Dataset.from_dict({"caption_0": [r["caption_0"] for r in rows],
                                        "image_0": [str(wino / "images" / f"{r['image_0']}.png") for r in rows]})
    table = table.cast_column("image_0", datasets.Image())
    winoground_scenario.load_dataset = lambda *a, **k: table
    (work / "w").mkdir()
    helm = winoground_scenario.WinogroundScenario().get_instances(str(work / "w"))
    report("winoground", [(i.input.text, _sha(i.references[0].output.multimedia_content.media_objects[0].location))
                          for i in helm],
           [(i.input.text, i.references[0].image.sha256)
            for i in ours("winoground", {}, {"examples.jsonl": wino / "examples.jsonl",
                                            "images.zip": wino / "images.zip"})])

    # HEIM's art styles: HELM's SuffixPerturbation with its six suffixes (run_expander.py's ``art``)
    from random import Random

    caption = "A red square on a grey wall."
    styles = ["oil painting", "watercolor", "pencil sketch", "animation", "vector graphics", "pixel art"]
    report("art styles (SuffixPerturbation)", [SuffixPerturbation(s).perturb(caption, Random(0)) for s in styles],
           [PERTURBATIONS.get(n).apply(Instance(id="id0", input=Input(text=caption))).input.text for n in SETS["art"]])
    print("all equal" if not differ else f"{differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
