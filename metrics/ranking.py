"""HELM's ranking measures (``ranking_metrics.py::RankingMetric``) over the ``ranking_binary`` adapter's answers.

Per instance (a query) HELM orders its references (documents) by the model's answer to "does the document answer
the query?": ``Yes`` first, by decreasing logprob of the completion (the sum of its tokens' logprobs), then
``No`` by increasing logprob, then any other answer, by increasing logprob (answers compared stripped and
lower-cased; equal keys keep the reference order). The document ranked ``i`` (from 0) of ``n`` gets run score
``n - i``, and trec_eval (through ``pytrec_eval``, the library HELM calls) scores the run against the
instance's relevance judgements: the references' ``relevance`` values (absent and 0 are unjudged).

The measures are HELM's for MS MARCO: ``Success@k`` and ``Recall@k`` for k in 1, 2, 3, 5, 10, 20, ``RR@k``
(trec_eval's reciprocal rank of the run cut to its top k) for k in 5, 10, 20, and, for graded judgements
(TREC's 0-3), ``NDCG@k`` for k in 5, 10, 20. With graded judgements the binary measures (success, recall, RR)
read HELM's ``binarize_dict``: a relevance of 1 counts as not relevant. With ``topk`` the same measures are
also reported over the references in the retriever's top ``topk`` only, named ``<measure> (topk=<topk>)``.

What the metric reads from the instance's ``extra`` (the scenario writes it): ``relevance`` and ``rank``, one
value (or None) per reference, ``graded_relevance`` (bool) and ``topk`` (int or None). HELM's per-reference
``ref<i>_rank`` stats are not emitted.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.first_use import first_use
from helmflow.records import Instance

CORRECT_OUTPUT, WRONG_OUTPUT = "Yes", "No"
BINARY_KS, CUT_KS = (1, 2, 3, 5, 10, 20), (5, 10, 20)


def measures(graded: bool) -> list[str]:
    """HELM's MS MARCO ``MEASURE_NAMES``: the TREC track (graded judgements) adds NDCG."""
    names = ([f"success.{k}" for k in BINARY_KS] + [f"recall.{k}" for k in BINARY_KS]
             + [f"recip_rank.{k}" for k in CUT_KS])
    return names + ([f"ndcg_cut.{k}" for k in CUT_KS] if graded else [])


def stat_name(measure: str) -> str:
    """HELM's display form: ``recip_rank.10`` -> ``RR@10``, ``ndcg_cut.10`` -> ``NDCG@10``, ``recall.5`` ->
    ``Recall@5``."""
    name, _, k = measure.partition(".")
    return {"ndcg_cut": "NDCG", "recip_rank": "RR"}.get(name, name.capitalize()) + (f"@{k}" if k else "")


def helm_order(outputs: list[tuple[str, float]]) -> list[int]:
    """Reference indices, best first, from each reference's (answer text, completion logprob)."""
    def key(i: int) -> tuple[int, float]:
        text, logprob = outputs[i][0].strip().lower(), outputs[i][1]
        if text == CORRECT_OUTPUT.lower():
            return 2, logprob
        return (1 if text == WRONG_OUTPUT.lower() else 0), -logprob

    return sorted(range(len(outputs)), key=key, reverse=True)


@first_use
def _pytrec_eval():
    import pytrec_eval

    return pytrec_eval


def measure(true: dict[str, int], run: dict[str, int], name: str, graded: bool) -> float:
    """One trec_eval measure of ``run`` against ``true``, computed as HELM's ``compute_measure`` does."""
    base, _, k = name.partition(".")
    if base in ("recip_rank", "recall", "success") and graded:
        true = {doc: 0 if rel == 1 else rel for doc, rel in true.items()}  # HELM's binarize_dict
    if base == "recip_rank" and k:  # trec_eval's recip_rank has no cutoff: HELM cuts the run to its top k
        name = base
        run = dict(sorted(run.items(), key=lambda item: item[1], reverse=True)[:int(k)])
    evaluator = _pytrec_eval().RelevanceEvaluator({"_": true}, {name})
    return float(next(iter(evaluator.evaluate({"_": run})["_"].values())))


def ranking_stats(outputs: list[tuple[str, float]], relevance: list[int | None], rank: list[int | None],
                  graded: bool, topk: int | None) -> dict[str, float]:
    """HELM's stats for one query: each measure over every reference, and with ``topk`` over the references the
    retriever ranked within ``topk``."""
    order = helm_order(outputs)
    score = {i: len(order) - pos for pos, i in enumerate(order)}
    true = {f"q{i}": rel for i, rel in enumerate(relevance) if rel}
    names = measures(graded)
    out = {stat_name(m): measure(true, {f"q{i}": s for i, s in score.items()}, m, graded) for m in names}
    if topk:
        run = {f"q{i}": s for i, s in score.items() if (k := rank[i]) and k <= topk}
        out |= {f"{stat_name(m)} (topk={topk})": measure(true, run, m, graded) for m in names}
    return out


def check_judged(inst: Instance) -> None:
    relevance = inst.extra.get("relevance")
    if not isinstance(relevance, list) or len(relevance) != len(inst.references) or not any(relevance):
        raise MetricError(f"instance {inst.id!r}: ranking needs extra['relevance'], one judgement per reference, "
                          "at least one relevant")


def from_helm(helm_instance: dict) -> dict:
    """Our ``extra`` from a HELM MS MARCO instance's reference tags (``docid=``, ``relevance=``, ``rank=``); judgements
    above 1 mean the graded (TREC) track. HELM's instance does not say its run's ``valid_topk``: no topk stats."""
    relevance, rank, docids = [], [], []
    for ref in helm_instance.get("references") or []:
        tags = dict(t.split("=", 1) for t in ref.get("tags") or [] if isinstance(t, str) and "=" in t)
        try:
            relevance.append(int(tags["relevance"]) if "relevance" in tags else None)
            rank.append(int(tags["rank"]) if "rank" in tags else None)
            docids.append(int(tags["docid"]) if "docid" in tags else None)
        except ValueError:
            return {}
    if not any(relevance):
        return {}
    return {"relevance": relevance, "rank": rank, "docids": docids,
            "graded_relevance": max(r or 0 for r in relevance) > 1, "topk": None}


def to_helm(inst: Instance) -> dict:
    relevance = inst.extra.get("relevance")
    if not isinstance(relevance, list) or len(relevance) != len(inst.references):
        return {}
    none = [None] * len(relevance)
    rank, docids = inst.extra.get("rank") or none, inst.extra.get("docids") or none
    return {"tags": [[*([f"docid={d}"] if d is not None else []), *(["correct"] if ref.correct else []),
                      *([f"relevance={rel}"] if rel else []), *([f"rank={k}"] if k else [])]
                     for ref, rel, k, d in zip(inst.references, relevance, rank, docids, strict=True)]}


@metric("ranking", version="1", requires=("pytrec_eval",), extra="classic", check=check_judged,
        helm=HelmEquivalent(tuple(stat_name(m) for m in measures(True)), from_helm, to_helm))
def ranking(x: MetricInput) -> dict[str, float]:
    """HELM's ranking measures per query, averaged over train trials (one ranking per trial)."""
    extra = x.instance.extra
    n = len(x.instance.references)
    trials: dict[int, list[tuple[str, float] | None]] = defaultdict(lambda: [None] * n)
    for request, completion in zip(x.requests, x.completions, strict=True):
        if request.reference_index is not None and 0 <= request.reference_index < n:
            trials[request.sample_index][request.reference_index] = (completion.text, sum(completion.logprobs))
    complete = [[o for o in outputs if o is not None] for outputs in trials.values()]
    per_trial = [ranking_stats(outputs, extra["relevance"], extra.get("rank") or [None] * n,
                               bool(extra.get("graded_relevance")), extra.get("topk"))
                 for outputs in complete if len(outputs) == n]  # a trial missing an answer has no ranking
    if not per_trial:
        return {}
    return {name: fmean(t[name] for t in per_trial) for name in per_trial[0]}
