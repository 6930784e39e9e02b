"""BANKING77 (Casanueva et al., 2020): the intent, one of 77, of a bank customer's query, as HELM's Finance board
runs it (``banking77_scenario.py``).

HELM loads the Hub dataset ``PolyAI/banking77`` at revision ``90d4e2ee…`` through its loading script
(``trust_remote_code``), train then test rows in file order, the reference the label's name. That script reads
two CSV files (``text``, ``category``) of PolyAI's ``task-specific-datasets`` repository; ``datasets`` >= 4
cannot run it, so this scenario reads those two files (the label's name is the ``category`` cell), pinned by
their sha256 at first fetch. Generation (``Label:``, 30 tokens, five examples) after instructions naming the 77
labels (HELM uses RAFT's banking_77 instructions, which list them), scored by exact match and quasi exact match
(the main metric).
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.helm_lite import generation_spec

HELM_REVISION = "90d4e2ee5521c04fc1488f065b8b083658768c57"
CSV_URL = "https://raw.githubusercontent.com/PolyAI-LDN/task-specific-datasets/master/banking_data/{split}.csv"
SPLITS = ("train", "test")
LABELS = (
    "activate_my_card", "age_limit", "apple_pay_or_google_pay", "atm_support", "automatic_top_up",
    "balance_not_updated_after_bank_transfer", "balance_not_updated_after_cheque_or_cash_deposit",
    "beneficiary_not_allowed", "cancel_transfer", "card_about_to_expire", "card_acceptance", "card_arrival",
    "card_delivery_estimate", "card_linking", "card_not_working", "card_payment_fee_charged",
    "card_payment_not_recognised", "card_payment_wrong_exchange_rate", "card_swallowed", "cash_withdrawal_charge",
    "cash_withdrawal_not_recognised", "change_pin", "compromised_card", "contactless_not_working", "country_support",
    "declined_card_payment", "declined_cash_withdrawal", "declined_transfer", "direct_debit_payment_not_recognised",
    "disposable_card_limits", "edit_personal_details", "exchange_charge", "exchange_rate", "exchange_via_app",
    "extra_charge_on_statement", "failed_transfer", "fiat_currency_support", "get_disposable_virtual_card",
    "get_physical_card", "getting_spare_card", "getting_virtual_card", "lost_or_stolen_card", "lost_or_stolen_phone",
    "order_physical_card", "passcode_forgotten", "pending_card_payment", "pending_cash_withdrawal", "pending_top_up",
    "pending_transfer", "pin_blocked", "receiving_money", "Refund_not_showing_up", "request_refund",
    "reverted_card_payment?", "supported_cards_and_currencies", "terminate_account", "top_up_by_bank_transfer_charge",
    "top_up_by_card_charge", "top_up_by_cash_or_cheque", "top_up_failed", "top_up_limits", "top_up_reverted",
    "topping_up_by_card", "transaction_charged_twice", "transfer_fee_charged", "transfer_into_account",
    "transfer_not_received_by_recipient", "transfer_timing", "unable_to_verify_identity", "verify_my_identity",
    "verify_source_of_funds", "verify_top_up", "virtual_card_not_working", "visa_or_mastercard",
    "why_verify_identity", "wrong_amount_of_cash_received", "wrong_exchange_rate_for_cash_withdrawal",
)  # fmt: skip
# our wording of RAFT's banking_77 instructions with HELM's addition (answer with the label only)
INSTRUCTIONS = ("Each query below was sent to a bank's customer service. Label it with its intent, exactly one of "
                "these 77 labels, and answer with the label only:\n" + "\n".join(LABELS))


@scenario("banking77")
class Banking77(Scenario):
    VERSION = "1"
    SOURCE_REVISION = HELM_REVISION
    description = "BANKING77: the intent of a bank customer's query, one of 77 (HELM Finance)."
    main_metric = "quasi_exact_match"
    metrics = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]
    default_adapter = generation_spec("", "Label", 30, ["\n"], instructions=INSTRUCTIONS)
    helm_wording = ("the unlabelled query, Label:, 30 tokens and five in-context examples follow HELM's run spec; the "
                    "instructions are helmflow's own wording of RAFT's, listing the same 77 labels")
    helm_differences = ("banking77: HELM runs the Hub dataset's loading script at 90d4e2ee; this scenario reads the "
                        "two CSV files that script reads (PolyAI's task-specific-datasets, branch master), pinned by "
                        "their sha256 at first fetch",)
    pin_unverified = ("the CSV files are read from branch master of PolyAI-LDN/task-specific-datasets, the source "
                      "the Hub's loading script names (not checked against revision 90d4e2ee)")

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.csv", url=self.web_url(CSV_URL.format(split=split)), sha256_unknown=True)
                for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split in SPLITS:
            url = files[f"{split}.csv"]
            for number, row in enumerate(read_csv_source(self.name, url, ["text", "category"]), start=2):
                if row["category"] not in LABELS:
                    raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: {row['category']!r} is not "
                                        "one of the 77 BANKING77 labels")
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=row["text"]),
                                    references=[Reference(text=row["category"], correct=True)]))
        return out
