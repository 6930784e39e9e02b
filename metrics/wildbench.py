"""WildBench's judge-backed score (HELM's ``WildBenchScoreMetric``), read from the jury's verdicts.

Per instance: ``wildbench_score`` is the mean 1-10 score over the judges whose output parsed (an
empty model output was not sent and counts 1), and ``wildbench_score_rescaled`` = (score - 1) / 9,
the main metric in [0, 1]. Without a parsed verdict (no judge, ``--no-judge``, or only annotation
errors) both are missing, never 0. ``wildbench_judges_parsed`` / ``wildbench_judge_errors`` count
the verdicts, so unparsable outputs show in the run summary.
"""

from __future__ import annotations

from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput

from helmflow.judges import judge_counts, jury_scores


@metric("wildbench", version="1", judge="wildbench")
def wildbench(x: MetricInput) -> dict[str, float]:
    if not x.annotations:
        return {}
    out = judge_counts(x.annotations, "wildbench")
    samples = list(jury_scores(x.annotations, "wildbench").values())
    if samples:
        score = sum(samples) / len(samples)
        out.update(wildbench_score=score, wildbench_score_rescaled=(score - 1) / 9)
    return out
