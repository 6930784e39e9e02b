"""Legal opinion sentiment (Ratnayaka et al., 2020): sentences of US court opinions labelled positive,
negative or neutral, as HELM's Enterprise board runs them (``legal_opinion_sentiment_classification_scenario.py``).

The sources are two Excel workbooks on OSF (HELM's URLs ``osf.io/download/hfn62/`` for train and
``osf.io/download/q4adh/`` for test, unpinned upstream), read as ``pandas.read_excel`` reads them (first
sheet, header row): train's columns are ``Phrase`` and ``Label``, test's ``sentence`` and ``label``; the
label is an index into HELM's class list ``positive, negative, neutral``. Generation (no input label,
``Label:``, 5 tokens, five examples), scored by exact match and ``classification_weighted_f1`` (HELM's table
shows quasi exact match, which is on the board too).

Reading .xlsx needs openpyxl: the ``enterprise`` extra (``pip install 'helmflow[enterprise]'``).
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_xlsx_rows
from helmflow.scenarios.helm_lite import generation_spec

SOURCES = {  # split -> (HELM's URL, text column, label column)
    "train": ("https://osf.io/download/hfn62/", "Phrase", "Label"),
    "test": ("https://osf.io/download/q4adh/", "sentence", "label"),
}
CLASSES = ("positive", "negative", "neutral")  # HELM's SENTIMENT_CLASSES: label i is CLASSES[i]
# our wording of HELM's instructions: three sentiment labels
INSTRUCTIONS = "Label the sentiment of each sentence from a legal opinion as one of: positive, neutral, negative."


@scenario("legal_opinion_sentiment_classification")
class LegalOpinionSentiment(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "osf-hfn62-q4adh"
    description = "Legal opinion sentiment: positive, negative or neutral court-opinion sentences (HELM Enterprise)."
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "classification_weighted_f1", "efficiency"]
    default_adapter = generation_spec("", "Label", 5, ["\n"], instructions=INSTRUCTIONS)
    helm_wording = ("the unlabelled input, Label:, 5 tokens and five in-context examples follow HELM's run spec; the "
                    "instructions are helmflow's own sentence naming the same three labels")
    helm_differences = ("legal_opinion_sentiment_classification: the two OSF workbooks are read from HELM's URLs "
                        "(unpinned upstream), pinned by their sha256 at first fetch; rows with no value at all are "
                        "left out (HELM would stop at one)",)
    pin_unverified = "HELM's OSF download URLs name no version of the files"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.xlsx", url=self.web_url(url), sha256_unknown=True)
                for split, (url, _, _) in SOURCES.items()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split, (_, text_column, label_column) in SOURCES.items():
            url = files[f"{split}.xlsx"]
            header, rows = read_xlsx_rows(self.name, url)
            for column in (text_column, label_column):
                if column not in header:
                    raise ScenarioError(f"scenario {self.name!r}: {url} has no column {column!r}; "
                                        f"it has: {', '.join(h for h in header if h) or 'no columns'}")
            for number, row in enumerate(rows, start=2):
                try:
                    index = int(row[label_column])
                    label = CLASSES[index] if index >= 0 else None
                except (TypeError, ValueError, IndexError):
                    label = None
                if label is None or row[text_column] is None:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {number}: label {row[label_column]!r} "
                                        "is not 0, 1 or 2, or the sentence is empty")
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=str(row[text_column])),
                                    references=[Reference(text=label, correct=True)]))
        return out
