"""LegalBench (``nguha/legalbench``), the five subsets of HELM Lite, with their per-subset settings.

Instances follow HELM's ``LegalBenchScenario``: the subset's train rows (the few-shot pool), then its
test rows, each in file order, ids ``id<index>`` in that order; the input is one ``<field label>:
<value>`` line per field in the subset's order, the one correct reference is the ``answer`` column.
HELM evaluates its seeded sample of at most 1,000 test rows (only International Citizenship
Questions has more) and scores quasi-exact match.

Per-subset settings are those of LegalBench's ``helm_prompt_settings.jsonl`` that HELM reads: the
fields and their labels, the label column and the output noun (``Type: ``, ``Label: ``, ``Answer: ``,
``Function: ``); the instructions say the same things in our own words. HELM's run spec: 5 shots for
every subset (it overrides the file's 0 for Corporate Lobbying), no input prefix, 30 tokens, stop at
a newline, temperature 0.

Data: HELM loads the script-based Hub dataset (revision ``e042ea68…``, ``trust_remote_code``). Here the
scenario reads the dataset's Parquet conversion (``refs/convert/parquet``: ``<subset>/train/0000.parquet``,
``<subset>/test/0000.parquet``) from a mirror (``$HELMFLOW_MIRROR_LEGALBENCH`` or ``$HELMFLOW_MIRROR``),
the files' sha256 pinned at first use: that branch's commit could not be verified from here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.helm_lite import generation_spec

REPO = "nguha/legalbench"
HELM_REVISION = "e042ea68c19df12b737fe768572f22ead61e8e37"
LABEL = "answer"  # every Lite subset's label column
Subset = Literal["abercrombie", "corporate_lobbying", "international_citizenship_questions",
                 "function_of_decision_section", "proa"]

# subset -> ((field label, column), ...), output noun, instructions
SETTINGS: dict[str, tuple[tuple[tuple[str, str], ...], str, str]] = {
    "abercrombie": (
        (("Description", "text"),),
        "Type",
        "Label the kind of trademark each product's mark is. A generic mark is the common name of the product; a "
        "descriptive mark describes a purpose, nature or attribute of the product; a suggestive mark suggests or "
        "implies a quality or characteristic of the product; an arbitrary mark is a real English word unrelated to "
        "the product; a fanciful mark is an invented word.",
    ),
    "corporate_lobbying": (
        (("Official title of bill", "bill_title"), ("Official summary of bill", "bill_summary"),
         ("Company name", "company_name"), ("Company business description", "company_description")),
        "Label",
        "You are a lobbyist reviewing Congressional bills. From a bill's title and summary and a company's "
        "description taken from its 10-K filing, decide whether the bill is at least somewhat relevant to the "
        "company, that is, whether enacting it could affect the company's bottom line. Say Yes or No.",
    ),  # fmt: skip
    "international_citizenship_questions": (
        (("Question", "question"),),
        "Answer",
        "Answer each question according to international law as it stood on January 1st, 2020. Answer Yes or No.",
    ),
    "function_of_decision_section": (
        (("Text", "Paragraph"),),
        "Function",
        "Classify each paragraph of a court decision by its function, using these definitions.\n\n"
        "- Facts: the paragraph gives the factual background that led to the lawsuit.\n"
        "- Procedural History: the paragraph describes the litigation that led to the current proceeding.\n"
        "- Issue: the paragraph states the legal or factual question the court must resolve.\n"
        "- Rule: the paragraph states a rule of law relevant to the issue.\n"
        "- Analysis: the paragraph applies the legal principles to the facts of the dispute.\n"
        "- Conclusion: the paragraph gives a conclusion of the court.\n"
        "- Decree: the paragraph is a decree resolving the dispute.",
    ),
    "proa": (
        (("Statute", "text"),),
        "Answer",
        "A private right of action exists when a private person is legally entitled to enforce their rights under "
        "a statute. Does the clause create a private right of action? Answer Yes or No.",
    ),
}
EM_SET = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]


class LegalBenchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Subset
    follow_format: bool = False  # HELM's instruction-following variant (helmflow.scenarios.helm_lite)


@scenario("legalbench")
class LegalBench(Scenario[LegalBenchParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # the Parquet conversion's commit is not verified: runs from a mirror only
    Params = LegalBenchParams
    description = ("LegalBench: legal reasoning (trademark types, bill relevance, citizenship law, decision sections, "
                   "private rights of action).")
    main_metric = "quasi_exact_match"
    metrics = EM_SET
    helm_wording = ("the per-subset field labels, field order and output noun are HELM's "
                    "(LegalBench's helm_prompt_settings), the instructions are helmflow's own wording of "
                    "LegalBench's; HELM's generation layout and five examples; with follow_format, the opening "
                    "and closing requests are helmflow's own wording")
    helm_differences = (
        f"LegalBench data: HELM loads the script-based Hub dataset {REPO} at {HELM_REVISION[:8]} "
        "with trust_remote_code (unsupported by datasets >= 4); this scenario reads the dataset's Parquet "
        "conversion from a mirror, its sha256 pinned at first use.",
    )

    @property
    def default_adapter(self) -> AdapterSpec:
        _, noun, instructions = SETTINGS[self.params.subset]
        return generation_spec("", noun, 30, ["\n"], instructions=instructions, follow_format=self.params.follow_format)

    def _files(self) -> dict[str, tuple[str, str]]:
        subset = self.params.subset
        return {f"{subset}-{split}.parquet": (f"{subset}/{split}/0000.parquet", split) for split in ("train", "test")}

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(path)) for name, (path, _) in self._files().items()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        fields, _, _ = SETTINGS[self.params.subset]
        columns = {column: "string" for _, column in fields} | {LABEL: "string"}
        out: list[Instance] = []
        for name, (_, split) in self._files().items():
            for number, row in enumerate(read_parquet_source(self.name, files[name], columns).to_pylist()):
                if row[LABEL] is None:
                    raise ScenarioError(f"scenario {self.name!r}: {files[name]}: row {number} has no {LABEL!r}")
                out.append(Instance(
                    id=f"id{len(out)}",
                    split=split,
                    input=Input(text="\n".join(f"{label}: {row[column]}" for label, column in fields)),
                    references=[Reference(text=row[LABEL], correct=True)],
                ))  # fmt: skip
        return out
