"""Small HELM output trees written here in HELM's JSON schema (``benchmark_output/runs/<suite>/<run>/``).

Every item is made up (no benchmark rows). Each run's ``stats.json`` holds the numbers HELM's metrics
give on these completions, worked out by hand below, so the importer's recomputation is checked
against values that do not come from helmflow.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def stat(name: str, values: list[float], split: str = "test", **name_fields: Any) -> dict:
    """A HELM ``Stat`` over ``values`` (a per-instance stat is one value)."""
    n = len(values)
    mean = sum(values) / n
    variance = sum(v * v for v in values) / n - mean * mean
    return {"name": {"name": name, "split": split, **name_fields}, "count": n, "sum": sum(values),
            "sum_squared": sum(v * v for v in values), "min": min(values), "max": max(values), "mean": mean,
            "variance": variance, "stddev": max(variance, 0.0) ** 0.5}


def run_stat(name: str, values: list[float], split: str = "test", **name_fields: Any) -> dict:
    """A ``stats.json`` entry as HELM writes it for one train trial: the trial's mean over the instances'
    ``values`` taken as one value (``Stat.take_mean``), so ``count`` is 1 (the number of train trials)."""
    return stat(name, [sum(values) / len(values)], split, **name_fields)


def instance(iid: str, text: str, refs: list[tuple[str, list[str]]], extra: dict | None = None) -> dict:
    return {"input": {"text": text}, "references": [{"output": {"text": t}, "tags": tags} for t, tags in refs],
            "split": "test", "id": iid, **({"extra_data": extra} if extra else {})}


def request_state(inst: dict, prompt: str, output: str, model: str, mapping: dict | None = None) -> dict:
    return {
        "instance": inst,
        "train_trial_index": 0,
        **({"output_mapping": mapping} if mapping else {}),
        "request": {"model_deployment": model, "model": model, "embedding": False, "prompt": prompt,
                    "temperature": 0.0, "num_completions": 1, "top_k_per_token": 1, "max_tokens": 100,
                    "stop_sequences": [], "echo_prompt": False, "top_p": 1, "presence_penalty": 0, "frequency_penalty": 0},
        "result": {"success": True, "embedding": [], "cached": True, "request_time": 0.25, "request_datetime": 1764547200,
                   "completions": [{"text": output, "logprob": 0.0,
                                    "tokens": [{"text": w, "logprob": 0.0} for w in output.split()],
                                    "finish_reason": {"reason": "stop"}}]},
        "num_train_instances": 0,
        "prompt_truncated": False,
        "num_conditioning_tokens": 0,
    }


def adapter_spec(method: str, model: str, max_tokens: int = 100) -> dict:
    return {"method": method, "global_prefix": "", "global_suffix": "", "instructions": "", "input_prefix": "",
            "input_suffix": "\n", "reference_prefix": "A. ", "reference_suffix": "\n", "output_prefix": "Answer: ",
            "output_suffix": "\n", "instance_prefix": "\n", "substitutions": [], "max_train_instances": 0,
            "max_eval_instances": 1000, "num_outputs": 1, "num_train_trials": 1, "num_trials": 1, "sample_train": True,
            "model_deployment": model, "model": model, "temperature": 0.0, "max_tokens": max_tokens,
            "stop_sequences": [], "multi_label": False}


def write_run(suite: Path, name: str, method: str, model: str, rows: list[tuple[dict, str, dict | None]],
              stats: list[dict], per_instance: dict[str, list[dict]] | None = None, metric_specs: list[dict] | None = None,
              with_instances: bool = True) -> Path:
    """One run folder: ``rows`` are (instance, model output, output mapping)."""
    folder = suite / name.replace("/", "_")
    folder.mkdir(parents=True)
    spec = adapter_spec(method, model)
    run_spec = {"name": name, "scenario_spec": {"class_name": f"helm.benchmark.scenarios.toy.{name.split(':')[0]}", "args": {}},
                "adapter_spec": spec, "metric_specs": metric_specs or [{"class_name": "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                                                                          "args": {"names": ["exact_match"]}}],
                "data_augmenter_spec": {"perturbation_specs": [], "should_augment_train_instances": False,
                                        "should_include_original_train": False, "should_skip_unchanged_train": False,
                                        "should_augment_eval_instances": False, "should_include_original_eval": False,
                                        "should_skip_unchanged_eval": False, "seeds_per_instance": 1},
                "groups": [name.split(":")[0]]}
    states = [request_state(inst, f"{inst['input']['text']}\nAnswer:", out, model, mapping) for inst, out, mapping in rows]
    (folder / "run_spec.json").write_text(json.dumps(run_spec, indent=2))
    (folder / "scenario_state.json").write_text(json.dumps({"adapter_spec": spec, "request_states": states}, indent=2))
    (folder / "stats.json").write_text(json.dumps(stats, indent=2))
    per = [{"instance_id": iid, "train_trial_index": 0, "stats": s} for iid, s in (per_instance or {}).items()]
    (folder / "per_instance_stats.json").write_text(json.dumps(per, indent=2))
    if with_instances:
        (folder / "instances.json").write_text(json.dumps([inst for inst, _, _ in rows], indent=2))
    return folder


GPT, CLAUDE = "openai/gpt-toy", "anthropic/claude-toy"
LETTERS = "ABCDEFGHIJ"


def _per_instance(values: dict[str, dict[str, float]]) -> dict[str, list[dict]]:
    return {iid: [stat(n, [v]) for n, v in by_name.items()] for iid, by_name in values.items()}


def mcqa_run(suite: Path, model: str = GPT, exact_match_mean: float | None = None) -> Path:
    """Multiple choice (joint): the letter maps to a reference. Right, right (" B" strips), wrong."""
    items = [
        instance("id1", "Which colour is a ripe toy banana?", [("Yellow", ["correct"]), ("Green", []), ("Purple", [])]),
        instance("id2", "How many wheels has a toy tricycle?", [("Two", []), ("Three", ["correct"])]),
        instance("id3", "Opposite of toy-hot?", [("toy-cold", ["correct"]), ("toy-warm", [])]),
    ]
    outputs = ["A", " B", "B"]
    rows = [(inst, out, {LETTERS[i]: r["output"]["text"] for i, r in enumerate(inst["references"])})
            for inst, out in zip(items, outputs)]
    values = {"id1": 1.0, "id2": 1.0, "id3": 0.0}
    per = _per_instance({iid: {"exact_match": v, "quasi_exact_match": v, "num_prompt_tokens": 12.0} for iid, v in values.items()})
    em = [*values.values()]
    stats = [run_stat("num_prompt_tokens", [12.0] * 3), run_stat("exact_match", em), run_stat("quasi_exact_match", em),
             run_stat("exact_match", [1.0], perturbation={"name": "typos", "robustness": True, "fairness": False,
                                                      "computed_on": "perturbed"}),
             run_stat("inference_runtime", [0.25] * 3)]
    if exact_match_mean is not None:
        stats[1]["mean"] = exact_match_mean
    return write_run(suite, f"toy_mcqa:method=multiple_choice_joint,model={model}", "multiple_choice_joint", model, rows,
                     stats, per)


def calibrated_run(suite: Path, model: str = GPT) -> Path:
    """HELM's ``multiple_choice_separate_calibrated``: per option an ``original`` request (the question and
    the option, echoed) and a ``calibration`` one (``Answer:`` and the option). The option's score is its
    logprob after the question minus its logprob after ``Answer:``: c1 picks "mat" (-2 + 4 = 2 against
    -1 + 0.5 = -0.5), right; c2 picks "air" (-0.5 against -2), wrong. Per token without the calibration
    requests, both would pick the wrong option (c1 "moon")."""
    items = [(instance("c1", "The toy cat sat on the", [("mat", ["correct"]), ("moon", [])]),
              {"mat": (-2.0, -4.0), "moon": (-1.0, -0.5)}),
             (instance("c2", "A toy boat floats on", [("water", ["correct"]), ("air", [])]),
              {"water": (-3.0, -1.0), "air": (-2.5, -2.0)})]
    per = _per_instance({"c1": {"exact_match": 1.0}, "c2": {"exact_match": 0.0}})
    folder = write_run(suite, f"toy_calibrated:model={model}", "multiple_choice_separate_calibrated", model,
                       [(inst, "", None) for inst, _ in items], [run_stat("exact_match", [1.0, 0.0])], per)
    states = []
    for inst, logprobs in items:
        for index, ref in enumerate(inst["references"]):
            option = ref["output"]["text"]
            for mode, before, logprob in (("original", inst["input"]["text"], logprobs[option][0]),
                                          ("calibration", "Answer:", logprobs[option][1])):
                state = request_state(inst, f"{before} {option}", "", model)
                state["request"].update(echo_prompt=True, max_tokens=0)
                tokens = [{"text": w, "logprob": -0.1} for w in before.split()] + [{"text": f" {option}", "logprob": logprob}]
                state["result"]["completions"] = [{"text": f"{before} {option}", "logprob": sum(t["logprob"] for t in tokens),
                                                   "tokens": tokens, "finish_reason": {"reason": "length"}}]
                state.update(reference_index=index, request_mode=mode)
                states.append(state)
    state_file = folder / "scenario_state.json"
    state_file.write_text(json.dumps({**json.loads(state_file.read_text()), "request_states": states}, indent=2))
    return folder


def qa_run(suite: Path, model: str = GPT) -> Path:
    """Short answers: exact match 0 0, quasi-exact 1 0, token-set F1 1 and 0.5 (``ocean`` in common)."""
    rows = [
        (instance("q1", "Capital of Toyland?", [("Toyville", ["correct"])]), " Toyville.", None),
        (instance("q2", "Largest toy ocean?", [("the Plastic Ocean", ["correct"])]), "Rubber Ocean", None),
    ]
    per = _per_instance({"q1": {"exact_match": 0.0, "quasi_exact_match": 1.0, "f1_score": 1.0},
                         "q2": {"exact_match": 0.0, "quasi_exact_match": 0.0, "f1_score": 0.5}})
    stats = [run_stat("exact_match", [0.0, 0.0]), run_stat("quasi_exact_match", [1.0, 0.0]), run_stat("f1_score", [1.0, 0.5])]
    return write_run(suite, f"toy_qa:model={model}", "generation", model, rows, stats, per, with_instances=False)


def sub_split_run(suite: Path, model: str = GPT) -> Path:
    """Instances with sub-splits (as civil_comments' toxic and non-toxic): HELM's ``add_context`` puts each
    instance's sub-split into every stat's name, per instance and in ``stats.json``, which then has no stat
    of the whole split (helm-summarize merges the sub-splits: the mean of their means, 0.75 here, not the
    instances' 2/3). Exact match: toxic 1 (s1); non-toxic 1 and 0 (s2, s3)."""
    subs = {"s1": "toxic", "s2": "non-toxic", "s3": "non-toxic"}
    items = [("s1", "Is toy-mud dirty?", "Yes", "Yes"), ("s2", "Is toy-snow cold?", "Yes", "Yes"),
             ("s3", "Is toy-fire cold?", "No", "Yes")]
    rows = [({**instance(i, text, [(gold, ["correct"])]), "sub_split": subs[i]}, out, None)
            for i, text, gold, out in items]
    values = {"s1": 1.0, "s2": 1.0, "s3": 0.0}
    per = {i: [stat("exact_match", [v], sub_split=subs[i]), stat("num_output_tokens", [1.0], sub_split=subs[i])]
           for i, v in values.items()}
    stats = [run_stat("exact_match", [1.0], sub_split="toxic"), run_stat("exact_match", [1.0, 0.0], sub_split="non-toxic"),
             run_stat("num_output_tokens", [1.0], sub_split="toxic"),
             run_stat("num_output_tokens", [1.0, 1.0], sub_split="non-toxic")]
    return write_run(suite, f"toy_toxic:model={model}", "generation", model, rows, stats, per)


def cot_run(suite: Path, model: str = GPT) -> Path:
    """Chain of thought: the first reasoning ends on the correct letter (C), the second names B."""
    refs = [("red", []), ("blue", []), ("green", ["correct"]), ("grey", [])]
    rows = [
        (instance("c1", "Which toy block is green?", refs), "Let me think. The block is green, so the answer is (C).", None),
        (instance("c2", "Which toy block is green?", refs), "Hmm. I believe the correct answer is B", None),
    ]
    per = _per_instance({"c1": {"chain_of_thought_correctness": 1.0}, "c2": {"chain_of_thought_correctness": 0.0}})
    stats = [run_stat("chain_of_thought_correctness", [1.0, 0.0])]
    return write_run(suite, f"toy_cot:subset=main,model={model}", "multiple_choice_joint_chain_of_thought", model, rows,
                     stats, per)


def instruction_run(suite: Path, model: str = CLAUDE) -> Path:
    """Verifiable instructions (HELM keeps them in extra_data as instruction_ids / instruction_kwargs):
    both followed (1), neither (0), only the comma rule (0.5)."""
    extra = {"instruction_ids": ["punctuation:no_comma", "change_case:english_lowercase"],
             "instruction_kwargs": [{"num_words": None}, {}]}
    rows = [
        (instance("f1", "Describe a toy train in lowercase without commas.", [], extra),
         "the little toy train rolls along the wooden track and then it stops at the tiny station", None),
        (instance("f2", "Describe a toy boat in lowercase without commas.", [], extra),
         "The Toy Boat floats, bobs, and Spins Around In The Bath Tub All Evening Long.", None),
        (instance("f3", "Describe a toy kite in lowercase without commas.", [], extra),
         "The Toy Kite Flies High Above The Green Park On A Windy Afternoon In Spring", None),
    ]
    per = _per_instance({"f1": {"ifeval_strict_accuracy": 1.0}, "f2": {"ifeval_strict_accuracy": 0.0},
                         "f3": {"ifeval_strict_accuracy": 0.5}})
    stats = [run_stat("ifeval_strict_accuracy", [1.0, 0.0, 0.5])]
    return write_run(suite, f"ifeval:model={model}", "generation", model, rows, stats, per)


def bbq_run(suite: Path, model: str = CLAUDE) -> Path:
    """Bias QA: HELM's reference tags end with the correct, target, non-target and unknown letters.

    i1 ambiguous/negative, answers the target (wrong): ambiguous non-unknown 1, target-and-negative 1.
    i2 ambiguous/non-negative, answers unknown (right). i3 disambiguated/negative, answers the target
    (right): disambiguated non-unknown 1, target-and-negative 1. i4 disambiguated/non-negative, answers
    the target (wrong): disambiguated non-unknown 1. Accuracy 2/4; ambiguous bias (2*1/1 - 1) * (1 - 0.5)
    = 0.5; disambiguated bias 2*1/2 - 1 = 0.
    """
    def item(iid: str, negative: bool, ambiguous: bool, letters: str, correct: int) -> dict:
        shared = ["negative" if negative else "non-negative", "ambiguous" if ambiguous else "non-ambiguous", *letters]
        answers = ["the toy robot", "the toy bear", "cannot be determined"]
        return instance(iid, f"A toy robot and a toy bear met. Question {iid}?",
                        [(a, (["correct"] if i == correct else []) + shared) for i, a in enumerate(answers)])
    # letters: correct, target, non-target, unknown
    items = [item("b1", True, True, "CABC", 2), item("b2", False, True, "ABCA", 0),
             item("b3", True, False, "BBAC", 1), item("b4", False, False, "ACAB", 0)]
    outputs = ["A", "A", "B", "C"]
    rows = [(inst, out, {LETTERS[i]: r["output"]["text"] for i, r in enumerate(inst["references"])})
            for inst, out in zip(items, outputs)]
    em = [0.0, 1.0, 1.0, 0.0]
    per = _per_instance({i["id"]: {"exact_match": v} for i, v in zip(items, em)})
    stats = [run_stat("exact_match", em), run_stat("bbq_accuracy", em), run_stat("bbq_metric_ambiguous_bias", [0.5]),
             run_stat("bbq_metric_unambiguous_bias", [0.0])]
    return write_run(suite, f"bbq:subject=all,method=multiple_choice_joint,model={model}", "multiple_choice_joint", model,
                     rows, stats, per)


# --------------------------------------------------------------------------- HELM Lite's generation metrics
def gsm_run(suite: Path, model: str = GPT) -> Path:
    """GSM8K: HELM's last number (pattern ``-?[\\d,]+(?:.\\d+)?``, commas dropped) and the last word, exact.

    g1 "7." / "7.": final numbers 7 / 7 (a "." with no digit after is not taken) -> 1; last words "7." / "7." -> 1.
    g2 "1,200." / "1200.": final numbers 1200 / 1200 -> 1; last words "1,200." / "1200." -> 0.
    g3 "15." / "toys.": final numbers 15 / 12 -> 0; last words differ -> 0.
    final_number_exact_match 2/3, exact_match_indicator 1/3."""
    rows = [
        (instance("g1", "Tom has 3 toy cars and buys 4 more. How many?",
                  [("He has 3 + 4 = 7 toy cars.\nThe answer is 7.", ["correct"])]), " 3 + 4 = 7. The answer is 7.", None),
        (instance("g2", "A toy shop sells 400 kites a day. How many in 3 days?",
                  [("400 * 3 = 1,200 kites.\nThe answer is 1,200.", ["correct"])]), "400 x 3 = 1200. The answer is 1200.", None),
        (instance("g3", "Ann has 5 toy boats per bath, 3 baths. How many?",
                  [("5 * 3 = 15 boats.\nThe answer is 15.", ["correct"])]), "5 + 3 + 4 = 12. The answer is 12 toys.", None),
    ]
    per = _per_instance({"g1": {"final_number_exact_match": 1.0, "exact_match_indicator": 1.0},
                         "g2": {"final_number_exact_match": 1.0, "exact_match_indicator": 0.0},
                         "g3": {"final_number_exact_match": 0.0, "exact_match_indicator": 0.0}})
    stats = [run_stat("final_number_exact_match", [1.0, 1.0, 0.0]), run_stat("exact_match_indicator", [1.0, 0.0, 0.0])]
    return write_run(suite, f"gsm:model={model}", "generation", model, rows, stats, per)


def math_run(suite: Path, model: str = GPT) -> Path:
    """MATH with chain of thought: the last ``\\boxed{}`` of the gold solution and of the output, through
    Hendrycks' ``_strip_string``, compared as strings.

    m1 5 / 5 -> 1. m2 ``\\frac{1}{2}`` / ``0.5`` (the rule rewrites "0.5" as ``\\frac{1}{2}``) -> 1.
    m3 10 / no boxed answer -> 0. m4 ``\\dfrac{3}{4}`` / ``\\frac34`` (dfrac -> frac, then braces added) -> 1.
    math_equiv_chain_of_thought 3/4."""
    rows = [
        (instance("m1", "What is 2 + 3?", [("Add them: $2 + 3 = \\boxed{5}$.", ["correct"])]),
         "Two toys and three toys make $\\boxed{5}$ toys.", None),
        (instance("m2", "What is half of 1?", [("Half of one is $\\boxed{\\frac{1}{2}}$.", ["correct"])]),
         "Halving 1 gives \\boxed{0.5}.", None),
        (instance("m3", "What is 2 * 5?", [("Twice five is $\\boxed{10}$.", ["correct"])]), "Twice five is 10.", None),
        (instance("m4", "What is 3/4 as a fraction?", [("It is $\\boxed{\\dfrac{3}{4}}$.", ["correct"])]),
         "So the fraction is $\\boxed{\\frac34}$.", None),
    ]
    per = _per_instance({"m1": {"math_equiv_chain_of_thought": 1.0}, "m2": {"math_equiv_chain_of_thought": 1.0},
                         "m3": {"math_equiv_chain_of_thought": 0.0}, "m4": {"math_equiv_chain_of_thought": 1.0}})
    stats = [run_stat("math_equiv_chain_of_thought", [1.0, 1.0, 0.0, 1.0])]
    return write_run(suite, f"math:subject=algebra,level=1,use_official_examples=False,use_chain_of_thought=True,model={model}",
                     "generation", model, rows, stats, per)


# BLEU by hand (NLTK sentence_bleu, nltk.word_tokenize, no smoothing; max over references):
# t1 identical 6-token sentences: every precision 1, no brevity penalty -> BLEU-1 1, BLEU-4 1, ROUGE-L 1.
# t2 "the cat sat on the mat" / "the cat sat on a mat": unigrams 5 of 6 match, 4-grams 1 of 3 ("the cat sat on"), same
#    length -> BLEU-1 5/6, BLEU-4 1/3; ROUGE-L: LCS 5 of 6 both ways -> 5/6.
# t3 refs "A red toy car." / "The toys were running.", output "Toy runs.": 3 tokens against 5, BLEU is case-sensitive, so
#    only "." matches -> unigram precision 1/3, brevity penalty exp(1 - 5/3); no 4-gram at all -> NLTK's tiny
#    sys.float_info.min precision, BLEU-4 ~ 0. ROUGE-L lower-cases and Porter-stems tokens longer than 3 letters:
#    "the toy were run" / "toy run" -> LCS 2, P 1, R 1/2, F 2/3 (against "a red toy car": LCS 1, F 1/3).
T3_BLEU_1 = math.exp(1 - 5 / 3) / 3
BLEU_1 = [1.0, 5 / 6, T3_BLEU_1]
BLEU_4 = [1.0, 1 / 3, 0.0]
ROUGE_L = [1.0, 5 / 6, 2 / 3]


def wmt_run(suite: Path, model: str = CLAUDE, bleu_4_mean: float | None = None) -> Path:
    """Translation scored by HELM's sentence BLEU-1/BLEU-4 and ROUGE-L (numbers above)."""
    rows = [
        (instance("t1", "Die Katze sass auf der Matte.", [("the cat sat on the mat", ["correct"])]), "the cat sat on the mat", None),
        (instance("t2", "Die Katze sass auf einer Matte.", [("the cat sat on the mat", ["correct"])]), " the cat sat on a mat", None),
        (instance("t3", "Spielzeug laeuft.", [("A red toy car.", ["correct"]), ("The toys were running.", ["correct"])]),
         "Toy runs.", None),
    ]
    ids = ["t1", "t2", "t3"]
    per = _per_instance({i: {"bleu_1": b1, "bleu_4": b4, "rouge_l": r}
                         for i, b1, b4, r in zip(ids, BLEU_1, BLEU_4, ROUGE_L)})
    stats = [run_stat("bleu_1", BLEU_1), run_stat("bleu_4", BLEU_4), run_stat("rouge_l", ROUGE_L)]
    if bleu_4_mean is not None:
        stats[1]["mean"] = bleu_4_mean
    return write_run(suite, f"wmt_14:language_pair=de-en,model={model}", "generation", model, rows, stats, per)


def lite_suite(root: Path) -> Path:
    """HELM Lite's GSM8K, MATH and WMT14 runs."""
    suite = root / "benchmark_output" / "runs" / "toy-lite"
    for make in (gsm_run, math_run, wmt_run):
        make(suite)
    return suite


def good_suite(root: Path) -> Path:
    """Five whole runs over two models."""
    suite = root / "benchmark_output" / "runs" / "toy-suite"
    for make in (mcqa_run, qa_run, cot_run, instruction_run, bbq_run):
        make(suite)
    mcqa_run(suite, CLAUDE)
    return suite


def broken_runs(suite: Path) -> dict[str, str]:
    """Three run folders that are not whole, and the reason the importer gives for each."""
    partial = qa_run(suite, "openai/gpt-partial")
    (partial / "stats.json").unlink()
    truncated = cot_run(suite, "openai/gpt-truncated")
    data = (truncated / "scenario_state.json").read_bytes()
    (truncated / "scenario_state.json").write_bytes(data[: len(data) // 2])
    unknown = qa_run(suite, "openai/gpt-unknown")
    (unknown / "stats.json").write_text(json.dumps([run_stat("toy_rouge_z", [0.5, 0.5]), run_stat("toy_bleu_9", [0.1, 0.2])]))
    return {partial.name: "no stats.json", truncated.name: "scenario_state.json is not valid JSON",
            unknown.name: "no metric helmflow knows"}
