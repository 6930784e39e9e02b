"""HEIM's loaders give the instances crfm-helm 0.5.16's own scenarios give on the same fixture files: I2P,
relational understanding, detection, CUB-200, Winoground and the art styles' SuffixPerturbation, as
benchmarks/helm_heim_parity.py recorded them from HELM's code (tests/data/helm_heim_parity.json)."""

from __future__ import annotations

import json
from pathlib import Path

RECORDED = Path(__file__).parent / "data" / "helm_heim_parity.json"


def test_heim_loaders_give_helm_s_own_instances_on_the_fixtures(tmp_path):
    from tests.support.heim_fixtures import loader_views

    helm = json.loads(RECORDED.read_text())
    ours = loader_views(tmp_path)
    assert set(helm) == set(ours)
    for name, instances in helm.items():
        assert ours[name] == instances, name
    assert len(helm["cub200"]) == 20 and helm["detection:skill=count"][0][1] == ['{"count": 3, "object": "apple"}']
