"""Reference metrics on hand-checked edge cases (HELM's rules), through the registry as scoring calls them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helmflow.metrics import METRICS, MetricInput
from helmflow.metrics.reference import chosen_option, f1_score_value, normalize_text
from helmflow.records import AdapterSpec, Completion, GenerationParams, Input, Instance, Reference, Request, RequestBody
from helmflow.scoring import score_instances


def run(name: str, golds: list[str], outputs: list[str], mapping: dict[str, str] | None = None, num_outputs: int = 1,
        options: list[str] | None = None) -> dict[str, float]:
    refs = [Reference(text=o, correct=o in golds) for o in options] if options else [Reference(text=g, correct=True) for g in golds]
    instance = Instance(id="i", input=Input(text="q"), references=refs)
    body = RequestBody(model="m", prompt="q", max_tokens=5, temperature=0)
    requests = [Request(request_hash=str(k), instance_id="i", split="test", sample_index=k, body=body,
                        output_mapping=mapping or {}) for k in range(len(outputs))]
    completions = [Completion(request_hash=str(k), text=t) for k, t in enumerate(outputs)]
    spec = AdapterSpec(generation=GenerationParams(num_outputs=num_outputs))
    return METRICS.get(name).fn(MetricInput(instance, requests, completions, spec))


@pytest.mark.parametrize(
    "name, gold, output, expected",
    [
        ("exact_match", "Paris", " Paris\n", 1.0),        # whitespace around either side is ignored
        ("exact_match", "Paris", "paris", 0.0),
        ("exact_match", "Paris", "", 0.0),                # empty output never matches
        ("exact_match", "", "", 0.0),
        ("exact_match", "Zürich", "Zürich", 1.0),         # unicode compared as text
        ("quasi_exact_match", "The Eiffel Tower!", "eiffel   tower", 1.0),  # lower, punctuation, articles, spaces
        ("quasi_exact_match", "an apple", "Apple.", 1.0),
        ("quasi_exact_match", "Zürich", "ZÜRICH", 1.0),
        ("quasi_exact_match", "theatre", "atre", 0.0),    # articles only as whole words
        ("quasi_exact_match", "x", "   ", 0.0),
        ("prefix_exact_match", "Yes", "Yes, Elmendorf", 1.0),
        ("prefix_exact_match", "Yes", " Yes", 1.0),
        ("prefix_exact_match", "Yes", "No, yes", 0.0),
        ("prefix_exact_match", "Yes", "", 0.0),
        ("quasi_prefix_exact_match", "Yes", "yes! indeed", 1.0),
        ("f1_score", "the cat sat", "cat sat down", 0.8),  # sets {cat, sat} vs {cat, sat, down}: P 2/3, R 1
        ("f1_score", "a b", "a b", 1.0),
        ("f1_score", "cat", "", 0.0),
        ("f1_score", "the", "the", 0.0),                  # nothing left after normalization
        ("f1_score", "dog", "cat", 0.0),
        ("exact_match_indicator", " ) ]", "] ) ]", 1.0),  # HELM's Dyck metric: last word only
        ("exact_match_indicator", " ) ]", " ) }", 0.0),
        ("exact_match_indicator", " ]", "", 0.0),
    ],
)
def test_reference_metric_edge_cases(name, gold, output, expected):
    assert run(name, [gold], [output]) == pytest.approx({name: expected})


def test_best_gold_and_first_sample_vs_best_of_k():
    assert run("exact_match", ["a", "b"], ["b"]) == {"exact_match": 1.0}
    # with 2 samples per trial: the headline is the first sample, @k the best one
    assert run("exact_match", ["b"], ["a", "b"], num_outputs=2) == {"exact_match": 0.0, "exact_match@k": 1.0}
    # two trials of one sample: the mean over trials
    assert run("exact_match", ["b"], ["a", "b"], num_outputs=1) == {"exact_match": 0.5}


def test_output_mapping_scores_the_option_a_letter_names():
    mapping = {"A": "4", "B": "5"}
    assert run("exact_match", ["4"], [" A"], mapping) == {"exact_match": 1.0}
    assert run("exact_match", ["4"], ["B"], mapping) == {"exact_match": 0.0}
    assert run("exact_match", ["4"], ["4"], mapping) == {"exact_match": 0.0}  # the text itself is no letter
    assert run("exact_match", ["4"], ["Z"], mapping) == {"exact_match": 0.0}  # unknown letter: no prediction


@pytest.mark.parametrize(
    "output, expected",
    [("B", 1.0), (" B.", 1.0), ("(B)", 1.0), ("B) five", 1.0), ("B: five", 1.0), ("A", 0.0),
     ("", 0.0), ("I think so", 0.0), ("Both", 0.0), ("b", 0.0), ("E", 0.0)],
)
def test_multiple_choice_accuracy(output, expected):
    mapping = {"A": "4", "B": "5", "C": "6"}
    assert run("multiple_choice_accuracy", ["5"], [output], mapping, options=["4", "5", "6"]) == {"multiple_choice_accuracy": expected}


def test_multiple_choice_helpers():
    assert chosen_option("(C) six", {"C": "6"}) == "6"
    assert chosen_option("no letter here", {"A": "x"}) is None
    assert normalize_text("  The  Ünïcode, (a) TEST!  ") == "ünïcode test"
    assert f1_score_value("new york city", "New York") == pytest.approx(0.8)


def test_errored_instances_get_no_reference_score_but_efficiency():
    instance = Instance(id="i", input=Input(text="q"), references=[Reference(text="x", correct=True)])
    body = RequestBody(model="m", prompt="q", max_tokens=5, temperature=0)
    req = Request(request_hash="h", instance_id="i", split="test", body=body)
    failed = Completion(request_hash="h", error="PermanentError: boom")
    stats = score_instances([instance], [req], [failed], AdapterSpec(), ["exact_match", "efficiency"])
    names = {s.name for s in stats}
    assert "exact_match" not in names and {"error", "num_requests"} <= names


def test_efficiency_means_over_samples_and_sums_cost():
    instance = Instance(id="i", input=Input(text="q"), references=[Reference(text="x", correct=True)])
    body = RequestBody(model="m", prompt="q", max_tokens=5, temperature=0)
    requests = [Request(request_hash=str(k), instance_id="i", split="test", sample_index=k, body=body,
                        num_train_instances=n, prompt_truncated=k == 1) for k, n in enumerate([3, 1])]
    completions = [Completion(request_hash="0", text="a", latency_s=0.5, prompt_tokens=10, output_tokens=2, cost_usd=0.25),
                   Completion(request_hash="1", text="b", latency_s=1.5, prompt_tokens=6, output_tokens=4, cost_usd=0.5)]
    stats = METRICS.get("efficiency").fn(MetricInput(instance, requests, completions, AdapterSpec()))
    assert stats == pytest.approx({"num_requests": 2.0, "error": 0.0, "prompt_truncated": 1.0, "num_train_instances": 2.0,
                                   "latency_s": 1.0, "prompt_tokens": 8.0, "output_tokens": 3.0, "cost_usd": 0.75})
    failed = [completions[0], Completion(request_hash="1", error="TransientError: x")]
    stats = METRICS.get("efficiency").fn(MetricInput(instance, requests, failed, AdapterSpec()))
    assert stats["error"] == 1.0 and stats["latency_s"] == 0.5 and stats["cost_usd"] == 0.25


@pytest.mark.parametrize(
    "name, golds, output, expected",
    [
        # articles kept: "a cat" and "cat" differ; case, punctuation and spaces still normalised
        ("quasi_leave_articles_exact_match", ["A cat!"], "a  cat", 1.0),
        ("quasi_leave_articles_exact_match", ["a cat"], "cat", 0.0),
        ("quasi_leave_articles_exact_match", [""], "", 0.0),            # empty prediction never matches
        ("quasi_leave_articles_exact_match", ["dog", "The Cat."], "the cat", 1.0),  # best reference
        # sets: the last " is ", periods dropped, " and " between elements; "Nothing." is the empty set
        ("exact_set_match", ["The answer is x and y."], "So it is y and x.", 1.0),
        ("exact_set_match", ["The answer is x and y."], "it is x and y\nand z", 1.0),  # first line only
        ("exact_set_match", ["Nothing."], "Nothing.", 1.0),
        ("exact_set_match", ["Nothing."], "", 0.0),                     # "" is {""}, not the empty set
        ("exact_set_match", ["nothing"], "nothing.", 1.0),              # only "Nothing." exactly is empty
        ("iou_set_match", ["It is a and b and c."], "It is a and d.", 1 / 4),  # {a} / {a, b, c, d}
        ("iou_set_match", ["Nothing."], "It is a.", 0.0),
        ("iou_set_match", ["Nothing."], "Nothing.", 1.0),
        ("iou_set_match", ["It is a."], "", 0.0),
        ("f1_set_match", ["It is a and b and c."], "It is a and d.", 2 * 1 / (3 + 2)),
        ("f1_set_match", ["It is q.", "It is a and b."], "It is b.", 2 / 3),  # max over references
        ("f1_set_match", ["Nothing."], "Nothing.", 1.0),
        # |gold - pred| of integers with commas ignored; an unparsable side counts as 0
        ("absolute_value_difference", ["1,000"], "998", 2.0),
        ("absolute_value_difference", ["12"], "twelve", 12.0),
        ("absolute_value_difference", ["12"], "", 12.0),
        ("absolute_value_difference", ["3.5"], "5", 5.0),               # not an int: 0
        ("absolute_value_difference", ["10", "1"], "4", 6.0),           # HELM's max over references
    ],
)
def test_helm_set_and_number_metrics(name, golds, output, expected):
    assert run(name, golds, [output]) == pytest.approx({name: expected})


def test_new_reference_metrics_declare_their_helm_stat():
    for name in ("quasi_leave_articles_exact_match", "exact_set_match", "iou_set_match", "f1_set_match",
                 "absolute_value_difference", "rouge_1", "rouge_2"):
        assert METRICS.get(name).helm.stats == (name,)


# pairs with HELM 0.5.16's own value of each (its compute_reference_metrics: benchmarks/helm_metric_parity.py
# --reference, run in a throwaway venv with crfm-helm, writes the "helm" numbers)
HELM_REFERENCE = json.loads((Path(__file__).parent / "data" / "helm_reference_metrics.json").read_text())


@pytest.mark.parametrize("case", HELM_REFERENCE, ids=lambda c: f"{c['metric']}-{c['output']!r}-{len(c['golds'])}")
def test_classic_metrics_equal_helms_own_on_every_pair(case):
    assert run(case["metric"], case["golds"], [case["output"]]) == pytest.approx({case["metric"]: case["helm"]},
                                                                                 abs=1e-12)


def test_the_helm_pairs_cover_every_classic_metric_and_its_edge_cases():
    names = {"quasi_leave_articles_exact_match", "exact_set_match", "iou_set_match", "f1_set_match",
             "absolute_value_difference", "rouge_1", "rouge_2"}
    assert {c["metric"] for c in HELM_REFERENCE} == names and all("helm" in c for c in HELM_REFERENCE)
    for name in names:
        cases = [c for c in HELM_REFERENCE if c["metric"] == name]
        assert any(c["output"] == "" for c in cases), name  # empty prediction
        assert any(len(c["golds"]) > 1 for c in cases), name  # several references
