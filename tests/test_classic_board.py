"""The HELM Classic board: its seven tables, `reproduce classic --explain`, `show classic` offline, and
`helmflow run classic` end to end through the CLI on mirrored fixtures (served on 127.0.0.1, mirrored by
`helmflow mirror classic`) against the dev server and an offline baseline, on a real Prefect server."""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.aggregate import rank
from helmflow.outcomes import RunOutcome
from helmflow.scenarios.mmlu import LITE_SUBJECTS
from helmflow.scenarios.truthful_qa import helm_options
from helmflow.scenarios.wikifact import PROPERTIES
from tests.support.classic_fixtures import (
    ASSETS,
    classic_hub_mirrors,
    classic_source_tree,
    perturbation_assets,
    truthful_qa_rows,
)
from tests.support.cli import REPO, run_cli
from tests.support.devserver import FAST_RETRY
from tests.support.lite_fixtures import serve

# HELM's core run groups on the board, in schema_classic's order, with their main metrics
COLUMNS = {"mmlu": "exact_match", "boolq": "quasi_exact_match", "narrative_qa": "f1_score",
           "natural_qa_closedbook": "f1_score", "natural_qa_openbook_longans": "f1_score", "quac": "f1_score",
           "hellaswag": "exact_match", "openbookqa": "exact_match", "truthful_qa": "exact_match",
           "msmarco_regular": "RR@10", "msmarco_trec": "NDCG@10", "summarization_cnndm": "rouge_2",
           "summarization_xsum": "rouge_2", "imdb": "quasi_exact_match", "civil_comments": "quasi_exact_match",
           "raft": "quasi_exact_match"}
DEMOGRAPHICS = ["all", "male", "female", "LGBTQ", "christian", "muslim", "other_religions", "black", "white"]
HARMS = ("copyright", "disinformation", "bold", "real_toxicity_prompts")  # HELM's harms scenarios on the board
# the end-to-end run's entries: every adapter method, metric and group kind of the board, half its runs
# HELM's harms entries the end-to-end run covers: copyright, disinformation's reiteration, RealToxicityPrompts
HARMS_SELECTED = ["copyright_text-popular_books", "disinformation_reiteration-covid", "real_toxicity_prompts"]
SELECTED = ["mmlu-abstract_algebra", "mmlu-econometrics", "boolq", "boolq_contrast", "quac", "hellaswag",
            "openbookqa", "truthful_qa", "msmarco_regular", "summarization_cnndm", "summarization_xsum", "imdb", "imdb_contrast", "civil_comments-all",
            "civil_comments-female", "raft-twitter_complaints", "twitter_aae-aa", "legal_support", "wikifact-author",
            "blimp-irregular_forms", "synthetic_reasoning_natural-easy", "entity_matching-Beer",
            "entity_data_imputation-Restaurant", "the_pile-Enron_Emails", "code_humaneval", "code_apps",
            "synthetic_efficiency-256-8", *HARMS_SELECTED, "ice-hk", "math_regular-algebra", "bbq"]
GENERATION = ["boolq", "narrative_qa", "natural_qa_closedbook", "natural_qa_openbook_longans", "quac",
              "summarization_cnndm", "summarization_xsum", "imdb", "civil_comments", "raft"]
N = 3  # evaluation instances per run
SUMMARIZATION = ["summarization_cnndm", "summarization_xsum"]
CONTRAST = ["boolq_contrast", "imdb_contrast"]  # HELM's robustness_contrast_sets runs
TARGETED = ["twitter_aae-aa", "legal_support", "wikifact-author", "blimp-irregular_forms",
            "synthetic_reasoning_natural-easy", "entity_matching-Beer", "entity_data_imputation-Restaurant",
            "the_pile-Enron_Emails", "code_humaneval", "code_apps",
            "synthetic_efficiency-256-8", *HARMS_SELECTED, "ice-hk", "math_regular-algebra", "bbq"]  # targeted evaluations on the board (outside the headline)
# the scenarios of HELM's targeted evaluations on the board (outside the headline)
TARGETED_SCENARIOS = ("twitter_aae", "legal_support", "lsat_qa", "wikifact", "babi_qa", "blimp",
                      "synthetic_reasoning_natural", "entity_matching", "entity_data_imputation", "the_pile",
                      "humaneval", "apps", "synthetic_efficiency", *HARMS, "ice",
                      "synthetic_reasoning", "dyck_language", "gsm", "math", "bbq", "med_qa", "self_instruct", "grammar",
                      "open_assistant", "vicuna", "koala", "anthropic_hh_rlhf")
# the dev server under a name HELM has a denoised-runtime table for (HELM keys its tables by deployment name)
DEV = "openai/davinci"
HELM_RUNTIMES = json.loads((REPO / "tests" / "data" / "helm_denoised_runtime.json").read_text())["cases"]  # HELM: no calibration, robustness or fairness


def test_the_board_has_helms_seven_tables_each_with_its_win_rate():
    from helmflow.plan.spec import load_board

    spec = load_board("classic")
    assert spec.aggregation == ["win_rate"] and spec.max_instances == 1000
    assert spec.board_wide == {"bias": True, "toxicity": "local/profanity-check"}
    groups = {g.name: g for g in spec.metric_groups}
    assert list(groups) == ["accuracy", "calibration", "robustness", "fairness", "efficiency", "toxicity",
                            "summarization", "robustness_contrast_sets", "language", "reasoning", "knowledge",
                            "targeted_efficiency", "medicine", "harms", "instruction_following"]
    assert [(c.scenario, c.metric) for c in groups["accuracy"].columns] == list(COLUMNS.items())
    ranking = ["msmarco_regular", "msmarco_trec"]  # HELM shows no calibration for them
    assert [c.scenario for c in groups["calibration"].columns] == [
        s for s in COLUMNS if s not in ranking + SUMMARIZATION]
    for name, metric, lower in (("robustness", "robustness", False),
                                ("fairness", "fairness", False), ("efficiency", "inference_denoised_runtime", True)):
        assert [(c.scenario, c.metric, c.lower_is_better) for c in groups[name].columns] == [
            (s, metric, lower) for s in COLUMNS if name == "efficiency" or s not in SUMMARIZATION]
    assert [(c.scenario, c.metric) for c in groups["summarization"].columns] == [
        (s, f"summarization_{m}") for s in SUMMARIZATION for m in ("coverage", "density", "compression")]
    assert [(c.scenario, c.lower_is_better) for c in groups["toxicity"].columns] == [(s, True) for s in GENERATION]
    # HELM's robustness_contrast_sets runs (only_contrast, data_augmentation=contrast_sets), outside the headline
    contrast = [s for s in spec.scenarios if not s.headline and s.name not in TARGETED_SCENARIOS]
    assert [(s.label, s.name, s.params, s.perturbations) for s in contrast] == [
        (f"{n}_contrast", n, {"only_contrast": True}, "contrast_sets") for n in ("boolq", "imdb")]
    # targeted evaluations: HELM's twitter_aae entries, in the language table, outside the headline
    assert [(s.label, s.group, s.params) for s in spec.scenarios if s.name == "twitter_aae"] == [
        (f"twitter_aae-{d}", "twitter_aae", {"demographic": d}) for d in ("aa", "white")]
    assert [(c.scenario, c.metric, c.lower_is_better) for c in groups["language"].columns] == [
        (lab, "bits_per_byte", True) for lab in ("twitter_aae", "twitter_aae-aa", "twitter_aae-white", "the_pile", "ice")] + [
        ("blimp", "exact_match", False)]
    assert [(s.label, s.params, s.headline) for s in spec.scenarios if s.name == "ice"] == [
        (f"ice-{v}", {k: v}, False) for k, v in (("subset", "ea"), ("subset", "hk"), ("subset", "ind"), ("subset", "usa"),
                                                 ("gender", "female"), ("gender", "male"))]
    assert [(s.label, s.params, s.group, s.headline) for s in spec.scenarios if s.name == "the_pile"] == [
        (f"the_pile-{lab}", {"subset": sub}, "the_pile", False) for sub, lab in (
            ("ArXiv", "ArXiv"), ("BookCorpus2", "BookCorpus2"), ("Enron Emails", "Enron_Emails"), ("Github", "Github"),
            ("PubMed Central", "PubMed_Central"), ("Wikipedia (en)", "Wikipedia_en"))]
    assert [(s.label, s.group, s.headline) for s in spec.scenarios if s.name == "blimp"] == [
        (f"blimp-{p}", "blimp", False) for p in ("irregular_forms", "quantifiers", "island_effects", "binding")]
    assert [(c.scenario, c.metric) for c in groups["reasoning"].columns] == [
        ("legal_support", "quasi_exact_match"), ("lsat_qa", "quasi_exact_match"), ("babi_qa", "quasi_exact_match"),
        ("synthetic_reasoning", "quasi_exact_match"), ("synthetic_reasoning_natural", "f1_set_match"),
        ("dyck_language", "exact_match_indicator"), ("gsm", "exact_match_indicator"), ("math_regular", "math_equiv"),
        ("math_chain_of_thought", "math_equiv_chain_of_thought"), ("entity_matching", "quasi_exact_match"),
        ("entity_data_imputation", "quasi_exact_match"), ("code_humaneval", "pass"), ("code_apps", "test_avg")]
    # HELM's priority-2 synthetic_reasoning and dyck_language entries, HELM's generators at their default sizes
    assert [(s.label, s.params, s.group, s.headline) for s in spec.scenarios
            if s.name in ("synthetic_reasoning", "dyck_language")] == [
        (f"synthetic_reasoning-{m}", {"mode": m}, "synthetic_reasoning", False)
        for m in ("pattern_match", "variable_substitution", "induction")] + [
        ("dyck_language-3", {"num_parenthesis_pairs": 3}, "dyck_language", False)]
    assert [(s.label, s.params, s.headline) for s in spec.scenarios if s.name.startswith("entity_")] == [
        (f"entity_matching-{d}", {"dataset": d}, False) for d in ("Beer", "Abt_Buy", "Dirty_iTunes_Amazon")] + [
        (f"entity_data_imputation-{d}", {"dataset": d}, False) for d in ("Buy", "Restaurant")]
    assert [(s.label, s.params, s.group, s.headline) for s in spec.scenarios if s.name == "synthetic_reasoning_natural"] == [
        (f"synthetic_reasoning_natural-{d}", {"difficulty": d}, "synthetic_reasoning_natural", False)
        for d in ("easy", "hard")]
    # HELM's code entries (code:dataset=humaneval, code:dataset=apps), scored by running the programs in the jail
    assert [(s.label, s.name, s.headline) for s in spec.scenarios if s.name in ("humaneval", "apps")] == [
        ("code_humaneval", "humaneval", False), ("code_apps", "apps", False)]
    assert [(s.label, s.params, s.headline) for s in spec.scenarios if s.name == "babi_qa"] == [
        (f"babi_qa-{t}", {"task": t}, False) for t in ("all", "3", "15", "19")]
    assert [(s.params, s.headline) for s in spec.scenarios if s.name in ("legal_support", "lsat_qa")] == [
        ({}, False), ({"task": "all"}, False)]
    wikifact = [s for s in spec.scenarios if s.name == "wikifact"]
    assert [s.params["subject"] for s in wikifact] == list(PROPERTIES) and {s.group for s in wikifact} == {"wikifact"}
    assert not any(s.headline for s in wikifact)
    assert [(c.scenario, c.metric) for c in groups["knowledge"].columns] == [
        ("wikifact", "quasi_exact_match"), ("wikifact", "quasi_exact_match@k")]
    # HELM's synthetic_efficiency sweep: 5 prompt sizes x 7 output lengths, one group
    assert [(s.params, s.group, s.headline) for s in spec.scenarios if s.name == "synthetic_efficiency"] == [
        ({"num_prompt_tokens": p, "num_output_tokens": o}, "synthetic_efficiency", False)
        for p in (1, 256, 512, 1024, 1536) for o in (1, 2, 4, 8, 16, 32, 64)]
    assert [(c.scenario, c.metric, c.lower_is_better) for c in groups["targeted_efficiency"].columns] == [
        ("synthetic_efficiency", m, True) for m in ("inference_denoised_runtime", "latency_s")]
    # harms: HELM's priority-1 and -2 entries, outside the headline; HELM's schema's directions (edit distance
    # higher, the copyright others and toxicity lower; self-BLEU and entropy unordered, so not ranked)
    harms = [(s.name, s.params, s.group, s.headline) for s in spec.scenarios if s.name in HARMS]
    assert harms == [("copyright", {"datatag": "n_books_1000-extractions_per_book_1-prefix_length_125"}, "copyright_text",
                      False), ("copyright", {"datatag": "popular_books-prefix_length_125.json"}, "copyright_text", False),
                     ("copyright", {"datatag": "prompt_num_line_1-min_lines_20.json"}, "copyright_code", False),
                     ("copyright", {"datatag": "prompt_num_line_10-min_lines_20.json"}, "copyright_code", False),
                     ("disinformation", {"capability": "reiteration", "topic": "climate"}, "disinformation_reiteration",
                      False), ("disinformation", {"capability": "reiteration", "topic": "covid"},
                               "disinformation_reiteration", False),
                     ("disinformation", {"capability": "wedging"}, None, False), ("bold", {"subject": "all"}, None, False),
                     ("real_toxicity_prompts", {}, None, False)]
    copyright_columns = [("longest_common_prefix_length", True), ("edit_distance", False), ("edit_similarity", True)]
    assert [(c.scenario, c.metric, c.lower_is_better) for c in groups["harms"].columns] == [
        *((s, m, lower) for s in ("copyright_text", "copyright_code") for m, lower in copyright_columns),
        *((s, m, None) for s in ("disinformation_reiteration", "disinformation_wedging")
          for m in ("self_bleu", "monte_carlo_entropy")),
        ("bbq", "quasi_exact_match", False), ("bbq", "bbq_metric_ambiguous_bias", True),
        ("bbq", "bbq_metric_unambiguous_bias", True), ("bold", "toxic_fraction", True),
        *(("real_toxicity_prompts", m, True) for m in ("toxic_fraction", "expected_max_toxicity",
                                                       "max_toxicity_probability"))]
    assert [(c.scenario, c.metric) for c in groups["robustness_contrast_sets"].columns] == [
        (f"{n}_contrast", m) for n in ("imdb", "boolq") for m in ("quasi_exact_match", "robustness")]
    # the XSum column runs what HELM's conf runs: summarization_xsum_sampled (HELM's xsum-sampled.pk)
    assert [s.name for s in spec.scenarios if s.label == "summarization_xsum"] == ["summarization_xsum_sampled"]
    by_group = {}
    for s in spec.scenarios:
        if not s.headline:
            continue
        by_group.setdefault(s.group or s.label, []).append(s)
        # HELM's canonical: mild_mix, and the fairness set with the dialect perturbation
        assert s.perturbations == (None if s.label in SUMMARIZATION else ["robustness", "fairness", "dialect"])
    assert [s.label for s in by_group["mmlu"]] == [f"mmlu-{s}" for s in LITE_SUBJECTS]
    assert [s.params["demographic"] for s in by_group["civil_comments"]] == DEMOGRAPHICS
    assert len(by_group["raft"]) == 11 and by_group["raft"][0].label == "raft-ade_corpus_v2"
    assert by_group["openbookqa"][0].adapter["method"] == "multiple_choice_separate_calibrated"
    deployments = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    [nightly] = [d for d in deployments if d["name"] == "classic-nightly"]
    assert nightly["entrypoint"] == "flows/classic.py:classic"


# HELM's run_entries.conf (v0.5.16, the pre-v0.2.4 Classic conf the targeted entries come from) at --priority 2:
# its 121 entries per model (before the model= expander), by run-spec function
HELM_CONF_ENTRIES = {
    "mmlu": 5, "boolq": 2, "narrative_qa": 1, "natural_qa": 2, "quac": 1, "commonsense": 2, "truthful_qa": 1,
    "msmarco": 2, "summarization_cnndm": 1, "summarization_xsum_sampled": 1, "imdb": 2, "civil_comments": 9,
    "raft": 11, "the_pile": 6, "ice": 6, "twitter_aae": 2, "blimp": 4, "wikifact": 10, "babi_qa": 4,
    "synthetic_reasoning": 3, "synthetic_reasoning_natural": 2, "dyck_language": 1, "gsm": 1, "math": 14,
    "code": 2, "lsat_qa": 1, "legal_support": 1, "entity_matching": 3, "entity_data_imputation": 2, "med_qa": 1,
    "copyright": 4, "disinformation": 3, "bbq": 1, "bold": 1, "real_toxicity_prompts": 1,
    "synthetic_efficiency": 2, "self_instruct": 1, "grammar": 1, "open_assistant": 1, "vicuna": 1, "koala": 1,
    "anthropic_hh_rlhf": 1,
}
HELM_FUNCTION = {"hellaswag": "commonsense", "openbookqa": "commonsense", "humaneval": "code", "apps": "code"}
# the conf's entries not on the board, each said in `reproduce classic --explain`: the synthetic_efficiency
# sweep's copy for code models (the same 35 runs)
NOT_ON_BOARD = {"synthetic_efficiency": 1}
INSTRUCT = {"self_instruct": {}, "grammar": {"path": "src/helm/benchmark/scenarios/best_chatgpt_prompts.yaml", "tags": ""},
            "open_assistant": {"language": "en"}, "vicuna": {"category": "all"}, "koala": {},
            "anthropic_hh_rlhf": {"subset": "hh"}}  # HELM's conf's arguments
SWEEP = 35  # one synthetic_efficiency entry: HELM's default_sweep expanders, 5 prompt sizes x 7 output lengths


def test_the_board_has_every_entry_of_helms_conf():
    """Per model: HELM's 121 priority-2 entries are the board's entries (HELM's one sweep entry is its 35 runs;
    its code models' copy of the sweep is named as left out); MATH's 14 are its seven subjects at level 1, with
    official examples and with chain of thought, GSM8K's and BBQ's one each; the six instruction-following
    entries with HELM's arguments, outside the headline, in a table of their own led by Helpfulness."""
    from collections import Counter

    from helmflow.plan.spec import load_board

    spec = load_board("classic")
    assert sum(HELM_CONF_ENTRIES.values()) == 121
    on_board = Counter(HELM_FUNCTION.get(s.name, s.name) for s in spec.scenarios)
    assert on_board["synthetic_efficiency"] == SWEEP
    on_board["synthetic_efficiency"] = 1
    assert on_board + Counter(NOT_ON_BOARD) == Counter(HELM_CONF_ENTRIES)
    assert len(spec.scenarios) == 121 - sum(NOT_ON_BOARD.values()) + SWEEP - 1 == 154
    instruct = {s.name: s for s in spec.scenarios if s.name in INSTRUCT}
    assert {n: e.params for n, e in instruct.items()} == INSTRUCT
    assert not any(e.headline for e in instruct.values())
    table = {g.name: g for g in spec.metric_groups}["instruction_following"]
    assert [(c.scenario, c.metric) for c in table.columns[:6]] == [(n, "Helpfulness") for n in sorted(INSTRUCT)]
    assert {c.metric for c in table.columns} == {"Helpfulness", "Understandability", "Completeness", "Conciseness",
                                                 "Harmlessness"} and len(table.columns) == 30
    subjects = ["number_theory", "intermediate_algebra", "algebra", "prealgebra", "geometry",
                "counting_and_probability", "precalculus"]  # HELM's conf's order
    math = [(s.label, s.params, s.group, s.headline) for s in spec.scenarios if s.name == "math"]
    assert math == [(f"math_regular-{m}", {"subject": m, "level": 1, "use_chain_of_thought": False,
                                           "use_official_examples": True}, "math_regular", False) for m in subjects] + [
        (f"math_chain_of_thought-{m}", {"subject": m, "level": 1}, "math_chain_of_thought", False) for m in subjects]
    [gsm] = [s for s in spec.scenarios if s.name == "gsm"]
    assert (gsm.params, gsm.main_metric, gsm.headline) == ({}, "exact_match_indicator", False)  # no follow_format
    assert [(s.label, s.params, s.headline) for s in spec.scenarios if s.name == "med_qa"] == [("med_qa", {}, False)]
    assert [(c.scenario, c.metric) for c in {g.name: g for g in spec.metric_groups}["medicine"].columns] == [
        ("med_qa", "quasi_exact_match")]
    [bbq] = [s for s in spec.scenarios if s.name == "bbq"]
    assert (bbq.main_metric, bbq.headline, bbq.adapter["max_train_instances"]) == ("quasi_exact_match", False, 5)
    assert bbq.adapter["instructions"] == "The following are multiple choice questions (with answers)."
    assert "bbq" in bbq.metrics and "quasi_exact_match" in bbq.metrics


def _outcome(label: str, model: str, score: float) -> RunOutcome:
    return RunOutcome(run_id=f"{model}-{label}", scenario=label, deployment=model, status="complete", uri="",
                      main_metric="m", score=score, ci_low=None, ci_high=None, error_rate=0.0, cost_usd=0.0,
                      prompt_tokens=0, output_tokens=0)


def test_an_entry_outside_the_headline_keeps_its_column_but_is_not_ranked():
    """HELM's headline is the core scenarios' accuracy: a contrast-set run (``headline: false``) has its
    column and group, and the mean score and mean win rate are those of the others alone."""
    scores = {("a", "core1"): 0.9, ("a", "core2"): 0.2, ("a", "side"): 0.0,
              ("b", "core1"): 0.1, ("b", "core2"): 0.8, ("b", "side"): 1.0}
    cells = {k: _outcome(k[1], k[0], v) for k, v in scores.items()}
    labels = ["core1", "core2", "side"]
    everything = {r["deployment"]: r for r in rank(["a", "b"], labels, cells)}
    core = {r["deployment"]: r for r in rank(["a", "b"], labels, cells, headline=["core1", "core2"])}
    assert everything["b"]["mean_win_rate"] == pytest.approx(2 / 3)  # b wins core2 and side
    assert core["a"]["mean_win_rate"] == core["b"]["mean_win_rate"] == pytest.approx(0.5)
    assert core["a"]["mean_score"] == pytest.approx(0.55) and core["b"]["side"] == 1.0
    grouped = {r["deployment"]: r for r in rank(["a", "b"], labels, cells, headline=["core1", "core2"],
                                                groups={"core": ["core1", "core2"], "side": ["side"]})}
    # the core group's means are 0.55 and 0.45; counting the side group too would tie them at 0.5
    assert (grouped["a"]["mean_win_rate"], grouped["b"]["mean_win_rate"]) == (1.0, 0.0)
    assert grouped["b"]["group:side"] == 1.0


def helm_denoised(deployment: str, prompt: int, output: int) -> float:
    """HELM's denoised-runtime estimate written out again from its table (efficiency_metrics.py)."""
    fit = json.loads((REPO / "metrics" / "data" / "inference_denoised_runtimes.json").read_text())[deployment]
    sizes = sorted(int(k) for k in fit["runtime_for_prompt_tokens"])
    key = next((k for k in sizes if prompt <= k), sizes[-1])
    value = fit["runtime_for_prompt_tokens"][str(key)] * prompt / key
    return value + (fit["runtime_per_output_token"] * (output - 1) if output > 0 else 0.0) + fit.get("overhead", 0.0)


def test_denoised_runtime_is_helms():
    """crfm-helm's own estimate on 455 cases (benchmarks/helm_denoised_runtime_parity.py): every tabulated
    prompt size and its neighbours, past the largest, 0 and 1 output tokens; no table: None."""
    from helmflow.metrics.efficiency import denoised_runtime

    assert len(HELM_RUNTIMES) == 455 and sum(c["helm"] is None for c in HELM_RUNTIMES) == 65
    for c in HELM_RUNTIMES:
        ours = denoised_runtime(c["deployment"], c["prompt_tokens"], c["output_tokens"])
        assert ours == (None if c["helm"] is None else pytest.approx(c["helm"], rel=1e-12)), c
    assert helm_denoised("openai/davinci", 700, 64) == pytest.approx(denoised_runtime("openai/davinci", 700, 64))


def test_reproduce_classic_explains_every_difference_from_helm():
    out = run_cli("reproduce", "classic", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    for needle in ("Classic before v0.2.4 (run_entries.conf) averaged three draws", "HELM's recipe from v0.2.4 on",
                   "all 16 of HELM Classic's core run groups", "summarization_xsum_sampled", "raft data:",
                   "dialect perturbation", "denoised runtime", "HELM Classic used Perspective",
                   "boolq: HELM reads the main branches", "civil_comments: WILDS' CSV", "hellaswag: HELM reads", "quac:", "imdb:",
                   "contrast sets:", "openbookqa:", "harms, copyright: HELM runs its two copyright_code entries",
                   "disinformation: HELM's human evaluations", "bold: amazon-research/bold at its commit",
                   "the_pile: HELM's test.jsonl.zst URL", "ice: the licensed subsets", "entity_matching: DeepMatcher's zips",
                   "synthetic_efficiency: the prompts of one tokenizer's files",
                   "instruction following: HELM's six instruction-following entries",
                   "without --judge their cells are not available", "left out: HELM's second synthetic_efficiency",
                   "HELM runs them for its instruction-following models only, model=instruction_following",
                   "HELM's critique client raises and the run fails", "HELM's by scenario",
                   "HELM's instruct run specs ask for the critique only",
                   "judges: none given (pass --judge <deployment>)", "koala: arnav-gudibande/koala-test-set at a commit",
                   "math: MATH was taken off the Hub", "bbq: HELM Classic's multiple-choice adapter"):
        assert needle in text, needle


def test_reproduce_classic_with_a_judge_says_where_helm_published_the_critiques():
    """Given a judge, the explanation names HELM's evaluators of the six instruction-following entries and that
    HELM published their ratings on HELM Instruct, not on the Classic board."""
    from helmflow.reproduce import differences, official_spec

    text = " ".join(differences(official_spec("classic", "v1"), ["openai/gpt-4o-2024-05-13"], "v1"))
    assert "judges: openai/gpt-4o-2024-05-13; HELM published classic with a jury of HELM Instruct's four" in text
    assert "ratings were published on HELM Instruct, Classic's published board has none of them" in text
    assert "judge templates: helmflow's own instruct_completeness" in text


def test_show_classic_works_offline_and_counts_the_runs(tmp_path):
    out = run_cli("show", "classic", env={"HELMFLOW_MIRROR": str(tmp_path / "none"), "HELMFLOW_STORAGE": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    # ICE's licensed subsets are on no mirror here: its six entries are left out, saying why
    assert "board classic: 148 scenarios + 146 perturbed copies x 1 model = 294 runs" in text
    assert "left out: ice-hk: ice-hk.zip is credential-gated and not on this machine: ICE is licensed" in text
    assert "not mirrored:" in text and "helmflow mirror classic --to DIR" in text
    # the instruction-following entries are judged, and the board names no judge: shown, not refused
    assert "│ koala │ none: its judged numbers are missing (--judge names judges) │ instruct_completeness v1" in text
    assert ("not fetched: SAE_to_AAVE_mapping.json, the data of perturbation(s) dialect (36 perturbed copies); a run "
            "stops until you run `helmflow fetch-assets perturbations`") in text


@pytest.mark.slow
def test_helmflow_run_classic_end_to_end_on_mirrored_fixtures(tmp_path, prefect_server, dev_server):
    started = time.monotonic()
    root = perturbation_assets(classic_source_tree(tmp_path / "src"))
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with serve(root) as host:
        out = run_cli("mirror", "classic", "--to", str(mirror), env={
            "HELMFLOW_SOURCE_HOST": host.url, "HELMFLOW_GITHUB_RAW": f"{host.url}/raw.githubusercontent.com",
            **classic_hub_mirrors(tmp_path / "hub")})
        assert out.returncode == 0, out.stdout + out.stderr
        # the dialect perturbation's SAE->AAVE mapping (HELM downloads it at run time; here our own words)
        out = run_cli("fetch-assets", "perturbations", "--storage", str(storage),
                      env={"HELMFLOW_ASSETS_URL": f"{host.url}/{ASSETS}"})
        assert out.returncode == 0, out.stdout + out.stderr
    # the dev server: this worker's, seen through a scope of this test's own
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": DEV, "client": "openai-compatible", "model": "model-x", "base_url": dev_server.openai_url,
         "options": {"endpoint": "completions"}, "logprobs": True, "retry": FAST_RETRY, "max_concurrency": 16}]}))
    out = run_cli("run", "classic", "--models", f"{DEV},offline/first-option", "--models-file", str(models),
                  "--scenarios", ",".join(SELECTED), "--max-instances", str(N), "--storage", str(storage),
                  env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    wall_s = time.monotonic() - started
    runs = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    labels = {r["scenario"]["label"] for r in runs}
    # the entries and their mild_mix copies (every fixture text has upper case); the fairness copies of the
    # entries whose sampled texts carry no pronoun or first name change nothing and are left out
    assert {lab for lab in labels if "~" not in lab} == set(SELECTED)
    assert all(f"{lab}~mild_mix" in labels for lab in SELECTED if lab not in SUMMARIZATION + CONTRAST + TARGETED)
    assert all(f"{lab}~contrast_sets" in labels and f"{lab}~mild_mix" not in labels for lab in CONTRAST)
    # HELM's fairness set has SAE->AAVE too: every boolq question has "the", which the fixture mapping maps
    assert "boolq~dialect" in labels
    latest = json.loads((storage / "leaderboards/classic/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    assert set(rows) == {DEV, "offline/first-option"}
    for row in rows.values():
        assert row["mean_win_rate"] == pytest.approx(row["accuracy mean_win_rate"])  # the headline is the accuracy table's
        assert row["group:civil_comments"] == pytest.approx((row["civil_comments-all"] + row["civil_comments-female"]) / 2)
        assert row["group:mmlu"] == pytest.approx((row["mmlu-abstract_algebra"] + row["mmlu-econometrics"]) / 2)
        # the contrast-set runs have their own table: the main metric and the worst case over it and its contrast
        for lab in CONTRAST:
            assert row[f"{lab}/quasi_exact_match"] == pytest.approx(row[lab])
            assert row[f"{lab}/robustness"] <= row[lab] + 1e-9
        assert row["robustness_contrast_sets mean_win_rate"] is not None
        assert row["boolq/fairness"] <= row["boolq"] + 1e-9
        assert row["twitter_aae/bits_per_byte"] == pytest.approx(row["twitter_aae-aa/bits_per_byte"])
        assert row["language mean_win_rate"] is not None
        assert row["legal_support/quasi_exact_match"] == pytest.approx(row["legal_support"])
        # WikiFact: five outputs per question; the best of them is at least the first
        assert row["wikifact/quasi_exact_match@k"] >= row["wikifact/quasi_exact_match"]
        assert row["group:synthetic_reasoning_natural"] == pytest.approx(
            row["synthetic_reasoning_natural/f1_set_match"])
        for column in ("entity_matching", "entity_data_imputation"):
            assert row[f"{column}/quasi_exact_match"] == pytest.approx(row[f"group:{column}"])
        # harms: the copyright numbers are divided by the prefix's tokens
        assert row["copyright_text/longest_common_prefix_length"] >= 0 and row["copyright_text/edit_distance"] >= 0
        assert row["harms mean_win_rate"] is not None
        # HELM Classic's math_regular after its eight official examples, and BBQ with its bias scores
        assert 0 <= row["math_regular/math_equiv"] <= 1 and row["group:math_regular"] == pytest.approx(row["math_regular/math_equiv"])
        assert row["bbq/quasi_exact_match"] == pytest.approx(row["bbq"]) and row["bbq/bbq_metric_ambiguous_bias"] is not None
        assert 0 <= row["blimp/exact_match"] <= 1 and row["group:blimp"] == pytest.approx(row["blimp/exact_match"])
        # the code scenarios: the programs ran in the jail and were scored (neither model writes a working one)
        assert row["code_humaneval/pass"] == row["code_humaneval"] == 0.0
        assert row["code_apps/test_avg"] == row["code_apps"] == 0.0
        for column, metric in COLUMNS.items():
            if column in ("narrative_qa", "natural_qa_closedbook", "natural_qa_openbook_longans", "msmarco_trec"):
                assert row.get(f"group:{column}") is None  # not selected
                continue
            assert row[f"{column}/{metric}"] == pytest.approx(row[f"group:{column}"])
            if column not in SUMMARIZATION:
                assert row[f"{column}/robustness"] <= row[f"group:{column}"] + 1e-9
            assert row[f"{column}/inference_denoised_runtime"] is not None
    # two models: each table's win rates sum to 1 (one wins a column, or they tie at 0.5 each)
    for table in ("accuracy", "robustness", "fairness", "efficiency"):
        assert sum(r[f"{table} mean_win_rate"] for r in rows.values()) == pytest.approx(1.0), table
    # the dev model returns logprobs, the offline baseline does not on generations: calibration n/a, said why
    assert rows[DEV]["boolq/ece_10_bin"] is not None and rows["offline/first-option"]["boolq/ece_10_bin"] is None
    assert "logprobs" in rows["offline/first-option"]["boolq/ece_10_bin note"]
    assert rows[DEV]["boolq/toxic_fraction"] is not None  # the dev model's outputs are scored
    # RealToxicityPrompts: five scored outputs per prompt, so the share of prompts whose most toxic output is toxic
    # is at least the toxic share of the outputs; the baseline's outputs are empty: nothing to score, no number
    rtp = {m: rows[DEV][f"real_toxicity_prompts/{m}"] for m in ("toxic_fraction", "max_toxicity_probability")}
    assert 0 <= rtp["toxic_fraction"] <= rtp["max_toxicity_probability"] <= 1
    assert rows["offline/first-option"]["real_toxicity_prompts/toxic_fraction"] is None
    # disinformation: the dev model's five headlines per thesis are the same text (self-BLEU 100) and it sends
    # logprobs (an entropy); the baseline's five are empty (self-BLEU 0, HELM's value for fewer than two; no entropy)
    assert rows[DEV]["disinformation_reiteration/self_bleu"] == pytest.approx(100.0)
    assert rows[DEV]["disinformation_reiteration/monte_carlo_entropy"] >= 0
    assert rows["offline/first-option"]["disinformation_reiteration/self_bleu"] == 0.0
    assert rows["offline/first-option"]["disinformation_reiteration/monte_carlo_entropy"] is None
    # hand-worked: the baseline answers A. TruthfulQA: of HELM's N sampled valid rows (ids 5-24, np.random.seed(0)
    # choice), the share whose correct option is first after HELM's rotation
    truthful = {f"id{5 + k}": helm_options(r[3], r[5])[0][1] for k, r in enumerate(truthful_qa_rows(25)[5:])}
    np.random.seed(0)
    chosen = np.random.choice(np.array(list(truthful), dtype=object), N, replace=False)
    assert rows["offline/first-option"]["truthful_qa"] == pytest.approx(sum(truthful[i] for i in chosen) / N)
    assert all(round(r["hellaswag"] * N, 9).is_integer() for r in rows.values())  # N sampled of 10 val rows
    # efficiency: HELM's denoised runtime for the deployment HELM has a table for, worked out again from the
    # run's requests and completions; the offline baseline has none and shows its measured seconds, saying so
    by_label = {(r["scenario"]["label"], r["deployment"]["name"]): r["run_id"] for r in runs}
    for label in ("boolq", "hellaswag"):  # a generation; one echo request per option (the prompt is not output)
        values = []
        requests = pq.read_table(storage / "runs" / by_label[(label, DEV)] / "requests.parquet").to_pylist()
        done = {(c["request_hash"], c["sample_index"]): c for c in
                pq.read_table(storage / "runs" / by_label[(label, DEV)] / "completions.parquet").to_pylist()}
        for r in requests:
            c = done[(r["request_hash"], r["sample_index"])]
            output = len(c["tokens"]) or c["output_tokens"]
            if json.loads(r["body_json"]).get("echo"):
                output = max(output - c["prompt_tokens"], 0) if c["prompt_tokens"] <= output else 0
            values.append(helm_denoised(DEV, c["prompt_tokens"], output))
        assert rows[DEV][f"{label}/inference_denoised_runtime"] == pytest.approx(sum(values) / len(values))
        assert rows[DEV][f"{label}/inference_denoised_runtime note"] is None
    assert rows[DEV]["ice/bits_per_byte"] == pytest.approx(rows[DEV]["group:ice"]) and rows[DEV]["group:ice"] > 0
    assert rows[DEV]["synthetic_efficiency/inference_denoised_runtime"] > 0
    assert rows[DEV]["synthetic_efficiency/latency_s"] > 0
    assert rows[DEV]["twitter_aae-aa/bits_per_byte"] > 0 and rows[DEV]["the_pile/bits_per_byte"] > 0  # the dev server echoes the tweet with its logprobs
    baseline = rows["offline/first-option"]
    completions = pq.read_table(storage / "runs" / by_label[("boolq", "offline/first-option")]
                                / "completions.parquet").to_pylist()
    assert baseline["boolq/inference_denoised_runtime"] == pytest.approx(
        sum(c["latency_s"] for c in completions) / len(completions))
    assert "measured seconds per request" in baseline["boolq/inference_denoised_runtime note"]
    print(f"classic board on fixtures: {len(runs)} runs, wall {wall_s:.1f} s")
