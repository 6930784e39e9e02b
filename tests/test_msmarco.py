"""MS MARCO as HELM Classic runs it: the loader, the ranking_binary adapter and the ranking measures, each
compared with what crfm-helm 0.5.16's own classes give on the same inputs (tests/data/helm_msmarco.json), and
the scenario end to end through ``helmflow eval`` on mirrored fixtures against an offline model."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helmflow.adapters import adapt
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.ranking import from_helm, to_helm
from helmflow.records import Completion, Deployment, Input, Instance, Reference
from helmflow.request_builder import build_requests
from helmflow.scenarios import get_scenario
from helmflow.scenarios.base import ScenarioError
from tests.support.cli import run_cli
from tests.support.lite_fixtures import serve
from tests.support.msmarco_fixtures import msmarco_files, source_tree, write_files

HELM = json.loads((Path(__file__).parent / "data" / "helm_msmarco.json").read_text())
YES = Deployment(name="offline/yes", client="offline", model="yes", options={"behavior": "constant", "answer": "Yes"})


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def _as_helm(inst: Instance) -> list:
    """An instance as HELM's: [split, query, [[passage, tags]]], the tags (docid, correct, relevance, rank) being
    what the ranking metric writes for HELM (``to_helm``)."""
    tags = to_helm(inst)["tags"]
    return [inst.split, inst.input.text, [[ref.text, t] for ref, t in zip(inst.references, tags, strict=True)]]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    return write_files(tmp_path_factory.mktemp("msmarco"))


@pytest.mark.parametrize(("params", "key"), [({"track": "regular"}, "regular"),
                                             ({"track": "regular", "valid_topk": 11}, "regular,11"),
                                             ({"track": "trec", "valid_topk": 30}, "trec,30")])
def test_instances_are_helms(files, params, key):
    """HELM's Random(1885) shuffles, query filters, train pairs and valid reference sets, reference for reference."""
    instances = get_scenario("msmarco", params).load(files)
    ours = [_as_helm(i) for i in instances]
    expected = HELM["instances"][key]
    assert (ours == expected) if isinstance(expected, list) else (_digest(ours) == expected)
    # and back: HELM's tags give the judgements the metric reads (import-helm)
    for inst, (_, _, refs) in zip(instances, ours, strict=True):
        back = from_helm({"references": [{"tags": tags} for _, tags in refs]})
        # a judgement of 0 has no tag in HELM (it is read as unjudged, the same to trec_eval)
        assert (back["relevance"], back["rank"], back["docids"]) == (
            [r or None for r in inst.extra["relevance"]], inst.extra["rank"], inst.extra["docids"])
        assert back["graded_relevance"] == (params["track"] == "trec" and max(r or 0 for r in back["relevance"]) > 1)


def test_tracks_differ_in_main_metric_and_judgements(files):
    trec = get_scenario("msmarco", {"track": "trec", "valid_topk": 30})
    assert (trec.main_metric, get_scenario("msmarco", {}).main_metric) == ("NDCG@10", "RR@10")
    valid = [i for i in trec.load(files) if i.split == "valid"]
    assert len(valid) == 4  # the query judged only 0 and 1 has no gold passage: HELM drops it
    assert all(i.extra["graded_relevance"] and i.extra["topk"] == 30 for i in valid)
    assert all(r.correct == (rel in (2, 3)) for i in valid for r, rel in zip(i.references, i.extra["relevance"]))


def test_bad_parameters_and_rows_are_one_line(files, tmp_path):
    with pytest.raises(ScenarioError, match="valid_topk must be between 11 and 1000"):
        get_scenario("msmarco", {"valid_topk": 5})
    broken = dict(files, **write_files(tmp_path, {"regular_qrels.tsv": b"500\t0\tx\t1\n"}))
    with pytest.raises(ScenarioError, match=r"regular_qrels.tsv: 'x' is not an integer id"):
        get_scenario("msmarco", {}).load(broken)


def test_ranking_binary_prompts_are_helms(files):
    """One request per (query, passage) with two train queries' four answered blocks first, as HELM sends them."""
    scen = get_scenario("msmarco", {"track": "regular", "valid_topk": 11})
    spec = scen.default_adapter
    requests = build_requests(adapt(spec, scen.load(files)), spec, YES)
    assert [spec.max_train_instances, spec.generation.max_tokens, spec.generation.stop,
            spec.generation.temperature] == HELM["prompts"]["spec"]
    ours = [[r.instance_id, r.reference_index, hashlib.sha256(r.body.prompt.encode()).hexdigest()[:16]]
            for r in requests]
    assert ours == HELM["prompts"]["requests"]
    assert requests[0].body.prompt == HELM["prompts"]["first"]
    assert HELM["prompts"]["first"].count("Answer: Yes") == 2 and HELM["prompts"]["first"].endswith("Answer:")
    assert all(r.body.logprobs and r.body.max_tokens == 5 for r in requests)  # the logprobs order the passages


@pytest.mark.parametrize("case", HELM["ranking_cases"], ids=["binary", "binary-topk", "graded-topk"])
def test_ranking_measures_are_helms(case):
    """Per query, HELM's order (Yes by logprob, No by reverse logprob, other answers last) scored by trec_eval."""
    pytest.importorskip("pytrec_eval")
    n = len(case["outputs"])
    inst = Instance(id="q", split="valid", input=Input(text="q"),
                    references=[Reference(text=f"p{i}", correct=bool(r)) for i, r in enumerate(case["relevance"])],
                    extra={"relevance": case["relevance"], "rank": case["rank"], "graded_relevance": case["graded"],
                           "topk": case["topk"]})
    spec = get_scenario("msmarco", {}).default_adapter
    requests = build_requests(adapt(spec, [inst]), spec, YES)
    assert [r.reference_index for r in requests] == list(range(n))
    completions = [Completion(request_hash=r.request_hash, text=text, logprobs=lps, tokens=["t"] * len(lps))
                   for r, (text, lps) in zip(requests, case["outputs"], strict=True)]
    stats = METRICS.get("ranking").fn(MetricInput(inst, requests, completions, spec))
    assert set(stats) == set(case["helm"])
    for name, value in case["helm"].items():
        assert math.isclose(stats[name], value, abs_tol=1e-12), name


def test_hand_worked_reciprocal_rank():
    """Yes(-0.3) > Yes(-0.7) > No > Maybe: the relevant passage (the -0.7 Yes) is second, so RR@10 is 1/2."""
    case = HELM["ranking_cases"][0]
    assert case["relevance"] == [None, 1, None, None] and case["helm"]["RR@10"] == 0.5
    assert case["helm"]["Success@1"] == 0.0 and case["helm"]["Success@2"] == 1.0


@pytest.mark.slow
def test_msmarco_runs_end_to_end_through_eval(tmp_path, prefect_server):
    """Mirrored from upstream URLs (served locally), run with an offline model through the flow: every passage
    is asked about, and the published RR@10 is the mean of the measures the stored completions give."""
    pytest.importorskip("pytrec_eval")
    from helmflow.metrics.ranking import ranking_stats

    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    spec = "msmarco:track=regular,valid_topk=11"
    with serve(source_tree(tmp_path / "src", msmarco_files())) as host:
        out = run_cli("mirror", spec, "--to", str(mirror), env={"HELMFLOW_SOURCE_HOST": host.url})
    assert out.returncode == 0, out.stdout + out.stderr
    out = run_cli("eval", spec, "--models", "offline/echo", "--max-instances", "3", "--storage", str(storage),
                  env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    (run_dir,) = [p.parent for p in storage.glob("runs/*/run.json")]
    requests = pq.read_table(run_dir / "requests.parquet").to_pylist()
    completions = {c["request_hash"]: c for c in pq.read_table(run_dir / "completions.parquet").to_pylist()}
    instances = {i.id: i for i in get_scenario("msmarco", {"track": "regular", "valid_topk": 11}).load(
        write_files(tmp_path / "files", msmarco_files()))}
    by_instance: dict[str, list] = {}
    for r in requests:
        c = completions[r["request_hash"]]
        by_instance.setdefault(r["instance_id"], []).append((r["reference_index"], c["text"], sum(c["logprobs"])))
    assert sum(len(v) for v in by_instance.values()) == sum(len(instances[i].references) for i in by_instance)
    expected = []
    for iid, rows in by_instance.items():
        inst = instances[iid]
        outputs = [(text, lp) for _, text, lp in sorted(rows)]
        expected.append(ranking_stats(outputs, inst.extra["relevance"], inst.extra["rank"], False, 11)["RR@10"])
    summary = {(s["name"], s["split"]): s for s in pq.read_table(run_dir / "summary.parquet").to_pylist()}
    assert summary[("RR@10", "valid")]["mean"] == pytest.approx(sum(expected) / len(expected))


@pytest.mark.slow
def test_a_helm_msmarco_run_imports_and_its_measures_reproduce(tmp_path):
    """A HELM ranking_binary run (one TREC query, the graded case above): its seven request states import as one
    generation per passage, the judgements come from HELM's reference tags, and RR@10 and NDCG@10 recompute to
    crfm-helm 0.5.16's values."""
    pytest.importorskip("pytrec_eval")
    from tests.support.helm_fixtures import GPT, _per_instance, instance, request_state, run_stat, write_run

    case = HELM["ranking_cases"][2]
    refs = [(f"toy passage {i}", [f"docid={100 + i}", *(["correct"] if rel in (2, 3) else []),
                                  *([f"relevance={rel}"] if rel else []), *([f"rank={k}"] if k else [])])
            for i, (rel, k) in enumerate(zip(case["relevance"], case["rank"], strict=True))]
    inst = dict(instance("m1", "toy query", refs), split="valid")
    helm = {name: case["helm"][name] for name in ("RR@10", "NDCG@10")}
    stats = [run_stat(name, [value], split="valid") for name, value in helm.items()]
    suite = tmp_path / "benchmark_output" / "runs" / "toy"
    folder = write_run(suite, f"msmarco:track=trec,model={GPT}", "ranking_binary", GPT, [(inst, "", None)], stats,
                       {"m1": [s | {"name": {**s["name"], "split": "valid"}} for s in _per_instance({"m1": helm})["m1"]]})
    states = []
    for index, (text, lps) in enumerate(case["outputs"]):
        state = request_state(inst, f"Passage: toy passage {index}\nQuery: toy query\nAnswer:", text, GPT)
        state["result"]["completions"] = [{"text": text, "logprob": sum(lps), "finish_reason": {"reason": "stop"},
                                           "tokens": [{"text": "t", "logprob": lp} for lp in lps]}]
        state.update(reference_index=index, request_mode="original")
        states.append(state)
    state_file = folder / "scenario_state.json"
    state_file.write_text(json.dumps({**json.loads(state_file.read_text()), "request_states": states}))
    for source, store in ((suite, tmp_path / "s"), (tmp_path / "helm-out", tmp_path / "back")):
        out = run_cli("import-helm", str(source), "-v", "--storage", str(store), "--board", "helm-msmarco")
        assert out.returncode == 0, out.stdout + out.stderr
        text = " ".join((out.stdout + out.stderr).split())
        assert "MATCH RR@10 [valid]" in text and "MATCH NDCG@10 [valid]" in text and "MISMATCH" not in text, text
        [run_dir] = (store / "runs").iterdir()
        requests = pq.read_table(run_dir / "requests.parquet").to_pylist()
        assert [r["reference_index"] for r in requests] == list(range(7)) and not any(r["continuation"] for r in requests)
        if source == suite:  # and out again in HELM's shape: one request state per passage, imported back alike
            out = run_cli("export", "helm-msmarco", "--format", "helm", "--to", str(tmp_path / "helm-out"),
                          "--storage", str(store))
            assert out.returncode == 0, out.stdout + out.stderr
