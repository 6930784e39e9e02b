"""What VHELM's scenarios share: HELM's two multimodal adapter specs, its scoring, and Hub pinning.

HELM pins no VHELM dataset (reference §A.3), so each scenario here pins a Hub revision itself. The
revisions in these modules come from stored Hub page snapshots and could not be checked from this
machine (no network): `helmflow mirror <scenario> --to DIR` verifies one (it reads the pinned files
and checks them). A scenario whose revision could not be found at all says :data:`UNPINNED`: it
refuses to read the Hub and runs only from a mirror (``$HELMFLOW_MIRROR_<NAME>`` or
``$HELMFLOW_MIRROR``), so no unpinned bytes are ever evaluated.

Both specs are zero-shot with ``temperature=0``, ``instance_prefix="\\n"`` and no stop sequences
(HELM's multimodal adapter sends none). Instruction strings are paraphrases of
``vlm_run_specs.py``'s; the letter-only instruction and ``Answer: `` output prefix match its layout.
"""

from __future__ import annotations

from helmflow.records import AdapterSpec, GenerationParams
from helmflow.scenarios.base import UNPINNED, P, Scenario

__all__ = ["SNAPSHOT_PIN", "UNPINNED", "HubVisionScenario", "generation_spec", "multiple_choice_spec"]
#: Where the reference's candidate revisions come from (reference §A.8): not checked against the Hub.
SNAPSHOT_PIN = "revision read off stored Hub page snapshots (reference §A.8), never checked against the Hub"
#: HELM's EMset; the VHELM headline for these scenarios is quasi-prefix exact match.
EM_SET = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]
LETTER_ONLY = "Answer the multiple choice question by just giving the letter of the correct answer."


def multiple_choice_spec() -> AdapterSpec:
    """HELM's ``_get_multiple_choice_joint_adapter_spec``: letter-only, one output token."""
    return AdapterSpec(
        method="multiple_choice_joint", instructions=LETTER_ONLY, input_prefix="", input_suffix="\n",
        output_prefix="Answer: ", instance_prefix="\n", max_train_instances=0,
        generation=GenerationParams(max_tokens=1, temperature=0.0, stop=[]),
    )


def generation_spec(instructions: str, max_tokens: int) -> AdapterSpec:
    """HELM's ``_get_generation_adapter_spec``."""
    return AdapterSpec(
        method="generation", instructions=instructions, input_prefix="", input_suffix="\n",
        output_prefix="Answer: ", instance_prefix="\n", max_train_instances=0,
        generation=GenerationParams(max_tokens=max_tokens, temperature=0.0, stop=[]),
    )


class HubVisionScenario(Scenario[P]):
    """A VHELM scenario read from Parquet files of a pinned Hub revision, images embedded."""

    main_metric = "quasi_prefix_exact_match"
    metrics = EM_SET

    def where(self, filename: str, index: int) -> str:
        """How errors name a dataset row."""
        return f"{self.HUB_REPO} {filename} row {index}"
