"""The one lock every metric's first import of NLTK (and of what imports it) is taken under.

Runs of a board score on worker threads at the same time. A first import of NLTK (or of rouge-score, which
imports NLTK) from two threads at once can hand one of them a partially initialised module ("cannot import
name ... from partially initialized module 'nltk.util'"). Python's per-module import locks do not prevent it
(NLTK's package imports are circular), so the Lite metrics (BLEU, ROUGE-L, sacreBLEU), IFEval's tokenizers and
the bias metric all load their libraries through :func:`first_use`, which serialises those loads on one lock.
One lock for all of them, not one per module: a board scoring IFEval and ROUGE-L at once imports NLTK from both.
"""

from __future__ import annotations

import threading
from functools import lru_cache, wraps

IMPORT_LOCK = threading.RLock()  # re-entrant: one loader calls another (the Punkt tokenizer loads its parameters)


def first_use(load):
    """``load`` run once, under :data:`IMPORT_LOCK`; later calls return its result without waiting."""
    cached = lru_cache(maxsize=1)(load)

    @wraps(load)
    def get():
        if cached.cache_info().currsize:
            return cached()
        with IMPORT_LOCK:
            return cached()

    return get
