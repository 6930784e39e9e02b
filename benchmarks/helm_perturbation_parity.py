"""HELM's own perturbed texts for our fixture instances: the expected outputs of the parity test.

Runs HELM 0.5.16's perturbation classes (not ours) on ``tests/data/perturbation_fixture.jsonl`` (texts
written for this project) and writes ``tests/data/perturbation_parity.jsonl``, which
``tests/test_perturbations.py`` compares against helmflow's ports, text for text. Run it once in a
throwaway environment that has HELM, never in helmflow's own::

    python -m venv /work/venvs/helm-ref
    /work/venvs/helm-ref/bin/pip install --no-deps crfm-helm==0.5.16
    /work/venvs/helm-ref/bin/pip install filelock zstandard tqdm pyhocon pyyaml colorlog dacite numpy \
        sqlitedict retrying mako cattrs requests   # what its perturbation modules import
    cd /tmp && /work/venvs/helm-ref/bin/python /work/wt/<branch>/benchmarks/helm_perturbation_parity.py

HELM downloads two data files at run time (the SAE->AAVE mapping and ``person_names.txt``); HELM's
constructors take a path instead, so the dialect check uses our small fixture mapping
(``tests/data/dialect_fixture_mapping.json``, made up for the test) and the name check helmflow's
shipped ``person_names.txt``: the algorithms are compared, with the same data on both sides.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helm.benchmark.augmentations.contraction_expansion_perturbation import (
    ContractionPerturbation,
    ExpansionPerturbation,
)
from helm.benchmark.augmentations.dialect_perturbation import DialectPerturbation
from helm.benchmark.augmentations.extra_space_perturbation import ExtraSpacePerturbation
from helm.benchmark.augmentations.filler_words_perturbation import FillerWordsPerturbation
from helm.benchmark.augmentations.gender_perturbation import GenderPerturbation
from helm.benchmark.augmentations.lowercase_perturbation import LowerCasePerturbation
from helm.benchmark.augmentations.mild_mix_perturbation import MildMixPerturbation
from helm.benchmark.augmentations.misspelling_perturbation import MisspellingPerturbation
from helm.benchmark.augmentations.person_name_perturbation import PersonNamePerturbation
from helm.benchmark.augmentations.space_perturbation import SpacePerturbation
from helm.benchmark.augmentations.typos_perturbation import TyposPerturbation
from helm.benchmark.scenarios.scenario import CORRECT_TAG, Input, Instance, Output, Reference

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"

# helmflow's perturbation name -> HELM's class with the parameters helmflow registers it with.
# ``misspellings_half`` and ``typos_half`` check the rate at a probability where both outcomes are frequent.
HELM = {
    "lowercase": LowerCasePerturbation(),
    "contraction": ContractionPerturbation(),
    "expansion": ExpansionPerturbation(),
    "misspellings": MisspellingPerturbation(prob=0.1),
    "misspellings_half": MisspellingPerturbation(prob=0.5),
    "space": SpacePerturbation(max_spaces=3),
    "extra_space": ExtraSpacePerturbation(num_spaces=2),
    "typos": TyposPerturbation(prob=0.1),
    "typos_half": TyposPerturbation(prob=0.5),
    "filler_words": FillerWordsPerturbation(insert_prob=0.1, speaker_ph=False),
    "mild_mix": MildMixPerturbation(),
    "dialect_fixture": DialectPerturbation(prob=1.0, source_class="SAE", target_class="AAVE",
                                           mapping_file_path=str(DATA / "dialect_fixture_mapping.json")),
    "dialect_fixture_half": DialectPerturbation(prob=0.5, source_class="SAE", target_class="AAVE",
                                                mapping_file_path=str(DATA / "dialect_fixture_mapping.json")),
    "gender": GenderPerturbation(mode="pronouns", prob=1.0, source_class="male", target_class="female"),
    "gender_terms": GenderPerturbation(mode="terms", prob=1.0, source_class="male", target_class="female"),
    "person_name": PersonNamePerturbation(
        prob=1.0, source_class={"race": "white_american"}, target_class={"race": "black_american"},
        name_file_path=str(REPO / "helmflow" / "perturbations" / "data" / "person_names.txt"),
        person_name_type="first_name", preserve_gender=True),
}


def main() -> None:
    rows = [json.loads(line) for line in (DATA / "perturbation_fixture.jsonl").read_text().splitlines()]
    out = []
    for name, perturbation in HELM.items():
        for row in rows:
            inst = Instance(input=Input(text=row["input"]), id=row["id"], references=[
                Reference(Output(text=r["text"]), tags=[CORRECT_TAG] if r["correct"] else []) for r in row["references"]])
            done = perturbation.apply(inst)
            out.append({"perturbation": name, "id": row["id"], "input": done.input.text,
                        "references": [r.output.text for r in done.references]})
    target = DATA / "perturbation_parity.jsonl"
    target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
    print(f"wrote {len(out)} rows to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
