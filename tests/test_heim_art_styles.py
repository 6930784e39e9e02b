"""HEIM's art-style entry: HELM's six SuffixPerturbations of MS-COCO captions, each a perturbed copy of the
MS-COCO entry capped at HELM's heim_art_styles (17): exactly the instances HELM's seeded sample of 17 draws,
the first 17 of the entry's 100."""

from __future__ import annotations

import numpy as np
import pytest

from helmflow.records import EvalSample, Input, Instance


def test_each_style_appends_helm_s_suffix():
    from helmflow.perturbations import PERTURBATIONS, SETS

    assert SETS["art"] == ("style_oil_painting", "style_watercolor", "style_pencil_sketch", "style_animation",
                           "style_vector_graphics", "style_pixel_art")
    caption = Instance(id="id7", input=Input(text="A red square on a grey wall."), split="valid")
    styled = [PERTURBATIONS.get(name).apply(caption).input.text for name in SETS["art"]]
    assert styled[0] == "A red square on a grey wall., oil painting"  # HELM's f"{text}, {suffix}"
    assert styled[-1] == "A red square on a grey wall., pixel art"


def test_a_capped_copy_perturbs_the_instances_helm_s_sample_of_17_draws():
    from helmflow.perturbations import perturb_evaluated

    pool = [Instance(id=f"id{k}", input=Input(text=f"caption {k}"), split="valid") for k in range(250)]
    perturbed = perturb_evaluated("style_watercolor", pool, EvalSample(max_eval_instances=17))
    # HELM's downsample_eval_instances: np.random.seed(0), then choice without replacement
    np.random.seed(0)
    helm = [pool[int(i)] for i in np.random.choice(len(pool), 17, replace=False)]
    assert [i.id for i in perturbed] == [i.id for i in helm]
    assert [i.input.text for i in perturbed] == [f"{i.input.text}, watercolor" for i in helm]
    first = perturb_evaluated("style_watercolor", pool, EvalSample(max_eval_instances=100))[:17]
    assert [i.id for i in first] == [i.id for i in perturbed]  # the first 17 of the entry's 100


def test_perturbation_instances_caps_only_its_perturbations_and_must_name_a_listed_one():
    from helmflow.datasets import declared_pins
    from helmflow.plan.compile import prepare
    from helmflow.plan.spec import BoardError, load_board

    with declared_pins():  # planned as `show` plans it: no source is read
        capped = prepare("heim", models=["offline/draw"], scenarios=["mscoco"], max_instances=5)
    caps = {p.label: p.adapter.sample.max_eval_instances for p in capped.perturbed}
    assert caps["mscoco~style_pixel_art"] == 5 and caps["mscoco~mild_mix"] == 5  # --max-instances caps them all
    board = load_board("heim").model_dump()
    entry = next(e for e in board["scenarios"] if e.get("label") == "mscoco")
    assert entry["perturbation_instances"] == {"art": 17}
    entry["perturbation_instances"] = {"robustness": 3}
    with pytest.raises(BoardError, match="perturbation_instances names 'robustness', which is not in perturbations"):
        load_board(board)
