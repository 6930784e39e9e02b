"""RAFT (Alex et al., 2021): eleven real-world few-shot text classification tasks, as HELM Classic runs them
(``raft_scenario.py``, one entry per subset).

HELM loads the script-based Hub dataset ``ought/raft`` at revision ``9ee50172…`` (the labelled ``train`` split, 50
rows per subset), splits it with ``datasets``' ``train_test_split(test_size=0.8, seed=42)`` (a
``numpy.random.default_rng(42)`` permutation: its first ``ceil(0.8 n)`` rows are test, the rest train, each in
permutation order), and lists train then test, ids ``id<i>``. The input is one ``<field>: <value>`` line per field
in the order of RAFT's prompt construction settings (HELM's Dropbox copy of ``prompt_construction_settings.json``:
two JSON lines, field orderings then instructions, by subset); the reference is the ``Label`` class name.
Generation (no input label, ``Label:``), five examples, 30 tokens, stop at a newline; quasi-exact match and
classification F1.

Data: the dataset's Parquet conversion (``<subset>/train/0000.parquet``, whose Hugging Face schema metadata carries
the ``Label`` class names) and the prompt settings (HELM's Dropbox file) from a mirror (``$HELMFLOW_MIRROR_RAFT`` or
``$HELMFLOW_MIRROR``), their sha256 pinned at first use: the conversion branch's commit could not be verified from
here. The instructions are helmflow's own wording of the
settings file's, with its lists of possible labels (the settings file HELM reads supplies the field order only);
a prompts file can replace them (``raft.instructions``).
"""

from __future__ import annotations

import json
import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import UNPINNED, read_parquet_source, read_source
from helmflow.scenarios.boolq import CLASSIC_METRICS
from helmflow.scenarios.helm_lite import generation_spec

REPO = "ought/raft"
HELM_REVISION = "9ee50172ea9afda2f1033c6f1b986e568b862fb3"
SETTINGS_URL = "https://www.dropbox.com/s/a5cyevryzw8rt4f/prompt_construction_settings.json?dl=0"
SETTINGS = "prompt_construction_settings.json"
TEST_SIZE, SEED = 0.8, 42
Subset = Literal["ade_corpus_v2", "banking_77", "neurips_impact_statement_risks", "one_stop_english", "overruling",
                 "semiconductor_org_types", "systematic_review_inclusion", "tai_safety_research", "terms_of_service",
                 "tweet_eval_hate", "twitter_complaints"]

BANKING_77 = (
    "Refund_not_showing_up activate_my_card age_limit apple_pay_or_google_pay atm_support automatic_top_up "
    "balance_not_updated_after_bank_transfer balance_not_updated_after_cheque_or_cash_deposit beneficiary_not_allowed "
    "cancel_transfer card_about_to_expire card_acceptance card_arrival card_delivery_estimate card_linking "
    "card_not_working card_payment_fee_charged card_payment_not_recognised card_payment_wrong_exchange_rate "
    "card_swallowed cash_withdrawal_charge cash_withdrawal_not_recognised change_pin compromised_card "
    "contactless_not_working country_support declined_card_payment declined_cash_withdrawal declined_transfer "
    "direct_debit_payment_not_recognised disposable_card_limits edit_personal_details exchange_charge exchange_rate "
    "exchange_via_app extra_charge_on_statement failed_transfer fiat_currency_support get_disposable_virtual_card "
    "get_physical_card getting_spare_card getting_virtual_card lost_or_stolen_card lost_or_stolen_phone "
    "order_physical_card passcode_forgotten pending_card_payment pending_cash_withdrawal pending_top_up "
    "pending_transfer pin_blocked receiving_money request_refund reverted_card_payment? supported_cards_and_currencies "
    "terminate_account top_up_by_bank_transfer_charge top_up_by_card_charge top_up_by_cash_or_cheque top_up_failed "
    "top_up_limits top_up_reverted topping_up_by_card transaction_charged_twice transfer_fee_charged "
    "transfer_into_account transfer_not_received_by_recipient transfer_timing unable_to_verify_identity "
    "verify_my_identity verify_source_of_funds verify_top_up virtual_card_not_working visa_or_mastercard "
    "why_verify_identity wrong_amount_of_cash_received wrong_exchange_rate_for_cash_withdrawal"
).split()

# subset -> (our wording of the task, the possible labels in the settings file's order)
TASKS: dict[str, tuple[str, list[str]]] = {
    "ade_corpus_v2": (
        "Decide whether the sentence is related to an adverse drug effect (ADE). A drug is any named drug or chemical "
        "(brand, trivial, abbreviated or systematic names) mentioned in a therapeutic context, not metabolites, "
        "reaction byproducts or hospital chemicals. An adverse effect is a sign, symptom, disease, disorder, acquired "
        "abnormality, deficiency, organ damage or death caused by taking a drug.",
        ["ADE-related", "not ADE-related"]),
    "banking_77": ("The query below was sent to a bank's customer service. Assign it to one of the 77 categories.",
                   BANKING_77),
    "neurips_impact_statement_risks": (
        "Decide whether the impact statement mentions a harmful application of the paper's research. The statement "
        "must be enough to conclude that the research has harmful applications; a past risk that the research "
        "addresses does not count.",
        ["doesn't mention a harmful application", "mentions a harmful application"]),
    "one_stop_english": (
        "The article comes from The Guardian and was rewritten by teachers for one of three levels of adult learners "
        "of English as a second language: elementary, intermediate or advanced. Say which level it was written for.",
        ["advanced", "elementary", "intermediate"]),
    "overruling": (
        "In law, an overruling sentence nullifies an earlier decision as a precedent, through a constitutionally "
        "valid statute or a decision of the same or a higher court that sets a different rule on the point of law. "
        "Decide whether the sentence is overruling.",
        ["not overruling", "overruling"]),
    "semiconductor_org_types": (
        "The institution contributed papers to semiconductor conferences over the last 25 years (a random sample of "
        "IEEE's catalogue). Classify it as a university, a company or a research institute.",
        ["company", "research institute", "university"]),
    "systematic_review_inclusion": (
        "Decide whether the paper belongs in a meta-review of systematic reviews of interventions that promote "
        "charitable donations. An included review covers monetary charitable donations, any population in any "
        "context, is peer reviewed and is in English; it reports no new data, is not a non-systematic review, and "
        "does not treat cause-related marketing or other prosocial behaviour.",
        ["included", "not included"]),
    "tai_safety_research": (
        "Transformative AI (TAI) is AI that brings about a transition comparable to, or larger than, the "
        "agricultural or industrial revolution. A paper is TAI safety research when it is directly motivated by, and "
        "substantively informs, the problem of ensuring good outcomes from TAI; has substantive content on AI safety, "
        "not only on capabilities; is written for researchers; and is serious and of sufficient quality (peer review "
        "is not required).",
        ["TAI safety research", "not TAI safety research"]),
    "terms_of_service": (
        "Decide whether the sentence from a Terms of Service is potentially unfair; a clearly unfair one counts as "
        "potentially unfair. Under article 3 of Directive 93/13 on Unfair Terms in Consumer Contracts, a term is "
        "unfair when it was not individually negotiated and, against good faith, creates a significant imbalance "
        "between the parties' rights and obligations to the consumer's detriment. Clauses on jurisdiction, choice of "
        "law, limitation of liability, unilateral change, unilateral termination, contract by using, content removal "
        "and arbitration can be potentially unfair: unilateral changes and contracts by using always are, and "
        "jurisdiction or arbitration away from the consumer's place of residence is clearly unfair.",
        ["not potentially unfair", "potentially unfair"]),
    "tweet_eval_hate": (
        "Decide whether the tweet contains hate speech against immigrants or women. Hate speech is any communication "
        "that disparages a person or a group for a characteristic such as race, colour, ethnicity, gender, sexual "
        "orientation, nationality or religion.",
        ["hate speech", "not hate speech"]),
    "twitter_complaints": (
        "A complaint describes a state of affairs that falls short of what the writer expected. Decide whether the "
        "tweet contains a complaint.",
        ["complaint", "no complaint"]),
}


class RaftParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Subset


def instructions(subset: str) -> str:
    task, labels = TASKS[subset]
    return task + "\nPossible labels:\n" + "\n".join(f"{k}. {label}" for k, label in enumerate(labels, 1))


def helm_split(n: int) -> tuple[list[int], list[int]]:
    """``datasets``' ``train_test_split(test_size=0.8, seed=42)`` of ``n`` rows: (train, test) row indices."""
    n_test = math.ceil(TEST_SIZE * n)
    permutation = np.random.default_rng(SEED).permutation(n).tolist()
    return permutation[n_test:], permutation[:n_test]


def label_names(schema_metadata: dict[bytes, bytes] | None) -> list[str]:
    """The ``Label`` ClassLabel names from a Hub Parquet file's ``huggingface`` schema metadata."""
    info = json.loads((schema_metadata or {}).get(b"huggingface", b"{}"))
    features = info.get("info", {}).get("features", {})
    names = features.get("Label", {}).get("names")
    if not isinstance(names, list) or not names:
        raise ValueError("its schema metadata has no ClassLabel names for 'Label'")
    return names


@scenario("raft")
class Raft(Scenario[RaftParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = UNPINNED  # the Parquet conversion's commit is not verified: runs from a mirror only
    Params = RaftParams
    description = "RAFT: real-world few-shot text classification, eleven tasks (HELM Classic)."
    main_metric = "quasi_exact_match"
    metrics = [*CLASSIC_METRICS, "classification_f1"]
    helm_wording = ("the field lines (in the settings file's order), the Label: layout, five in-context examples and "
                    "30 output tokens follow HELM's generation adapter; the instructions are helmflow's own wording of "
                    "RAFT's, with its lists of possible labels")
    helm_differences = (
        f"raft data: HELM loads the script-based Hub dataset {REPO} at {HELM_REVISION[:8]}; this scenario reads the "
        "dataset's Parquet conversion and a copy of RAFT's prompt settings (HELM's Dropbox file) from a mirror, their "
        "sha256 pinned at first use",
    )

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("", "Label", 30, ["\n"], instructions=instructions(self.params.subset))

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{self.params.subset}-train.parquet",
                           url=self.hub_url(f"{self.params.subset}/train/0000.parquet")),
                DataSource(filename=SETTINGS, url=self.web_url(SETTINGS_URL))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        subset = self.params.subset
        try:
            field_ordering, _ = map(json.loads, read_source(self.name, files[SETTINGS]).decode("utf-8").strip()
                                    .split("\n"))
            fields = field_ordering[subset]
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[SETTINGS]}: not RAFT's two-line prompt settings "
                                f"with a field ordering for {subset} ({exc!r})") from None
        url = files[f"{subset}-train.parquet"]
        table = read_parquet_source(self.name, url, {"Label": "integer", **dict.fromkeys(fields, "string")})
        try:
            names = label_names(table.schema.metadata)
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url}: {exc}") from None
        rows = table.to_pylist()
        train, test = helm_split(len(rows))
        out: list[Instance] = []
        splits: tuple[tuple[Split, list[int]], ...] = (("train", train), ("test", test))
        for split, indices in splits:
            for i in indices:
                row = rows[i]
                if not 0 <= row["Label"] < len(names):
                    raise ScenarioError(f"scenario {self.name!r}: {url}: row {i} has Label {row['Label']}, "
                                        f"not one of its {len(names)} classes")
                out.append(Instance(id=f"id{len(out)}", split=split,
                                    input=Input(text="\n".join(f"{f}: {row[f]}" for f in fields)),
                                    references=[Reference(text=names[row["Label"]], correct=True)]))
        return out
