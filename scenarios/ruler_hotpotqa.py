"""RULER HotpotQA (HELM Long Context, ``RULERHotpotQAScenario``): a HotpotQA dev (distractor) question over as
many of the dev set's paragraphs as fit in ``max_num_words`` (131,072 on HELM's board), synthesised as RULER
does (:mod:`helmflow.scenarios.ruler_qa`): multi-hop, since each question's answer needs two of its paragraphs,
shuffled among the others. The source is ``hotpot_dev_distractor_v1.json`` (HELM reads it from CMU's server,
unversioned), pinned here by its sha256 at first fetch. Scored by RULER's part string match (the main metric)
and HELM's open-ended generation metrics.
"""

from __future__ import annotations

from helmflow.scenarios import scenario
from helmflow.scenarios.ruler_qa import Question, RulerQA, hotpotqa_questions


@scenario("ruler_hotpotqa")
class RulerHotpotQA(RulerQA):
    SOURCE_REVISION = "hotpot-dev-distractor-v1"
    description = ("RULER HotpotQA: multi-hop question answering over ~128k words of HotpotQA paragraphs (HELM Long "
                   "Context).")
    FILENAME = "hotpot_dev_distractor_v1.json"
    URL = "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"
    pin_unverified = ("HELM reads hotpot_dev_distractor_v1.json from CMU's server with no version or checksum; the "
                      "sha256 is the one recorded at first fetch")
    helm_differences = ("ruler_hotpotqa: the source file is pinned by its sha256 at first fetch (HELM reads the "
                        "server's current file); HELM's sampler would retry a question that never fits for ever, "
                        "this one stops after 1,000 draws",)

    def read(self, url: str) -> tuple[list[Question], list[str]]:
        return hotpotqa_questions(self.name, url)
