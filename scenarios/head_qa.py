"""HEAD-QA (Vilares and Gómez-Rodríguez, 2019): multiple-choice questions from Spain's specialised healthcare
exams, as MedHELM runs it (``headqa_scenario.py``, ``get_head_qa_run_spec``).

HELM loads the Hub dataset ``dvilares/head_qa`` (config = language, ``en`` by default) unpinned and keeps its
test split, skipping questions that come with an image. The input is ``qtext``; the references are the
``answers`` in order, the one whose ``aid`` is ``ra`` correct; ``category`` (when given) keeps that category
only. Multiple choice joint, zero-shot.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source
from helmflow.scenarios.medhelm import WORDING, multiple_choice

REPO = "dvilares/head_qa"
COLUMNS = {"qid": "integer", "qtext": "string", "ra": "integer", "category": "string"}
INSTRUCTIONS = ("You answer multiple-choice questions on the biomedical sciences. Choose the most appropriate option "
                "and reply with its letter alone (A, B, C or D).")


class HeadQAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str = "en"
    category: str | None = None


@scenario("head_qa")
class HeadQA(Scenario[HeadQAParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # HELM loads the dataset unpinned: runs from a mirror, pinned at first mirror
    Params = HeadQAParams
    description = "HEAD-QA: multiple-choice questions from Spanish healthcare specialisation exams (MedHELM)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = multiple_choice(INSTRUCTIONS, "Question", "Answer")
    helm_wording = WORDING
    helm_differences = (
        "head_qa: HELM loads dvilares/head_qa from the Hub unpinned; this scenario reads a mirror of the language's "
        "test split as Parquet (<language>/test-00000-of-00001.parquet), pinned by the sha256 recorded at first "
        "mirror (unverified against HELM's copy)",
    )

    def sources(self) -> list[DataSource]:
        path = f"{self.params.language}/test-00000-of-00001.parquet"
        return [DataSource(filename="test.parquet", url=self.hub_url(path), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["test.parquet"]
        table = read_parquet_source(self.name, url, COLUMNS)
        if "answers" not in table.schema.names:
            raise ScenarioError(f"scenario {self.name!r}: {url} has no column 'answers'")
        out: list[Instance] = []
        for row in table.to_pylist():
            if row.get("image"):  # HELM skips the visual questions (SKIP_VQA)
                continue
            if self.params.category is not None and row["category"] != self.params.category:
                continue
            refs = [Reference(text=a["atext"], correct=a["aid"] == row["ra"]) for a in row["answers"]]
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row["qtext"]), references=refs,
                                extra={"qid": row["qid"], "category": row["category"]}))
        return out
