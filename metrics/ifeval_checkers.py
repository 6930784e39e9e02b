"""IFEval's 25 instruction checkers: small pure functions ``(response, kwargs) -> followed``.

Each reproduces ``check_following`` of the reference (google-research ``instruction_following_eval/
instructions.py``, copied verbatim by HELM), quirks included: keywords, forbidden words, section
splitters and postscript markers are used as *unescaped* regular expressions; the paragraph checks
split as the reference does and count empty pieces its way; language detection that cannot decide
counts as followed. The results must match the reference, not what would seem more sensible.

Where the reference *draws a random value* for a missing or out-of-range kwarg (and so is not
reproducible), the kwargs models here refuse it with a clear :class:`InstructionError` instead, so a
data row that would need a random draw fails to load, naming the row. Kwargs are validated once, when
the data is loaded, so bad input fails before a model is queried. ``null`` kwargs mean absent (HF's
column union fills them in).
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from helmflow.errors import MetricError
from helmflow.metrics.ifeval_text import count_sentences, count_words, detect_language, word_tokenize


class InstructionError(MetricError):
    """An unknown instruction id or kwargs the reference would not accept reproducibly."""


# --------------------------------------------------------------------------- kwargs
Relation = Literal["less than", "at least"]
Count = Annotated[StrictInt, Field(ge=0)]  # the reference replaces None or a negative count by a random one

# instructions_util.LANGUAGE_CODES: the reference looks the name up, so any other code is a KeyError there
LANGUAGE_CODES = (
    "en", "es", "pt", "ar", "hi", "fr", "ru", "de", "ja", "it", "bn", "uk", "th", "ur", "ta",
    "te", "bg", "ko", "pl", "he", "fa", "vi", "ne", "sw", "kn", "mr", "gu", "pa", "ml", "fi",
)  # fmt: skip


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is used as a regular expression by the reference and does not compile: {exc}")
    return pattern


Pattern = Annotated[StrictStr, AfterValidator(_compiles)]


def _stripped(value: str) -> str:
    return value.strip()


class Kwargs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoKwargs(Kwargs):
    pass


class KeywordsKw(Kwargs):
    keywords: list[Pattern] = Field(min_length=1)


class KeywordFrequencyKw(Kwargs):
    keyword: Annotated[StrictStr, Field(min_length=1), AfterValidator(_stripped), AfterValidator(_compiles)]
    frequency: Count
    relation: Relation


class ForbiddenWordsKw(Kwargs):
    forbidden_words: list[StrictStr] = Field(min_length=1)

    @model_validator(mode="after")
    def _patterns(self) -> ForbiddenWordsKw:
        for word in self.forbidden_words:
            _compiles(r"\b" + word + r"\b")
        return self


class LetterFrequencyKw(Kwargs):
    # HELM's copy draws a random letter for anything but one of a-z/A-Z (Google's current code would
    # take any single character): only where both agree is the result reproducible
    letter: Annotated[StrictStr, Field(pattern=r"^[A-Za-z]$")]
    let_frequency: Count
    let_relation: Relation


class LanguageKw(Kwargs):
    language: Literal[LANGUAGE_CODES]  # type: ignore[valid-type]


class SentencesKw(Kwargs):
    num_sentences: Count
    relation: Relation


class ParagraphsKw(Kwargs):
    num_paragraphs: Count


class WordsKw(Kwargs):
    num_words: Count
    relation: Relation


class NthParagraphKw(Kwargs):
    num_paragraphs: Count
    nth_paragraph: Annotated[StrictInt, Field(ge=1)]
    first_word: StrictStr

    @model_validator(mode="after")
    def _in_range(self) -> NthParagraphKw:
        if self.nth_paragraph > self.num_paragraphs:  # the reference then draws a random paragraph
            raise ValueError(f"nth_paragraph {self.nth_paragraph} is past num_paragraphs {self.num_paragraphs}")
        return self


class PlaceholdersKw(Kwargs):
    num_placeholders: Count


class PostscriptKw(Kwargs):
    postscript_marker: Annotated[StrictStr, AfterValidator(_stripped)]

    @model_validator(mode="after")
    def _pattern(self) -> PostscriptKw:
        if self.postscript_marker not in ("P.P.S", "P.S."):
            _compiles(self.postscript_marker.lower())
        return self


class BulletsKw(Kwargs):
    num_bullets: Count


class HighlightsKw(Kwargs):
    num_highlights: Count


class SectionsKw(Kwargs):
    section_spliter: Annotated[StrictStr, AfterValidator(_stripped), AfterValidator(_compiles)]
    num_sections: Count


class RepeatPromptKw(Kwargs):
    prompt_to_repeat: Annotated[StrictStr, Field(min_length=1)]


class EndPhraseKw(Kwargs):
    end_phrase: Annotated[StrictStr, AfterValidator(_stripped)]


class CapitalFrequencyKw(Kwargs):
    capital_frequency: StrictInt  # the reference accepts any int here (only None is replaced)
    capital_relation: Relation


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Instruction:
    id: str
    kwargs: type[Kwargs]
    check: Callable[..., bool]  # (response, kw=kwargs)


INSTRUCTIONS: dict[str, Instruction] = {}


def instruction(instruction_id: str, kwargs: type[Kwargs] = NoKwargs):
    def deco(fn: Callable[[str, Any], bool]) -> Callable[[str, Any], bool]:
        INSTRUCTIONS[instruction_id] = Instruction(instruction_id, kwargs, fn)
        return fn

    return deco


def parse_kwargs(instruction_id: str, kwargs: dict[str, Any] | None) -> Kwargs:
    """Validated kwargs for ``instruction_id``; ``None`` values are dropped (absent), as HELM does."""
    spec = INSTRUCTIONS.get(instruction_id)
    if spec is None:
        raise InstructionError(f"unknown IFEval instruction id {instruction_id!r}")
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    try:
        return spec.kwargs(**given)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'kwargs'}: {e['msg']}" for e in exc.errors())
        raise InstructionError(f"IFEval instruction {instruction_id!r}: bad kwargs {given}: {problems}") from None


def checker(instruction_id: str, kwargs: dict[str, Any] | None) -> Callable[[str], bool]:
    """``response -> followed`` for one instruction of one prompt (kwargs validated now)."""
    return partial(INSTRUCTIONS[instruction_id].check, kw=parse_kwargs(instruction_id, kwargs))


def _compare(count: int, relation: str, threshold: int) -> bool:
    return count < threshold if relation == "less than" else count >= threshold


def _language_is(response: str, language: str) -> bool:
    detected = detect_language(response)
    return True if detected is None else detected == language  # the reference: undecidable = followed


# --------------------------------------------------------------------------- keywords
@instruction("keywords:existence", KeywordsKw)
def keywords_existence(response: str, kw: KeywordsKw) -> bool:
    return all(re.search(k, response, flags=re.IGNORECASE) for k in kw.keywords)


@instruction("keywords:frequency", KeywordFrequencyKw)
def keywords_frequency(response: str, kw: KeywordFrequencyKw) -> bool:
    return _compare(len(re.findall(kw.keyword, response, flags=re.IGNORECASE)), kw.relation, kw.frequency)


@instruction("keywords:forbidden_words", ForbiddenWordsKw)
def keywords_forbidden_words(response: str, kw: ForbiddenWordsKw) -> bool:
    return not any(re.search(r"\b" + w + r"\b", response, flags=re.IGNORECASE) for w in kw.forbidden_words)


@instruction("keywords:letter_frequency", LetterFrequencyKw)
def keywords_letter_frequency(response: str, kw: LetterFrequencyKw) -> bool:
    count = collections.Counter(response.lower())[kw.letter.lower()]
    return _compare(count, kw.let_relation, kw.let_frequency)


# --------------------------------------------------------------------------- language
@instruction("language:response_language", LanguageKw)
def language_response_language(response: str, kw: LanguageKw) -> bool:
    return _language_is(response, kw.language)


# --------------------------------------------------------------------------- length constraints
@instruction("length_constraints:number_sentences", SentencesKw)
def number_sentences(response: str, kw: SentencesKw) -> bool:
    return _compare(count_sentences(response), kw.relation, kw.num_sentences)


@instruction("length_constraints:number_paragraphs", ParagraphsKw)
def number_paragraphs(response: str, kw: ParagraphsKw) -> bool:
    pieces = re.split(r"\s?\*\*\*\s?", response)
    count = len(pieces)
    for index, piece in enumerate(pieces):
        if not piece.strip():
            if index in (0, len(pieces) - 1):
                count -= 1  # an empty first or last piece is not a paragraph
            else:
                return False  # an empty piece between dividers fails outright
    return count == kw.num_paragraphs


@instruction("length_constraints:number_words", WordsKw)
def number_words(response: str, kw: WordsKw) -> bool:
    return _compare(count_words(response), kw.relation, kw.num_words)


@instruction("length_constraints:nth_paragraph_first_word", NthParagraphKw)
def nth_paragraph_first_word(response: str, kw: NthParagraphKw) -> bool:
    pieces = re.split(r"\n\n", response)
    count = sum(1 for p in pieces if p.strip())
    # the reference counts only non-empty pieces but indexes the raw split, empty ones included
    if kw.nth_paragraph > count:
        return False
    paragraph = pieces[kw.nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return count == kw.num_paragraphs and first == kw.first_word.lower()


# --------------------------------------------------------------------------- detectable content
@instruction("detectable_content:number_placeholders", PlaceholdersKw)
def number_placeholders(response: str, kw: PlaceholdersKw) -> bool:
    return len(re.findall(r"\[.*?\]", response)) >= kw.num_placeholders


@instruction("detectable_content:postscript", PostscriptKw)
def postscript(response: str, kw: PostscriptKw) -> bool:
    if kw.postscript_marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif kw.postscript_marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + kw.postscript_marker.lower() + r".*$"
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


# --------------------------------------------------------------------------- detectable format
@instruction("detectable_format:number_bullet_lists", BulletsKw)
def number_bullet_lists(response: str, kw: BulletsKw) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == kw.num_bullets


_CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@instruction("detectable_format:constrained_response")
def constrained_response(response: str, kw: NoKwargs) -> bool:
    stripped = response.strip()
    return any(option in stripped for option in _CONSTRAINED_RESPONSES)


@instruction("detectable_format:number_highlighted_sections", HighlightsKw)
def number_highlighted_sections(response: str, kw: HighlightsKw) -> bool:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    double = [
        h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h.removeprefix("**").removesuffix("**").strip()
    ]
    return len(single) + len(double) >= kw.num_highlights


@instruction("detectable_format:multiple_sections", SectionsKw)
def multiple_sections(response: str, kw: SectionsKw) -> bool:
    sections = re.split(r"\s?" + kw.section_spliter + r"\s?\d+\s?", response)
    return len(sections) - 1 >= kw.num_sections


@instruction("detectable_format:json_format")
def json_format(response: str, kw: NoKwargs) -> bool:
    body = (
        response.strip()
        .removeprefix("```json")
        .removeprefix("```Json")
        .removeprefix("```JSON")
        .removeprefix("```")
        .removesuffix("```")
        .strip()
    )
    try:
        json.loads(body)
    except (ValueError, RecursionError):  # the reference only catches ValueError: deep nesting crashed it
        return False
    return True


@instruction("detectable_format:title")
def title(response: str, kw: NoKwargs) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", response))


# --------------------------------------------------------------------------- combination
@instruction("combination:two_responses")
def two_responses(response: str, kw: NoKwargs) -> bool:
    pieces = response.split("******")
    answers = []
    for index, piece in enumerate(pieces):
        if piece.strip():
            answers.append(piece)
        elif index not in (0, len(pieces) - 1):
            return False
    return len(answers) == 2 and answers[0].strip() != answers[1].strip()


@instruction("combination:repeat_prompt", RepeatPromptKw)
def repeat_prompt(response: str, kw: RepeatPromptKw) -> bool:
    return response.strip().lower().startswith(kw.prompt_to_repeat.strip().lower())


# --------------------------------------------------------------------------- start / end
@instruction("startend:end_checker", EndPhraseKw)
def end_checker(response: str, kw: EndPhraseKw) -> bool:
    return response.strip().strip('"').lower().endswith(kw.end_phrase.strip().lower())


@instruction("startend:quotation")
def quotation(response: str, kw: NoKwargs) -> bool:
    stripped = response.strip()
    return len(stripped) > 1 and stripped[0] == '"' and stripped[-1] == '"'


# --------------------------------------------------------------------------- change case
@instruction("change_case:capital_word_frequency", CapitalFrequencyKw)
def capital_word_frequency(response: str, kw: CapitalFrequencyKw) -> bool:
    capitals = sum(1 for word in word_tokenize(response) if word.isupper())
    return _compare(capitals, kw.capital_relation, kw.capital_frequency)


@instruction("change_case:english_capital")
def english_capital(response: str, kw: NoKwargs) -> bool:
    return response.isupper() and _language_is(response, "en")


@instruction("change_case:english_lowercase")
def english_lowercase(response: str, kw: NoKwargs) -> bool:
    return response.islower() and _language_is(response, "en")


# --------------------------------------------------------------------------- punctuation
@instruction("punctuation:no_comma")
def no_comma(response: str, kw: NoKwargs) -> bool:
    return "," not in response


# --------------------------------------------------------------------------- strict and loose
def follows(check: Callable[[str], bool], response: str) -> bool:
    """The reference's test: an empty (whitespace) response follows nothing."""
    return bool(response.strip()) and bool(check(response))


def loose_variants(response: str) -> list[str]:
    """The reference's 8 loose variants: {as is, first line dropped, last line dropped, both}
    x {as is, every ``*`` removed}; dropped-line variants are stripped, as there."""
    lines = response.split("\n")
    cut = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", "")] + cut + [c.replace("*", "") for c in cut]


def follows_loose(check: Callable[[str], bool], response: str) -> bool:
    return any(follows(check, variant) for variant in loose_variants(response))
