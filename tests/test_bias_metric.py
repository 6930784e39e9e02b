"""HELM's demographic bias metrics on hand-checked texts: pooled counts, total-variation distance."""

from __future__ import annotations

import json
import math

import pytest

from helmflow.records import Stat
from helmflow.scoring import summarize

pytest.importorskip("punkt")
from helmflow.metrics.bias import (  # noqa: E402
    WORD_LISTS,
    group_counts_to_bias,
    instance_counts,
    stat_name,
)

GENDER_REP = stat_name("gender")
GENDER_PROF = stat_name("gender", "profession")


def _summaries(instances: list[list[str]]) -> dict[str, tuple[float, float, float]]:
    stats = [Stat(instance_id=f"i{k}", split="test", name=n, value=v)
             for k, texts in enumerate(instances) for n, v in instance_counts(texts).items()]
    return {s.name: (s.mean, s.ci_low, s.ci_high) for s in summarize(stats)}


def test_total_variation_distance_from_uniform():
    assert group_counts_to_bias([2, 0], [20, 20]) == 0.5  # all one group: the maximum, 1 - 1/G
    assert group_counts_to_bias([3, 3], [20, 20]) == 0.0
    # counts are divided by list lengths first (Hispanic has 16 names, the others 20)
    assert math.isclose(group_counts_to_bias([20, 16, 20], [20, 16, 20]), 0.0, abs_tol=1e-12)
    assert group_counts_to_bias([0, 0], [20, 20]) is None


def test_representation_pools_every_completion():
    """female: she x2; male: he x1 -> p = (2/3, 1/3) -> TVD 1/6."""
    out = _summaries([["She is a doctor.", "He is a nurse."], ["She smiled."]])
    mean, low, high = out[GENDER_REP]
    assert math.isclose(mean, 1 / 6)
    assert 0 <= low <= mean <= high <= 0.5


def test_associations_are_the_mean_over_target_words():
    """nurse: female 1x1, male 2x1 -> p = (1/3, 2/3) -> 1/6; lawyer: male 2x1 only -> 1/2; mean 1/3.
    Co-occurrence is within one text: the female word of text 1 does not meet text 2's lawyer."""
    out = _summaries([["she is a nurse"], ["he is a nurse and he is a lawyer"]])
    assert math.isclose(out[GENDER_PROF][0], (1 / 6 + 1 / 2) / 2)
    # race: no surname anywhere -> undefined, so no number at all (never a 0)
    assert stat_name("race") not in out and stat_name("race", "profession") not in out
    # the sparse counts stay out of the summaries
    assert not [n for n in out if n.startswith("bias_count:")]


def test_race_uses_garg_surnames_and_tokenizes_like_nltk():
    lists = json.loads(WORD_LISTS.read_text())
    assert {g: len(w) for g, w in lists["race"].items()} == {"asian": 20, "hispanic": 16, "white": 20}
    assert len(lists["adjective"]) == 422 and len(lists["profession"]) == 288
    counts = instance_counts(["Wong's friend met Mr. Wong, and Garcia."])  # "wong" "'s" ... -> wong x2
    assert counts["bias_count:race:asian"] == 2 and counts["bias_count:race:hispanic"] == 1
    assert counts["bias_count:texts"] == 1
    assert instance_counts(["", ""]) == {"bias_count:texts": 0}  # empty outputs are not texts


def test_a_board_with_bias_scores_its_generation_scenarios_and_groups_the_columns(tmp_path):
    from helmflow.aggregate import publish_release
    from helmflow.clients import load_deployments
    from helmflow.pipeline import adapt_scenario, download_scenario, publish_run, query_pair, score_pair
    from helmflow.plan.compile import plan_board
    from helmflow.plan.spec import load_board
    from helmflow.storage import Store

    spec = {"name": "b", "version": "1", "models": ["offline/echo"], "bias": True, "max_instances": 5, "scenarios": [
        {"name": "arithmetic", "label": "gen"},
        {"name": "arithmetic", "params": {"choices": 4}, "label": "mc"}]}
    plan = plan_board(load_board(spec), load_deployments())
    metrics = {s.label: s.metrics for s in plan.scenarios}
    assert "bias" in metrics["gen"] and "bias" not in metrics["mc"]  # multiple choice answers letters
    [group] = [g for g in plan.spec.metric_groups if g.name == "bias"]
    assert [c.metric for c in group.columns] == [stat_name("race", "profession"), stat_name("gender", "profession"),
                                                 stat_name("race"), stat_name("gender")]
    assert all(c.lower_is_better and c.description for c in group.columns)
    store = Store(str(tmp_path / "s"))
    runs = []
    for r in plan.runs:
        data = download_scenario(store, r.scenario)
        q = query_pair(store, r, adapt_scenario(store, r.scenario, data))
        runs.append(publish_run(store, r, q, score_pair(store, r, data, q)))
    release = publish_release(store, plan, runs, [])
    # echoed arithmetic has no demographic word: every bias cell is missing (undefined), never 0
    assert all(release.table[0][f"gen/{c.metric}"] is None for c in group.columns)
