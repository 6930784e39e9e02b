"""RULER SQuAD (HELM Long Context, ``RULERSQuADScenario``): a SQuAD 2.0 dev question over as many of the dev
set's paragraphs as fit in ``max_num_words`` (131,072 on HELM's board), synthesised as RULER does
(:mod:`helmflow.scenarios.ruler_qa`). The source is SQuAD 2.0's ``dev-v2.0.json`` (HELM reads it from the
SQuAD explorer's site, unversioned), pinned here by its sha256 at first fetch. Answerable questions only; the
references are every annotator's answer; scored by RULER's part string match (the main metric: some answer
appears in the output, ignoring case) and HELM's open-ended generation metrics.
"""

from __future__ import annotations

from helmflow.scenarios import scenario
from helmflow.scenarios.ruler_qa import Question, RulerQA, squad_questions


@scenario("ruler_squad")
class RulerSquad(RulerQA):
    SOURCE_REVISION = "squad-v2.0"
    description = "RULER SQuAD: single-hop question answering over ~128k words of SQuAD paragraphs (HELM Long Context)."
    FILENAME = "dev-v2.0.json"
    URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json"
    pin_unverified = ("HELM reads dev-v2.0.json from the SQuAD explorer's site with no version or checksum; the "
                      "sha256 is the one recorded at first fetch")
    helm_differences = ("ruler_squad: the source file is pinned by its sha256 at first fetch (HELM reads the site's "
                        "current file); HELM's sampler would retry a question that never fits for ever, this one "
                        "stops after 1,000 draws",)

    def read(self, url: str) -> tuple[list[Question], list[str]]:
        return squad_questions(self.name, url)
