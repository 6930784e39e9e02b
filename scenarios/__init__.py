"""The scenario registry. A benchmark is one module here plus one line in ``_BUILTIN`` (and its names in
``_NAMED`` when they are not the module's). A module is imported when one of its scenarios is first looked
up, so a board imports the modules of the scenarios it runs, not all of them."""

from __future__ import annotations

from typing import Any

from helmflow.registry import Registry
from helmflow.scenarios.base import DataSource, Scenario, ScenarioError

_BUILTIN = [
    "arithmetic",
    "synthetic_reasoning",
    "dyck",
    "custom",
    "mmlu_pro",
    "gpqa",
    "ifeval",
    "wildbench",
    "omni_math",
    "harm_bench",
    "simple_safety_tests",
    "xstest",
    "anthropic_red_team",
    "bbq",
    "vision_shapes",
    "common_syntactic_processes",
    "logos",
    "landing_page",
    "magazine_cover",
    "mental_disorders",
    "daily_dalle",
    "time_most_significant_historical_figures",
    "demographic_stereotypes",
    "mscoco",
    "parti_prompts",
    "draw_bench",
    "i2p",
    "relational_understanding",
    "detection",
    "winoground",
    "cub200",
    "mm_star",
    "image2struct",
    "mmmu",
    "pope",
    "a_okvqa",
    "exams_v",
    "competition_math",
    "legalbench",
    "wmt14",
    "gsm8k",
    "narrative_qa",
    "natural_qa",
    "openbookqa",
    "mmlu",
    "med_qa",
    "financial_phrasebank",
    "conv_fin_qa_calc",
    "casehold",
    "echr_judgment_classification",
    "legal_contract_summarization",
    "legal_opinion_sentiment_classification",
    "sumosum",
    "gold_commodity_news",
    "kpi_edgar",
    "cti_to_mitre",
    "fin_qa",
    "financebench",
    "banking77",
    "ewok",
    "air_bench",
    "tablebench",
    "turl_col_type",
    "wikitq",
    "tab_fact",
    "scigen",
    "numeric_nlg",
    "torr_fin_qa",
    "qtsumm",
    "medcalc_bench",
    "medec",
    "ehr_sql",
    "pubmed_qa",
    "boolq",
    "hellaswag",
    "truthful_qa",
    "civil_comments",
    "msmarco",
    "head_qa",
    "medbullets",
    "med_mcqa",
    "medication_qa",
    "med_dialog",
    "aci_bench",
    "quac",
    "imdb",
    "summarization",
    "mimiciv_billing_code",
    "medhallu",
    "race_based_med",
    "medi_qa",
    "raft",
    "mtsamples",
    "mimic_bhc",
    "shc",
    "mimic_rrs",
    "dischargeme",
    "n2c2_ct_matching",
    "ehrshot",
    "medalign",
    "clear",
    "chw_care_plan",
    "starr_patient_instructions",
    "mental_health",
    "twitter_aae",
    "legal_support",
    "lsat_qa",
    "wikifact",
    "babi_qa",
    "medhelm_configurable",
    "blimp",
    "synthetic_reasoning_natural",
    "entity_matching",
    "entity_data_imputation",
    "thai_exam",
    "copyright",
    "disinformation",
    "bold",
    "instruction_following",
    "real_toxicity_prompts",
    "the_pile",
    "humaneval",
    "apps",
    "alghafa",
    "arabic_mmlu",
    "arabic_exams",
    "madinah_qa",
    "aratrust",
    "mbzuai_human_translated_arabic_mmlu",
    "alrage",
    "synthetic_efficiency",
    "ruler_squad",
    "ruler_hotpotqa",
    "infinite_bench_en_mc",
    "infinite_bench_en_sum",
    "openai_mrcr",
    "ice",
]

# the modules whose scenarios are not named after the module (every other one registers its own name)
_NAMED: dict[str, tuple[str, ...]] = {
    "dyck": ("dyck_language",),
    "image2struct": ("image2latex", "image2webpage", "image2musicsheet"),
    "competition_math": ("math",),
    "wmt14": ("wmt_14",),
    "gsm8k": ("gsm",),
    "air_bench": ("air_bench_2024",),
    "summarization": ("summarization_cnndm", "summarization_xsum", "summarization_xsum_sampled"),
    "mtsamples": ("mtsamples_replicate", "mtsamples_procedures"),
    "shc": ("shc_med",),
    "medhelm_configurable": ("medhelm_configurable_benchmark",),
    "instruction_following": ("self_instruct", "grammar", "open_assistant", "vicuna", "koala", "anthropic_hh_rlhf"),
}

SCENARIOS: Registry[type[Scenario]] = Registry("scenario", {
    name: f"helmflow.scenarios.{module}" for module in _BUILTIN for name in _NAMED.get(module, (module,))})


def scenario(name: str):
    """Class decorator: register a :class:`Scenario` subclass under ``name``."""

    def deco(cls: type[Scenario]) -> type[Scenario]:
        cls.name = name
        SCENARIOS.add(name, cls)
        return cls

    return deco


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``name:k=v,k2=v2`` -> (name, params). Values stay strings; each scenario's Params types them."""
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ScenarioError(f"scenario spec {spec!r}: expected key=value, got {item!r}")
        params[key.strip()] = value.strip()
    return name.strip(), params


def get_scenario(name: str, params: dict[str, Any] | None = None) -> Scenario:
    return SCENARIOS.get(name)(**(params or {}))


__all__ = ["SCENARIOS", "DataSource", "Scenario", "ScenarioError", "get_scenario", "parse_spec", "scenario"]
