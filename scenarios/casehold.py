"""CaseHOLD (Zheng et al., 2021): which of five holdings a US court decision cites, as HELM's Enterprise
board runs it (``casehold_scenario.py``).

HELM loads the Hub dataset ``casehold/casehold`` (config ``all``, unpinned) with ``load_dataset``; its
train rows, then its test rows (the validation split is skipped), each an instance ``id<example_id>`` whose
input is ``citing_prompt`` and whose five references are ``holding_0`` … ``holding_4``, the one at
``label`` (a string index) correct. Multiple choice joint (``Passage:`` / ``Answer:``, two in-context
examples), scored by exact match and quasi exact match (the main metric).

Data: the dataset is script-based (``datasets`` >= 4 cannot run it), so this scenario reads the Hub's Parquet
conversion of the ``all`` config (``refs/convert/parquet``: ``all/train/0000.parquet``, ``all/test/0000.parquet``),
the rows ``load_dataset`` gives, pinned by each file's sha256 at first fetch; that branch's commit is unverified.
"""

from __future__ import annotations

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_parquet_source

REPO = "casehold/casehold"
PARQUET_URL = f"https://huggingface.co/datasets/{REPO}/resolve/refs%2Fconvert%2Fparquet/all/{{split}}/0000.parquet"
SPLITS = ("train", "test")  # HELM's order; the validation split is skipped, as HELM does
HOLDINGS = 5
# our wording of HELM's instructions: answer with one of the five letters
INSTRUCTIONS = "Answer with the letter of the correct holding: A, B, C, D or E."
COLUMNS = {"citing_prompt": "string"} | {f"holding_{i}": "string" for i in range(HOLDINGS)}


def casehold_spec(instructions: str = INSTRUCTIONS) -> AdapterSpec:
    """HELM's ``get_casehold_spec``: multiple choice joint, ``Passage: `` / lettered options / ``Answer: ``,
    two in-context examples, 5 tokens, stop at a newline, greedy."""
    return AdapterSpec(
        method="multiple_choice_joint", instructions=instructions, input_prefix="Passage: ", input_suffix="\n",
        reference_prefix="A. ", reference_suffix="\n", output_prefix="Answer: ", output_suffix="\n",
        instance_prefix="\n", max_train_instances=2,
        generation=GenerationParams(max_tokens=5, temperature=0.0, stop=["\n"], num_outputs=1),
    )


@scenario("casehold")
class CaseHOLD(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "refs-convert-parquet"
    description = "CaseHOLD: the holding a court decision cites, one of five (HELM Enterprise; multiple choice joint)."
    main_metric = "quasi_exact_match"
    metrics = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]
    default_adapter = casehold_spec()
    helm_wording = ("the Passage:, lettered-option and Answer: layout, two in-context examples and 5 tokens follow "
                    "HELM's casehold run spec; the instructions are helmflow's own sentence naming the same letters")
    helm_differences = (
        "casehold: HELM loads the script-based Hub dataset unpinned; this scenario reads its Parquet conversion "
        "(all/train, all/test), pinned by the sha256 of each file at first fetch",
        "casehold: one greedy completion per request (HELM's multiple-choice spec asks for five at temperature 0)",
    )
    pin_unverified = ("the Hub's Parquet conversion (refs/convert/parquet) of the script-based dataset; its commit "
                      "was not checked against the rows HELM's load_dataset gives")

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.parquet", url=self.web_url(PARQUET_URL.format(split=split)),
                           sha256_unknown=True) for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split in SPLITS:
            url = files[f"{split}.parquet"]
            table = read_parquet_source(self.name, url, COLUMNS)
            for column in ("example_id", "label"):
                if column not in table.schema.names:
                    raise ScenarioError(f"scenario {self.name!r}: {url} has no column {column!r}; "
                                        f"it has: {', '.join(table.schema.names)}")
            for number, row in enumerate(table.to_pylist()):
                label = str(row["label"])
                holdings = [row[f"holding_{i}"] for i in range(HOLDINGS)]
                if label not in {str(i) for i in range(HOLDINGS)} or None in holdings or row["citing_prompt"] is None:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {number}: label {label!r} is not 0-4 "
                                        "or a holding or the citing prompt is missing")
                out.append(Instance(id=f"id{row['example_id']}", split=split, input=Input(text=row["citing_prompt"]),
                                    references=[Reference(text=h, correct=label == str(i))
                                                for i, h in enumerate(holdings)]))
        return out
