"""NLTK 3.8.1's tokenization rules on the installed NLTK: the tokenization IFEval's reference ran with.

The reference (2023) loads ``tokenizers/punkt/english.pickle``, the pickled model that NLTK 3.8.2
replaced by ``punkt_tab``; HELM pinned ``nltk<3.8.2`` when that happened (August 2024). So the
reference's numbers come from NLTK 3.8.1. Later NLTK changed what its rules see, and with them
sentence, word and capital-word counts:

- Punkt treats curly quotes and guillemets like ASCII quotes, so ``He said “Stop.” Then`` becomes
  two sentences where 3.8.1 keeps one;
- the word tokenizer splits at en/em dashes (``HELLO—WORLD`` is two capital words, one in 3.8.1),
  splits every leading apostrophe (``'TIS`` -> ``'`` ``TIS`` rather than ``'T`` ``IS``) and folds
  whitespace runs;
- every pattern is compiled with the third-party ``regex`` engine (``nltk.redos``), whose ``\\w``
  also matches combining marks: ``\\w+`` finds 6 words in a Hindi sentence where Python's ``re``,
  and so the reference, finds 11.

The classes here restore the 3.8.1 patterns, compiled with ``re`` as 3.8.1 did (tables copied from
NLTK 3.8.1, Apache-2.0), and keep the installed NLTK's algorithms, which did not change. One
pattern uses a possessive quantifier as later NLTK does, against quadratic backtracking; the spans
it matches are unchanged. ``tests/data/ifeval_nltk381.jsonl`` holds NLTK 3.8.1's own output
for a generated corpus, and the tests compare against it. Imported lazily (``import nltk`` is slow), only by
:mod:`helmflow.metrics.ifeval_text`'s loaders, under the shared lock of :mod:`helmflow.metrics.first_use`.
"""

from __future__ import annotations

import re

from nltk.tokenize.destructive import MacIntyreContractions, NLTKWordTokenizer
from nltk.tokenize.punkt import PunktLanguageVars, PunktToken


class PunktLanguageVars381(PunktLanguageVars):
    _re_word_tokenizer: re.Pattern
    _re_period_context: re.Pattern
    re_boundary_realignment = re.compile(r'["\')\]}]+?(?:\s+|(?=--)|$)', re.MULTILINE)

    @property
    def _re_non_word_chars(self) -> str:
        return r"(?:[)\";}\]\*:@\'\({\[%s])" % re.escape("".join(set(self.sent_end_chars) - {"."}))

    def _word_tokenizer_re(self) -> re.Pattern:
        try:
            return self._re_word_tokenizer
        except AttributeError:
            fmt = {"NonWord": self._re_non_word_chars, "MultiChar": self._re_multi_char_punct,
                   "WordStart": self._re_word_start}  # fmt: skip
            self._re_word_tokenizer = re.compile(self._word_tokenize_fmt % fmt, re.UNICODE | re.VERBOSE)
            return self._re_word_tokenizer

    def period_context_re(self) -> re.Pattern:
        try:
            return self._re_period_context
        except AttributeError:
            fmt = {"NonWord": self._re_non_word_chars, "SentEndChars": self._re_sent_end_chars}
            self._re_period_context = re.compile(self._period_context_fmt % fmt, re.UNICODE | re.VERBOSE)
            return self._re_period_context


_NON_PUNCT = re.compile(r"[^\W\d]", re.UNICODE)


class PunktToken381(PunktToken):
    __slots__ = ()
    _RE_ELLIPSIS = re.compile(r"\.\.+$")
    _RE_NUMERIC = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
    _RE_INITIAL = re.compile(r"[^\W\d]\.$", re.UNICODE)
    _RE_ALPHA = re.compile(r"[^\W\d]+$", re.UNICODE)

    @property
    def is_non_punct(self):
        return _NON_PUNCT.search(self.type)


class WordTokenizer381(NLTKWordTokenizer):
    STARTING_QUOTES = [
        (re.compile("([«“‘„]|[`]+)", re.U), r" \1 "),
        (re.compile(r"^\""), r"``"),
        (re.compile(r"(``)"), r" \1 "),
        (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
        (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", re.U), r"\1 \2"),
    ]
    ENDING_QUOTES = [
        (re.compile("([»”’])", re.U), r" \1 "),
        (re.compile(r"''"), " '' "),
        (re.compile(r'"'), " '' "),
        (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
        (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
    ]
    PUNCTUATION = [
        (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$", re.U), r"\1 \2 \3 "),
        (re.compile(r"([:,])([^\d])"), r" \1 \2"),
        (re.compile(r"([:,])$"), r" \1 "),
        (re.compile(r"\.{2,}", re.U), r" \g<0> "),
        (re.compile(r"[;@#$%&]"), r" \g<0> "),
        (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
        (re.compile(r"[?!]"), r" \g<0> "),
        (re.compile(r"([^'])' "), r"\1 ' "),
        (re.compile(r"[*]", re.U), r" \g<0> "),
    ]
    PARENS_BRACKETS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
    DOUBLE_DASHES = (re.compile(r"--"), r" -- ")
    CONTRACTIONS2 = [re.compile(p) for p in MacIntyreContractions.CONTRACTIONS2]
    CONTRACTIONS3 = [re.compile(p) for p in MacIntyreContractions.CONTRACTIONS3]
