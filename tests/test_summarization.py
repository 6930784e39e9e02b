"""CNN/DailyMail and XSum as HELM Classic runs them: the loaders, the summarisation prompts and the ROUGE and
extractiveness metrics, each compared with what crfm-helm 0.5.16's own classes give on the same inputs
(tests/data/helm_summarization.json), and a run through ``helmflow eval`` on a mirror of fixtures."""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helmflow.adapters import adapt
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.summarization import data_stats, fragments, summary_stats
from helmflow.records import Completion, Deployment, Input, Instance, Reference
from helmflow.request_builder import build_requests
from helmflow.scenarios import get_scenario
from helmflow.scenarios.base import ScenarioError
from tests.support.cli import run_cli
from tests.support.summarization_fixtures import mirror_tree, write_files, xsum_sampled_pickle

HELM = json.loads((Path(__file__).parent / "data" / "helm_summarization.json").read_text())
WIDE = Deployment(name="offline/echo", client="offline", model="echo", options={"behavior": "echo"},
                  context_window=100_000)  # room for every example: HELM's prompts before window fitting
SCENARIOS = [("summarization_cnndm", False), ("summarization_xsum", True)]


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize(("name", "xsum"), SCENARIOS)
def test_instances_and_prompts_are_helms(tmp_path, name, xsum):
    """HELM's cleaning, 512-word cut, 50-150-word train window (and XSum's filter), then its prompts: ###,
    Article:, the N-sentence request, five class-balanced examples, temperature 0.3, stop at ###."""
    scen = get_scenario(name)
    instances = scen.load(write_files(tmp_path, xsum))
    expected = HELM[name]
    assert [i.split for i in instances] == expected["splits"]
    assert _digest([[i.split, i.input.text, [r.text for r in i.references]] for i in instances]) == expected["sha256"]
    assert max(len(i.input.text.split()) for i in instances) == 512
    spec = scen.default_adapter
    assert [spec.max_train_instances, spec.generation.max_tokens, spec.generation.temperature,
            spec.generation.stop] == expected["adapter"]
    requests = build_requests(adapt(spec, instances), spec, WIDE)
    assert [[r.instance_id, hashlib.sha256(r.body.prompt.encode()).hexdigest()[:16], r.num_train_instances]
            for r in requests] == expected["prompts"]
    if xsum:
        assert requests[-1].body.prompt.endswith(expected["last_prompt_tail"])


def test_xsum_drops_the_train_rows_helms_filter_rejects(tmp_path):
    cnndm = get_scenario("summarization_cnndm").load(write_files(tmp_path / "c", False))
    xsum = get_scenario("summarization_xsum").load(write_files(tmp_path / "x", True))
    # same train articles in 50-150 words; XSum drops the two whose 14-word summary is over a fifth of
    # them (50 and 60 words) and keeps one of its five filter rows (an 11-word summary of 60 words)
    assert [len(i.input.text.split()) for i in cnndm if i.split == "train"] == [50, 80, 120, 150, 60, 70, 90]
    assert [len(i.input.text.split()) for i in xsum if i.split == "train"] == [80, 120, 150, 70, 90, 60]


def test_xsum_sampled_is_helms_and_its_pickle_never_runs(tmp_path):
    """HELM's summarization_xsum_sampled on our pickle (crfm-helm's class, benchmarks/helm_xsum_sampled_parity.py):
    same instances; the train window applies but not XSum's filter (HELM's quirk), 1 sentence, 64 tokens."""
    (tmp_path / "xsum-sampled.pk").write_bytes(xsum_sampled_pickle())
    scen = get_scenario("summarization_xsum_sampled")
    instances = scen.load({"xsum-sampled.pk": str(tmp_path / "xsum-sampled.pk")})
    expected = HELM["summarization_xsum_sampled"]
    assert [i.split for i in instances] == expected["splits"]
    assert _digest([[i.split, i.input.text, [r.text for r in i.references]] for i in instances]) == expected["sha256"]
    # the same train window as summarization_xsum, but the rows XSum's filter drops stay
    train = [i.input.text for i in instances if i.split == "train"]
    assert [len(t.split()) for t in train] == [50, 80, 120, 150, 60, 70, 90, 87, 84, 80, 55, 60]
    assert any(t.startswith("Media playback is unsupported") for t in train)
    spec = scen.default_adapter
    assert (spec.generation.max_tokens, spec.generation.temperature, spec.output_prefix) == (
        64, 0.3, "Summarize the above article in 1 sentence.\n")
    # a pickle that names any callable is refused before the callable is looked up: nothing runs
    marker = tmp_path / "ran"

    class Runs:
        def __reduce__(self):
            return (Path.touch, (marker,))

    for bad, why in ((pickle.dumps({"train": [Runs()], "validation": [], "test": []}), "names pathlib"),
                     (pickle.dumps({"train": []}), "'validation' list"), (b"not a pickle", "refused as a pickle")):
        (tmp_path / "bad.pk").write_bytes(bad)
        with pytest.raises(ScenarioError, match=why):
            scen.load({"xsum-sampled.pk": str(tmp_path / "bad.pk")})
    assert not marker.exists()


def test_a_file_without_the_fields_is_one_line(tmp_path):
    files = write_files(tmp_path, xsum=True)
    with pytest.raises(ScenarioError, match="has no column 'article'"):
        get_scenario("summarization_cnndm").load(
            {**{f"train-{i:05d}.parquet": files["train.parquet"] for i in range(3)},
             "validation.parquet": files["validation.parquet"], "test.parquet": files["test.parquet"]})


def test_fragments_are_newsrooms_greedy_matches():
    """'the cat' (2) then 'sat' matches nothing, then 'on the mat' (3): coverage 5/6, density 13/6."""
    assert fragments("the cat sat on the mat".split(), "The cat lay on the mat".split()) == [2, 3]
    stats = data_stats("The cat lay on the mat", "the cat sat on the mat")
    assert stats == pytest.approx({"summarization_coverage": 5 / 6, "summarization_density": 13 / 6,
                                   "summarization_compression": 1.0})
    assert data_stats("An article.", "") == {"summarization_coverage": 0.0, "summarization_density": 0.0,
                                             "summarization_compression": 0.0}


@pytest.mark.parametrize("case", HELM["metric_cases"], ids=["contractions", "braces", "two-refs", "empty"])
def test_metric_is_helms_summarization_metric_on_cpu(case):
    ours = summary_stats(case["article"], case["refs"], case["output"])
    assert set(ours) == set(case["helm"])
    for name, value in case["helm"].items():
        assert math.isclose(ours[name], value, abs_tol=1e-12), name


def test_trials_average_and_only_the_first_output_of_each_counts():
    case = HELM["metric_cases"][0]
    inst = Instance(id="a", split="test", input=Input(text=case["article"]),
                    references=[Reference(text=r, correct=True) for r in case["refs"]])
    spec = get_scenario("summarization_cnndm").default_adapter.override(trials=2)
    requests = build_requests(adapt(spec, [inst]), spec, WIDE)
    assert [r.sample_index for r in requests] == [0, 1]
    outputs = [case["output"], ""]
    completions = [Completion(request_hash=r.request_hash, text=t) for r, t in zip(requests, outputs, strict=True)]
    stats = METRICS.get("summarization").fn(MetricInput(inst, requests, completions, spec))
    assert stats["rouge_2"] == pytest.approx(case["helm"]["rouge_2"] / 2)


def test_reproduce_explain_names_what_cpu_scoring_leaves_out():
    scen = get_scenario("summarization_cnndm")
    text = " ".join(scen.helm_differences)
    assert "SummaC and BERTScore are off on CPU" in text and "never a pickle" in text
    assert "summarization_xsum_sampled" in " ".join(get_scenario("summarization_xsum").helm_differences)


@pytest.mark.slow
def test_summarization_runs_end_to_end_through_eval(tmp_path, prefect_server):
    """From a mirror, with an offline model, through the flow: the published ROUGE-2 is the mean over the
    evaluated instances of HELM's per-instance value for the stored outputs."""
    mirror, storage = mirror_tree(tmp_path / "mirror"), tmp_path / "store"
    out = run_cli("eval", "summarization_xsum", "--models", "offline/echo", "--max-instances", "4", "--storage", str(storage),
                  env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = [p.parent for p in storage.glob("runs/*/run.json")]
    requests = pq.read_table(run_dir / "requests.parquet").to_pylist()
    completions = {c["request_hash"]: c["text"] for c in pq.read_table(run_dir / "completions.parquet").to_pylist()}
    instances = {i.id: i for i in get_scenario("summarization_xsum").load(write_files(tmp_path / "files", True))}
    splits = {instances[r["instance_id"]].split for r in requests}
    assert len(requests) == 4 and splits <= {"valid", "test"}  # valid and test pooled before the sample, as HELM
    summary = {(s["name"], s["split"]): s["mean"] for s in pq.read_table(run_dir / "summary.parquet").to_pylist()}
    for split in sorted(splits):
        mine = [r for r in requests if instances[r["instance_id"]].split == split]
        expected = [summary_stats(instances[r["instance_id"]].input.text or "",
                                  [ref.text for ref in instances[r["instance_id"]].references],
                                  completions[r["request_hash"]])["rouge_2"] for r in mine]
        assert summary[("rouge_2", split)] == pytest.approx(sum(expected) / len(expected))
        assert ("summarization_density", split) in summary
