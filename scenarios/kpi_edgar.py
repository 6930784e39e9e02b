"""KPI-EDGAR (Deußer et al., 2022): extract key performance indicators and their current, prior and
two-years-past values from sentences of financial reports, as HELM's Enterprise board runs it
(``kpi_edgar_scenario.py``; HELM keeps four of the paper's entity types and no relations).

The source is ``data/kpi_edgar.json`` of GitHub ``tobideusser/kpi-edgar`` at HELM's commit: documents ->
``segments`` -> ``sentences`` (a null list is none), each with ``split_type`` (train, valid or test; a null
one is left out), ``words`` (``value``) and ``entities_anno`` (``type_``, ``start``, ``end``). The input is
``Context:`` and the sentence's words joined by spaces (square brackets made round), then the task and the
four tags' meanings; the reference is ``phrase [tag]`` for each annotation of a known tag, joined by
``, `` (a sentence without one is left out). Generation (``Answer:``, 100 tokens, 20 examples), scored by
HELM's ``adjusted_macro_f1_score`` (the main metric; see :mod:`helmflow.metrics.kpi_edgar`).
"""

from __future__ import annotations

import json
from typing import Any

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

COMMIT = "2ec7084dcd55b4979bbe288d4aa1e962c685c9ab"
TAGS = ("kpi", "cy", "py", "py1")
SPLITS = {"train": "train", "valid": "valid", "test": "test"}
# our wording of HELM's task line and of the four tags' meanings (the tags and the bracket format are HELM's)
TASK = ("Task: List the key performance indicators (KPIs) and the values in the text above, each followed by its "
        "category in square brackets.\n"
        "kpi: a key performance indicator with a numeric or monetary value, cy: a current-year monetary value, "
        "py: a prior-year monetary value, py1: a value from two years before.")


def escape_brackets(text: str) -> str:
    """HELM's ``escape_parenthesis``: square brackets become round ones (they delimit tags in answers)."""
    return text.replace("[", "(").replace("]", ")")


def sentences(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every sentence of every segment of every document, in file order (HELM's ``get_sentences``)."""
    return [s for document in documents for segment in document["segments"] for s in segment["sentences"] or []]


def reference_text(words: list[str], annotations: list[dict[str, Any]]) -> str:
    """HELM's ``get_output_text``: ``phrase [tag]`` per annotation of a known tag, joined by ``, ``."""
    return ", ".join(f"{escape_brackets(' '.join(words[a['start']:a['end']]))} [{a['type_']}]"
                     for a in annotations if a["type_"] in TAGS)


@scenario("kpi_edgar")
class KPIEdgar(Scenario):
    VERSION = "1"
    GIT_REPO = "tobideusser/kpi-edgar"
    GIT_COMMIT = COMMIT
    description = "KPI-EDGAR: tag KPIs and their yearly values in financial report sentences (HELM Enterprise)."
    main_metric = "adjusted_macro_f1_score"
    metrics = ["kpi_edgar", "efficiency"]
    default_adapter = generation_spec("", "Answer", 100, ["\n"], max_train_instances=20)
    helm_wording = ("the Context: line, the Answer: layout, 100 tokens, 20 in-context examples, the four tags and the "
                    "'phrase [tag]' answer format follow HELM's; the task line and the tags' meanings inside each "
                    "input are helmflow's own sentences")
    helm_differences = (
        "kpi_edgar: adjusted_macro_f1_score is HELM's, which swaps prediction and gold in the partial-match "
        "adjustment; adjusted_macro_f1_score_corrected beside it applies the adjustment as the KPI-EDGAR paper does",
        "kpi_edgar: an output item naming a tag other than kpi, cy, py or py1 is ignored (HELM's metric stops the "
        "run with a KeyError)",
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="kpi_edgar.json", url=self.git_url("data/kpi_edgar.json"), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["kpi_edgar.json"]
        try:
            found = sentences(json.loads(read_source(self.name, url)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not KPI-EDGAR's documents -> segments -> "
                                f"sentences JSON: {exc!r}") from None
        out: list[Instance] = []
        for number, sentence in enumerate(found):
            try:
                split = sentence["split_type"]
                if split is None:
                    continue
                words = [w["value"] for w in sentence["words"]]
                answer = reference_text(words, sentence["entities_anno"])
                split = SPLITS[split]
            except (KeyError, TypeError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url}: sentence {number} is malformed "
                                    f"(missing or unknown {exc})") from None
            if not answer:
                continue
            text = f"Context: {escape_brackets(' '.join(words))}\n{TASK}"
            out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=text),
                                references=[Reference(text=answer, correct=True)]))
        return out
