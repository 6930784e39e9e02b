"""CTI to MITRE ATT&CK (Orbinato et al., 2022): which attack technique a cyber-threat-intelligence sentence
describes, as a multiple-choice question, as HELM's Enterprise board runs it (``cti_to_mitre_scenario.py``).

Sources: ``data/dataset.csv`` of GitHub ``dessertlab/cti-to-mitre-with-nlp`` at HELM's commit (columns
``sentence``, ``label_tec``, ``label_subtec``, ``tec_name``) and MITRE's ``enterprise-attack.json`` of
ATT&CK v10.1 (GitHub ``mitre/cti``, tag ``ATT&CK-v10.1``). The technique names are the ``attack-pattern``
objects that say they are not sub-techniques, keyed by their ``mitre-attack`` external id, in file order.
HELM splits the CSV with pandas (``sample(frac=0.7, random_state=seed)`` train, the rest shuffled with the
same seed test) and then, with one ``random.Random(seed)`` over train then test rows in that order, draws
``num_options - 2`` wrong names (``sample``), adds the right one, shuffles, and appends ``Others``. HELM's
run spec: ``num_options=10``, ``seed=42``. Multiple choice joint (``Situation:`` / ``Answer:``, ten
examples), scored by exact match and quasi exact match (the main metric).
"""

from __future__ import annotations

import json
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import pandas_sample_split, read_csv_source, read_source

CTI_COMMIT = "a8cacf3185d098c686e0d88768a619a03a4d76d1"
CTI_URL = f"https://github.com/dessertlab/cti-to-mitre-with-nlp/raw/{CTI_COMMIT}/data/dataset.csv"
MITRE_URL = "https://github.com/mitre/cti/raw/refs/tags/ATT&CK-v10.1/enterprise-attack/enterprise-attack.json"
MAX_OPTIONS = 199  # the techniques of ATT&CK v10.1, HELM's cap
OTHERS = "Others"
TRAIN_RATIO = 0.7
# our wording of HELM's instructions: the attack type, a single letter
INSTRUCTIONS = "Name the type of security attack each situation describes. Answer with a single letter."


class CtiParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_options: int = Field(10, ge=2)  # HELM's run spec; capped at the 199 techniques, as HELM caps it
    seed: int = 42


def technique_names(attack: dict[str, Any]) -> dict[str, str]:
    """HELM's ``make_label_category_name_dict``: technique id -> name, for attack patterns that are not
    sub-techniques (a pattern that does not say so is left out), in file order."""
    out: dict[str, str] = {}
    for o in attack["objects"]:
        if o["type"] != "attack-pattern" or o.get("x_mitre_is_subtechnique", True):
            continue
        ids = [ref["external_id"] for ref in o["external_references"] if ref["source_name"] == "mitre-attack"]
        if len(ids) != 1:
            raise ValueError(f"attack pattern {o.get('name')!r} has {len(ids)} mitre-attack ids, not one")
        out[ids[0]] = o["name"]
    return out


def options(rng: random.Random, count: int, correct: str, names: list[str]) -> list[tuple[str, bool]]:
    """HELM's ``get_references``: ``count - 2`` wrong names drawn, the right one added, shuffled, ``Others`` last."""
    if count > len(names):
        raise ValueError(f"{count} options, but only {len(names)} technique names")
    wrong = [n for n in names if n != correct]
    picked = [(n, False) for n in rng.sample(wrong, min(len(wrong), count - 2))] + [(correct, True)]
    rng.shuffle(picked)
    return [*picked, (OTHERS, False)]


def cti_spec() -> AdapterSpec:
    """HELM's ``get_cti_to_mitre_spec``: multiple choice joint, ``Situation: `` / options / ``Answer: ``, ten
    in-context examples, 5 tokens, stop at a newline, greedy."""
    return AdapterSpec(
        method="multiple_choice_joint", instructions=INSTRUCTIONS, input_prefix="Situation: ", input_suffix="\n",
        reference_prefix="A. ", reference_suffix="\n", output_prefix="Answer: ", output_suffix="\n",
        instance_prefix="\n", max_train_instances=10,
        generation=GenerationParams(max_tokens=5, temperature=0.0, stop=["\n"], num_outputs=1),
    )


@scenario("cti_to_mitre")
class CtiToMitre(Scenario[CtiParams]):
    VERSION = "1"
    SOURCE_REVISION = CTI_COMMIT
    Params = CtiParams
    description = "CTI to MITRE: the ATT&CK technique a threat-intelligence sentence describes (HELM Enterprise)."
    main_metric = "quasi_exact_match"
    metrics = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]
    default_adapter = cti_spec()
    helm_wording = ("the Situation:, lettered-option and Answer: layout, ten in-context examples and 5 tokens follow "
                    "HELM's run spec; the instructions are helmflow's own sentence")
    helm_differences = (
        "cti_to_mitre: dataset.csv is read at HELM's commit and enterprise-attack.json at the ATT&CK-v10.1 tag "
        "(a tag can move), each pinned by its sha256 at first fetch",
        "cti_to_mitre: one greedy completion per request (HELM's multiple-choice spec asks for five at temperature 0)",
    )
    pin_unverified = "enterprise-attack.json is read at the git tag ATT&CK-v10.1 of mitre/cti, not at a commit"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="dataset.csv", url=self.web_url(CTI_URL), sha256_unknown=True),
                DataSource(filename="enterprise-attack.json", url=self.web_url(MITRE_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_csv_source(self.name, files["dataset.csv"], ["sentence", "label_tec"])
        url = files["enterprise-attack.json"]
        try:
            names = technique_names(json.loads(read_source(self.name, url)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not an ATT&CK bundle: {exc!r}") from None
        count = min(self.params.num_options, MAX_OPTIONS)
        rng = random.Random(self.params.seed)
        train, test = pandas_sample_split(len(rows), TRAIN_RATIO, self.params.seed)
        out: list[Instance] = []
        for split, order in (("train", train), ("test", test)):
            for position in order:
                row = rows[position]
                if row["label_tec"] not in names:
                    raise ScenarioError(f"scenario {self.name!r}: {files['dataset.csv']} data row {position}: "
                                        f"technique {row['label_tec']!r} is not in {url}")
                try:
                    choices = options(rng, count, names[row["label_tec"]], list(names.values()))
                except ValueError as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {exc}") from None
                out.append(Instance(id=f"id{position}", split=split, input=Input(text=row["sentence"]),
                                    references=[Reference(text=t, correct=c) for t, c in choices]))
        return out
