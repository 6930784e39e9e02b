"""MEDIQA 2019 QA (Ben Abacha et al., 2019): consumers' health questions with ranked candidate answers, as
MedHELM runs it (``medi_qa_scenario.py``, ``get_medi_qa_spec``).

HELM loads ``bigbio/mediqa_qa`` at revision ``9288641f…`` with ``trust_remote_code``: that loading script reads
``MEDIQA_Task3_QA/MEDIQA2019-Task3-QA-TestSet-wLabels.xml`` from the master branch of ``abachaa/MEDIQA2019``. This
scenario reads the same file directly, as the script parses it: each ``Question`` (its ``QID`` the instance id,
its ``QuestionText`` the input) with its ``AnswerList``; the one reference is the text of the first answer whose
``ReferenceRank`` is 1 (empty when none). Generation (``Question:``/``Answer:``, 1,024 tokens, no stop sequence),
scored by MedHELM's LLM jury (``medi_qa_accuracy``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation

URL = ("https://raw.githubusercontent.com/abachaa/MEDIQA2019/master/MEDIQA_Task3_QA/"
       "MEDIQA2019-Task3-QA-TestSet-wLabels.xml")
FILENAME = "MEDIQA2019-Task3-QA-TestSet-wLabels.xml"
INSTRUCTIONS = "Answer the consumer health question below."


def best_answer(question: ET.Element) -> str:
    """HELM's ``_get_highest_ranked_answer``: the first answer ranked 1 by the reference, else empty."""
    for answer in question.iterfind("AnswerList/Answer"):
        if int(answer.attrib["ReferenceRank"]) == 1:
            return answer.findtext("AnswerText") or ""
    return ""


@scenario("medi_qa")
class MediQA(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "master-branch"
    description = "MEDIQA 2019 QA: consumers' health questions, answered and judged by an LLM jury (MedHELM)."
    main_metric = "medi_qa_accuracy"
    metrics = ["medi_qa_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Question", "Answer", 1024, stop=())
    helm_wording = WORDING
    pin_unverified = ("HELM's loading script reads the master branch of abachaa/MEDIQA2019, which can move; the "
                      "sha256 recorded at first fetch pins what this machine read, not what HELM read")
    helm_differences = ("medi_qa: the test XML the bigbio/mediqa_qa loading script reads is read directly (no remote "
                        "code), from the master branch it names, pinned by the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        try:
            root = ET.fromstring(read_source(self.name, url))
            rows = [(q.attrib["QID"], q.findtext("QuestionText") or "", best_answer(q))
                    for q in root.iterfind("Question")]
        except (ET.ParseError, KeyError, ValueError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not MEDIQA's question XML: {exc!r}") from None
        return [Instance(id=qid, split="test", input=Input(text=text), references=[Reference(text=ref, correct=True)])
                for qid, text, ref in rows]
