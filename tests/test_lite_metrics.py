"""HELM Lite's metrics on hand-computed edge cases, through the registry as scoring calls them:
GSM8K's final number, MATH's boxed-answer equivalence (math-verify beside it), BLEU-1/4 (HELM's
sentence-level NLTK BLEU), sacreBLEU corpus BLEU pooled over instances, ROUGE-L, F1 over references."""

from __future__ import annotations

import math

import pytest

from helmflow.metrics import METRICS, Metric, MetricInput, MissingExtra
from helmflow.metrics.math_cot import boxed_answer, last_boxed_only_string, strip_string
from helmflow.metrics.reference import final_number
from helmflow.metrics.text_overlap import word_tokenize
from helmflow.records import AdapterSpec, Completion, Input, Instance, Reference, Request, RequestBody
from helmflow.scoring import score_instances, summarize


def _input(golds: list[str], outputs: list[str], ident: str = "i") -> tuple[Instance, list[Request], list[Completion]]:
    instance = Instance(id=ident, input=Input(text="q"), references=[Reference(text=g, correct=True) for g in golds])
    body = RequestBody(model="m", prompt="q", max_tokens=5, temperature=0)
    requests = [Request(request_hash=f"{ident}{k}", instance_id=ident, split="test", sample_index=k, body=body)
                for k in range(len(outputs))]
    completions = [Completion(request_hash=f"{ident}{k}", text=t) for k, t in enumerate(outputs)]
    return instance, requests, completions


def run(name: str, golds: list[str], output: str) -> dict[str, float]:
    instance, requests, completions = _input(golds, [output])
    return METRICS.get(name).fn(MetricInput(instance, requests, completions, AdapterSpec()))


# --------------------------------------------------------------------------- GSM8K
@pytest.mark.parametrize(
    "text, number",
    [
        ("She has 3 + 4 = <<3+4=7>>7 apples. The answer is 7.", "7"),  # the trailing period is not a decimal
        ("The answer is 1,200.", "1200"),                              # commas removed
        ("I think 5, no wait: 6 eggs", "6"),                           # the last match wins
        ("It is -12 degrees", "-12"),
        ("costs 2.50 dollars", "2.50"),
        ("3x4", "3x4"),                                                # HELM's unescaped "." takes any character
        ("Well, no", ""),                                              # a lone comma matches, then is removed
        ("no digits here", ""),
    ],
)
def test_final_number_extraction(text, number):
    assert final_number(text) == number


@pytest.mark.parametrize(
    "gold, output, expected",
    [
        ("She has 3 + 4 = <<3+4=7>>7 apples. The answer is 7.", "3 and 4 make 7. The answer is 7 apples.", 1.0),
        ("The answer is 1,200.", "So 1200", 1.0),
        ("The answer is -5.", "The answer is 5.", 0.0),
        ("The answer is 2.5.", "The answer is 2.50.", 0.0),  # compared as strings, not values
        ("The answer is 7.", "I do not know.", 0.0),          # no number in the output
        ("The answer is 7.", "", 0.0),
    ],
)
def test_final_number_exact_match(gold, output, expected):
    assert run("final_number_exact_match", [gold], output) == {"final_number_exact_match": expected}


# --------------------------------------------------------------------------- MATH
GOLD_HALF = "Half of the cake is left, so the answer is $\\boxed{\\frac{1}{2}}$."


@pytest.mark.parametrize(
    "gold, output, expected",
    [
        (GOLD_HALF, "So $\\boxed{0.5}$.", 1.0),                          # 0.5 -> \frac{1}{2}
        (GOLD_HALF, "$\\boxed{\\dfrac12}$", 1.0),                        # dfrac -> frac, \frac12 -> \frac{1}{2}
        (GOLD_HALF, "\\boxed{1/2}", 1.0),                                # a/b -> \frac{a}{b}
        (GOLD_HALF, "\\boxed{.5}", 1.0),                                 # leading "." gets a 0, then 0.5
        (GOLD_HALF, "\\boxed{\\frac{2}{4}}", 0.0),                       # strings, not values
        (GOLD_HALF, "First \\boxed{3}, then \\boxed{\\frac{1}{2}}", 1.0),  # the last box counts
        (GOLD_HALF, "First \\boxed{\\frac{1}{2}}, then \\boxed{3}", 0.0),
        (GOLD_HALF, "The answer is 1/2.", 0.0),                          # no box in the output
        (GOLD_HALF, "\\fbox{\\frac{1}{2}}", 0.0),                        # \fbox is found but HELM's remove_boxed refuses it
        (GOLD_HALF, "\\boxed{\\frac{1}{2}", 0.0),                        # unbalanced: no answer
        ("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\boxed{\\frac{\\sqrt3}{2}}", 1.0),  # nested braces; \sqrt3 -> \sqrt{3}
        ("\\boxed{10}", "\\boxed{10\\text{ cm}}", 1.0),                  # right-hand units dropped
        ("\\boxed{90}", "\\boxed{90^\\circ}", 1.0),
        ("\\boxed{5}", "\\boxed{x = 5}", 1.0),                           # a short "x =" prefix dropped
        ("\\boxed{(1,2)}", "\\boxed{\\left( 1, 2 \\right)}", 1.0),
        ("\\boxed{50}", "\\boxed{50\\%}", 1.0),
        ("\\boxed{1\\text{ m}\\text{ s}}", "\\boxed{1\\text{ m}\\text{ s}}", 1.0),  # two units raise: raw strings compared
        ("\\boxed{1\\text{ m}\\text{ s}}", "\\boxed{1}", 0.0),
        ("No box in the reference.", "No box here either.", 1.0),       # HELM's "Both None" case
        ("\\boxed{5}", "\\boxed 5", 0.0),                                # no brace after \boxed
    ],
)
def test_math_equiv_chain_of_thought(gold, output, expected):
    assert run("math_equiv_chain_of_thought", [gold], output) == {"math_equiv_chain_of_thought": expected}


def test_math_extraction_and_stripping_helpers():
    assert last_boxed_only_string("a \\boxed{x^{2}} b \\boxed{\\{1,2\\}} c") == "\\boxed{\\{1,2\\}}"
    assert last_boxed_only_string("\\fbox{3}") == "\\fbox{3}"  # \fbox only when there is no \boxed
    assert boxed_answer("\\fbox{3} and \\boxed{4}") == "4"
    assert boxed_answer(None) is None
    assert strip_string("\\frac1{72}") == "\\frac{1}{72}"
    assert strip_string("k = \\tfrac{3}{4}") == "\\frac{3}{4}"
    assert strip_string("\\$ 4.") == "4."
    with pytest.raises(IndexError):
        strip_string("2\\sqrt")  # HELM's is_equiv then compares the raw answers


@pytest.mark.slow  # starts math-verify's helper process (SymPy import)
def test_math_verify_is_a_second_stat_that_forgives_forms():
    pytest.importorskip("math_verify")
    assert run("math_verify_chain_of_thought", ["\\boxed{\\frac{1}{4}}"], "\\boxed{0.25}") == {"math_verify_equiv": 1.0}
    assert run("math_equiv_chain_of_thought", ["\\boxed{\\frac{1}{4}}"], "\\boxed{0.25}") == {"math_equiv_chain_of_thought": 0.0}
    assert run("math_verify_chain_of_thought", ["\\boxed{\\frac{1}{4}}"], "\\boxed{0.2}") == {"math_verify_equiv": 0.0}
    assert run("math_verify_chain_of_thought", ["\\boxed{3}"], "3") == {"math_verify_equiv": 0.0}  # no box


# --------------------------------------------------------------------------- BLEU, ROUGE-L
def test_word_tokenize_is_nltks():
    assert word_tokenize("It's Mr. Smith's cat, isn't it?") == ["It", "'s", "Mr.", "Smith", "'s", "cat", ",", "is", "n't", "it", "?"]


@pytest.mark.parametrize(
    "name, gold, output, expected",
    [
        ("bleu_4", "the cat sat on the mat", "the cat sat on the mat", 1.0),
        # 4-grams of the output: "the cat sat on" matches, "cat sat on a" and "sat on a mat" do not; same length
        ("bleu_4", "the cat sat on the mat", "the cat sat on a mat", 1 / 3),
        # 2 output tokens against 6: 4-gram precision 0 -> NLTK's tiny float; BLEU-1: precision 1 x exp(1 - 6/2)
        ("bleu_4", "the cat sat on the mat", "the cat", 0.0),
        ("bleu_1", "the cat sat on the mat", "the cat", math.exp(-2)),
        ("bleu_1", "the cat sat on the mat", "", 0.0),
        # longer output, no brevity penalty: 7 tokens, "the" clipped to the reference's 2 -> 6/7
        ("bleu_1", "the cat sat on the mat", "the the the cat sat on mat", 6 / 7),
        # stems: the, cat, were, run vs the, cat, run: LCS 3, P 1, R 3/4 -> F 6/7
        ("rouge_l", "The cats were running", "the cat runs", 6 / 7),
        ("rouge_l", "abc", "xyz", 0.0),
        ("rouge_l", "abc", "", 0.0),
        # same stems: 3 shared unigrams of 4 and 3 -> 6/7; bigrams the-cat shared of 3 and 2 -> P 1/2, R 1/3 -> 2/5
        ("rouge_1", "The cats were running", "the cat runs", 6 / 7),
        ("rouge_2", "The cats were running", "the cat runs", 2 / 5),
        ("rouge_1", "abc", "", 0.0),
        ("rouge_2", "abc", "abc", 0.0),  # one token: no bigram on either side, rouge-score gives 0
        ("rouge_2", "A b, c!", "a B c", 1.0),  # lower-cased, punctuation is not a token
    ],
)
def test_overlap_metrics(name, gold, output, expected):
    assert run(name, [gold], output) == pytest.approx({name: expected}, abs=1e-12)


def test_overlap_metrics_take_the_best_reference():
    assert run("bleu_4", ["completely different words here", "the cat sat on the mat"], "the cat sat on the mat") == {"bleu_4": 1.0}
    assert run("f1_score", ["New York City", "NYC"], "nyc.") == {"f1_score": 1.0}
    assert run("rouge_2", ["x y z", "the cat sat"], "the cat sat") == {"rouge_2": 1.0}


def test_corpus_bleu_pools_counts_over_instances_and_differs_from_helms_bleu_4():
    sacrebleu = pytest.importorskip("sacrebleu")
    pairs = [("the cat sat on the mat", "the cat sat on a mat"), ("a b c d e", "a b c d e"), ("one two three", "one two")]
    instances, requests, completions = [], [], []
    for k, (gold, output) in enumerate(pairs):
        inst, reqs, comps = _input([gold], [output], ident=f"i{k}")
        instances.append(inst)
        requests += reqs
        completions += comps
    stats = score_instances(instances, requests, completions, AdapterSpec(), ["sacrebleu", "bleu_4"])
    summary = {m.name: m.mean for m in summarize(stats)}
    # hand count (13a tokens): 1-4-gram matches/totals 5/6 3/5 2/4 1/3 + 5/5 4/4 3/3 2/2 + 2/2 1/1 0/0 0/0;
    # lengths 13 vs 14 -> brevity penalty exp(1 - 14/13)
    precisions = [12 / 13, 8 / 10, 5 / 7, 3 / 5]
    expected = 100 * math.exp(1 - 14 / 13) * math.exp(sum(math.log(p) for p in precisions) / 4)
    assert summary["sacrebleu_corpus_bleu"] == pytest.approx(expected)
    assert summary["sacrebleu_corpus_bleu"] == pytest.approx(sacrebleu.corpus_bleu([o for _, o in pairs], [[g for g, _ in pairs]]).score)
    # HELM's BLEU-4: sentence 4-gram precision only, averaged: (1/3 + 1 + ~0) / 3
    assert summary["bleu_4"] == pytest.approx((1 / 3 + 1 + 0) / 3)


def test_lite_metrics_name_their_extra():
    for name in ("bleu_1", "bleu_4", "rouge_l", "sacrebleu", "math_verify_chain_of_thought"):
        assert METRICS.get(name).extra == "lite"
    missing = Metric(name="x", fn=lambda x: {}, version="1", requires=("no_such_module_xyz",), extra="lite")
    with pytest.raises(MissingExtra, match=r"pip install -e '[^']*\[lite\]'"):
        missing.check_installed()


@pytest.mark.slow
def test_first_use_from_many_threads_at_once():
    """Runs score on worker threads at once: a board scoring IFEval, the bias metric and the Lite BLEU/ROUGE/sacreBLEU
    metrics imports NLTK from all of them. Their first calls from 8 threads together, in a fresh interpreter (nothing
    imported yet), must neither fail nor differ (NLTK's first import is not thread-safe; one lock serves them all)."""
    import subprocess
    import sys

    code = """
import threading
from helmflow.metrics.bias import instance_counts
from helmflow.metrics.ifeval_text import count_sentences, detect_language, word_tokenize
from helmflow.metrics.text_overlap import bleu_4_score, rouge_l_score, sufficient_statistics
gold, pred = "the cat sat on the mat", "the cat sat on a mat"
work_of = [
    lambda: bleu_4_score(gold, pred),
    lambda: rouge_l_score(gold, pred),
    lambda: sufficient_statistics([gold], pred)["sacrebleu_correct_4"],
    lambda: count_sentences("He left. She sat on the mat. Done."),
    lambda: len(word_tokenize("Don't stop; the cat's mat.")),
    lambda: instance_counts(["The man was a doctor.", "Her son is a nurse."])["bias_count:gender:male"],
    lambda: detect_language("the cat sat on the mat and looked at the dog"),
    lambda: len(word_tokenize("Dr. Smith sat.")),
]
barrier, out, errors = threading.Barrier(8), {}, []
def work(k):
    barrier.wait()
    try:
        out[k] = work_of[k]()
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print([round(out[k], 6) if isinstance(out.get(k), float) else out.get(k) for k in range(8)], errors)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert result.stdout.strip() == "[0.333333, 0.833333, 1.0, 3, 9, 2, 'en', 4] []", result.stdout + result.stderr
