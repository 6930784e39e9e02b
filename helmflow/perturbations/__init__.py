"""Perturbations: registered, versioned, seeded transformations of an instance's input (and, where
HELM does so, its references), for HELM's robustness and fairness columns.

Each algorithm is a port of HELM 0.5.16's ``benchmark/augmentations`` (Apache-2.0), kept call for
call so its ``random.Random`` stream matches: the generator is seeded with the instance id (HELM's
``Perturbation.get_rng``), references are perturbed before the input with that same generator, and
every ``rng`` call happens where HELM makes it. ``tests/data/perturbation_parity.jsonl`` holds HELM's
own outputs for our fixture texts (regenerate with ``benchmarks/helm_perturbation_parity.py``).

Word lists and mappings are data files under ``data/`` (sources and licenses in ``data/README.md``);
each perturbation's version covers its algorithm VERSION, its parameters and the sha256 of every data
file it reads, so a changed list re-runs exactly the perturbed runs that read it.

A perturbation is a name (HELM's stat name, e.g. ``mild_mix``) bound to parameters; a *set* names
several (``robustness``, ``fairness``: what HELM Classic's ``canonical`` expander runs).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any, Literal

from helmflow.errors import HelmflowError
from helmflow.perturbations.translations import TRANSLATIONS, translation_file
from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.registry import Registry

DATA_DIR = Path(__file__).resolve().parent / "data"

Kind = Literal["robustness", "fairness", "multilinguality", "style"]
TextFn = Callable[[str, Random], str]


class PerturbationError(HelmflowError, ValueError):
    """An unknown perturbation or set, or one whose data file is not installed."""


class DataNotFetched(PerturbationError):
    """A perturbation's data file that is neither fetched into the storage root nor shipped."""


_ASSET_ROOT: contextvars.ContextVar[str | None] = contextvars.ContextVar("helmflow_asset_root", default=None)


@contextlib.contextmanager
def assets_from(root: str | None) -> Iterator[None]:
    """Read fetched data files from this storage root (``--storage``, the flow's ``storage``) while
    inside; outside, from the default root ($HELMFLOW_STORAGE or ./helmflow-store)."""
    token = _ASSET_ROOT.set(root)
    try:
        yield
    finally:
        _ASSET_ROOT.reset(token)


def data_bytes(filename: str) -> bytes:
    """A data file's bytes: the copy ``helmflow fetch-assets perturbations`` stored under the storage
    root's ``assets/perturbations/`` (HELM's own file), else the one shipped in ``data/``; neither is a
    clear error naming the command."""
    from helmflow.storage import resolve_root

    return _data_bytes(resolve_root(_ASSET_ROOT.get()), filename)


@functools.cache
def _data_bytes(root: str, filename: str) -> bytes:
    from helmflow import layout
    from helmflow.perturbations.assets import COMMAND, KIND, recorded
    from helmflow.storage import Store

    path = DATA_DIR / filename  # an absolute path (a test's or a plugin's own file) stays as it is
    store = Store(root)
    key = layout.asset_file(KIND, Path(filename).name)
    if not Path(filename).is_absolute() and store.exists(key):
        data = store.read_bytes(key)
        first = recorded(store).get(Path(filename).name, {}).get("sha256")
        if first and hashlib.sha256(data).hexdigest() != first:
            raise PerturbationError(f"perturbation data file {store.url(key)} changed since it was fetched "
                                    f"(sha256 recorded {first}); fetch it again with `{COMMAND}`")
        return data
    if path.is_file():
        return path.read_bytes()
    name = Path(filename).name
    if name.startswith("google_translate_"):
        raise DataNotFetched(f"translation table {name} is missing: HELM translates with Google Translate at run "
                             f"time; put your table (JSON: English text -> translation) at "
                             f"{store.url(key)} or run `{COMMAND} --file PATH` (see {DATA_DIR / 'README.md'})")
    raise DataNotFetched(f"perturbation data file {name} is missing: HELM downloads it at run "
                            f"time; run `{COMMAND}` to fetch it into {store.url(f'assets/{KIND}')}/ "
                            f"(see {DATA_DIR / 'README.md'})")


#: a data file's sha256 while :func:`tolerate_missing_data` is on and the file is not fetched
NOT_FETCHED = "not fetched"
_MISSING: contextvars.ContextVar[dict[str, set[str]] | None] = contextvars.ContextVar("helmflow_missing_data",
                                                                                       default=None)


@contextlib.contextmanager
def tolerate_missing_data() -> Iterator[dict[str, set[str]]]:
    """While inside (``helmflow show``), a data file that is not fetched does not stop planning: its
    sha256 reads as :data:`NOT_FETCHED` and the yielded dict collects filename -> the perturbations that
    need it, for one line naming the command; a run still refuses them."""
    missing: dict[str, set[str]] = {}
    token = _MISSING.set(missing)
    try:
        yield missing
    finally:
        _MISSING.reset(token)


def data_sha256(filename: str, needed_by: str = "") -> str:
    try:
        data = data_bytes(filename)
    except DataNotFetched:
        missing = _MISSING.get()
        if missing is None:
            raise
        missing.setdefault(Path(filename).name, set()).add(needed_by)
        return NOT_FETCHED
    return hashlib.sha256(data).hexdigest()


def _json(filename: str) -> Any:
    return _parsed_json(data_bytes(filename))


@functools.cache
def _parsed_json(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


#: an instance's ``extra`` key for the id HELM gives it (``id<position>``), when it differs from ours: every
#: perturbation's generator is seeded with it (HELM's ``Perturbation.get_rng`` seeds with HELM's own id)
HELM_ID = "helm_id"
#: what a perturbed instance records in ``extra``: the perturbation's name and the input's text before it
#: (HELM's ``instance.perturbation.name`` and ``contrast_inputs``; HEIM's CLIPScore reads them)
PERTURBED_BY, UNPERTURBED_TEXT = "perturbation", "unperturbed_text"


def seed_of(instance: Instance) -> str:
    """The seed of the instance's perturbation draws: HELM's id for it when the scenario records one."""
    return str(instance.extra.get(HELM_ID) or instance.id)


def match_case(source_word: str, target_word: str) -> str:
    """HELM's ``helm.common.general.match_case``: the target in the source's case pattern."""
    if all(letter.islower() for letter in source_word):
        return target_word.lower()
    if all(letter.isupper() for letter in source_word):
        return target_word.upper()
    if source_word and source_word[0].isupper():
        return target_word.capitalize()
    return target_word


# --------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Perturbation:
    """A named, parameterised perturbation. ``make`` builds the text function from ``params`` (lazily:
    the misspelling pattern compiles 6,523 alternatives); ``apply`` overrides the whole-instance step
    (person names keep one substitution map across references and input)."""

    name: str
    kind: Kind
    version: str
    make: Callable[..., TextFn] | None
    params: dict[str, Any] = field(default_factory=dict)
    data: tuple[str, ...] = ()
    perturb_references: bool = False
    apply_fn: Callable[[Perturbation, Instance], Instance] | None = None
    description: str = ""

    def version_data(self) -> dict[str, Any]:
        """What the perturbed run's scenario version hashes: algorithm, parameters, data bytes."""
        return {"name": self.name, "version": self.version, "params": self.params,
                "data": {f: data_sha256(f, self.name) for f in self.data}}

    def check_data(self) -> None:
        for f in self.data:
            data_sha256(f, self.name)

    @functools.cached_property
    def text_fn(self) -> TextFn:
        assert self.make is not None
        return self.make(**self.params)

    def apply(self, instance: Instance) -> Instance:
        """HELM's ``TextPerturbation.apply``: one ``Random(HELM's instance id)``, references first, then the
        input's text (every text part of a multimodal input, every user message of a chat). An image
        reference (MS-COCO's photo) keeps its text: HELM's is empty, which no perturbation changes or
        draws for."""
        if self.apply_fn is not None:
            return self.apply_fn(self, instance)
        rng = Random(seed_of(instance))
        fn = self.text_fn
        references = instance.references
        if self.perturb_references:
            references = [r if r.image is not None else r.model_copy(update={"text": fn(r.text, rng)})
                          for r in references]
        return instance.model_copy(update={"input": _map_input(instance.input, lambda t: fn(t, rng)),
                                           "references": references})


def _map_input(inp: Input, fn: Callable[[str], str]) -> Input:
    if inp.text is not None:
        return Input(text=fn(inp.text))
    if inp.messages is not None:
        return Input(messages=[m.model_copy(update={"content": fn(m.content)}) if m.role == "user" else m
                               for m in inp.messages])
    return Input(parts=[ContentPart(type="text", text=fn(p.text or "")) if p.type == "text" else p
                        for p in inp.parts or []])


PERTURBATIONS: Registry[Perturbation] = Registry("perturbation")
#: named sets (HELM Classic's ``canonical`` expander); a board entry may also list perturbation names
SETS: dict[str, tuple[str, ...]] = {}


def perturbation(p: Perturbation) -> Perturbation:
    PERTURBATIONS.add(p.name, p)
    return p


def resolve(spec: str | list[str], check: bool = True) -> list[Perturbation]:
    """A board's ``perturbations:`` value (a set name, or a list of set and perturbation names) as
    the perturbations it stands for, each once, in order; unknown names and (``check``) missing data are errors."""
    names = [spec] if isinstance(spec, str) else list(spec)
    out: dict[str, Perturbation] = {}
    for name in names:
        members = SETS.get(name, (name,))
        for member in members:
            if member not in PERTURBATIONS:
                raise PerturbationError(f"unknown perturbation {member!r}; sets: {', '.join(sorted(SETS))}; "
                                        f"perturbations: {', '.join(PERTURBATIONS.names())}")
            p = PERTURBATIONS.get(member)
            if check:
                p.check_data()
            out[member] = p
    return list(out.values())


def missing_data(p: Perturbation) -> list[str]:
    """The data files of ``p`` that are neither fetched into the storage root nor shipped."""
    out = []
    for f in p.data:
        try:
            data_bytes(f)
        except DataNotFetched:
            out.append(Path(f).name)
    return out


def perturb_evaluated(name: str, instances: list[Instance], sample: Any) -> list[Instance]:
    """HELM's data augmentation for evaluation: the train instances as they are (few-shot examples stay
    unperturbed), then each *sampled* evaluation instance perturbed, keeping its id, and dropped when the
    perturbation left it unchanged (HELM's ``should_skip_unchanged_eval``: its worst case is the
    original's, and it costs no request). The perturbed pool is never larger than the sample, so the
    adapter takes all of it."""
    from helmflow.adapters import sample_eval_instances

    perturbation = PERTURBATIONS.get(name)
    originals = {i.id: i for i in instances}
    evaluated = [perturbation.apply(i) for i in sample_eval_instances(instances, sample)]
    changed = [_marked(p, name, originals[p.id]) for p in evaluated if p != originals[p.id]]
    return [i for i in instances if i.split == "train"] + changed


def _marked(perturbed: Instance, name: str, original: Instance) -> Instance:
    """The perturbed instance with its perturbation's name and (a text input's) text before it in ``extra``."""
    marks: dict[str, Any] = {PERTURBED_BY: name}
    if original.input.text is not None:
        marks[UNPERTURBED_TEXT] = original.input.text
    return perturbed.model_copy(update={"extra": {**perturbed.extra, **marks}})


# --------------------------------------------------------------------------- robustness (HELM 0.5.16)
def lowercase() -> TextFn:
    return lambda text, rng: text.lower()


def _contraction_map() -> dict[str, str]:
    return _json("contractions.json")


def contraction() -> TextFn:
    """Expanded phrases followed by a space become their contraction (NL-Augmenter's rule)."""
    reverse = {v: k for k, v in _contraction_map().items()}
    pattern = re.compile(r"\b({})\b ".format("|".join(reverse)), flags=re.IGNORECASE | re.DOTALL)

    def cont(m: re.Match) -> str:
        word = m.group(1)
        return match_case(word, reverse.get(word) or reverse[word.lower()]) + " "

    return lambda text, rng: pattern.sub(cont, text)


def expansion() -> TextFn:
    cmap = _contraction_map()
    pattern = re.compile(r"\b({})\b".format("|".join(cmap)), flags=re.IGNORECASE | re.DOTALL)

    def expand(m: re.Match) -> str:
        word = m.group(0)
        return match_case(word, cmap.get(word) or cmap[word.lower()])

    return lambda text, rng: pattern.sub(expand, text)


@functools.cache
def _misspelling_index() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The table, and its keys by their first word (in file order, which is HELM's alternation order)."""
    table: dict[str, list[str]] = _json("correct_to_misspelling.json")
    by_head: dict[str, list[str]] = defaultdict(list)
    for key in table:
        by_head[_WORD.match(key).group(0)].append(key)  # type: ignore[union-attr]
    return table, dict(by_head)


_WORD = re.compile(r"\w+")


def _is_word_char(text: str, i: int) -> bool:
    return 0 <= i < len(text) and _WORD.match(text[i]) is not None


def _sub_keys(by_head: dict[str, list[str]], text: str, repl: Callable[[str], str]) -> str:
    """What HELM's ``re.sub(r"\\b(k1|k2|...)\\b", ...)`` over 6,523 unescaped keys does, 30x faster.
    Every key starts with a word character, so a match starts where a word starts, and the key's first
    word must be that whole word (else a ``\\b`` fails): only those keys are tried, in the pattern's
    order, the first that fits with a word boundary after it wins. Same matches, same order, so the
    same ``rng`` draws (the parity test holds it to HELM's output)."""
    out, last = [], 0
    for word in _WORD.finditer(text):
        start = word.start()
        if start < last:
            continue
        for key in by_head.get(word.group(0), ()):
            end = start + len(key)
            if text.startswith(key, start) and _is_word_char(text, end - 1) != _is_word_char(text, end):
                out += [text[last:start], repl(key)]
                last = end
                break
    return "".join(out) + text[last:]


def misspelling(prob: float) -> TextFn:
    table, by_head = _misspelling_index()

    def perturb(text: str, rng: Random) -> str:
        def sub(word: str) -> str:
            if rng.random() < prob:
                return match_case(word, str(rng.choice(table[word])))
            return word

        return _sub_keys(by_head, text, sub)

    return perturb


def space(max_spaces: int) -> TextFn:
    return lambda text, rng: re.sub(r" +", lambda m: " " * rng.randint(1, max_spaces), text)


# HELM's ``TyposPerturbation`` keyboard: each letter's distance-1 neighbours on a QWERTY keyboard
# (NL-Augmenter's butter_fingers, with the letter itself and special characters removed)
KEY_NEIGHBOURS = {
    "q": "was", "w": "qesad", "e": "wsdfr", "r": "edfgt", "t": "rfghy", "y": "tghju", "u": "yhjki", "i": "ujklo",
    "o": "iklp", "p": "ol",
    "a": "qwsz", "s": "weadzx", "d": "erfcxs", "f": "rtgvcd", "g": "tyhbvf", "h": "yujnbg", "j": "uikmnh",
    "k": "iolmj", "l": "opk",
    "z": "asx", "x": "sdcz", "c": "dfvx", "v": "fgbc", "b": "ghnv", "n": "hjmb", "m": "jkn",
}


def typos(prob: float) -> TextFn:
    """HELM's ``TyposPerturbation``: each letter, with probability ``prob``, becomes one of its keyboard
    neighbours, in the letter's case. Every other character is lower-cased and then, if that changed
    it, upper-cased again (HELM's rule, kept: ``"Σ"`` stays, a character whose lower case is longer
    comes back in upper case)."""

    def perturb(text: str, rng: Random) -> str:
        out = []
        for letter in text:
            lower = letter.lower()
            new = lower
            if lower in KEY_NEIGHBOURS and rng.random() < prob:
                new = rng.choice(list(KEY_NEIGHBOURS[lower]))
            if lower != letter:
                new = new.upper()
            out.append(new)
        return "".join(out)

    return perturb


def extra_space(num_spaces: int) -> TextFn:
    """HELM's ``ExtraSpacePerturbation``: every space becomes ``num_spaces`` spaces."""
    return lambda text, rng: text.replace(" ", " " * num_spaces)


def filler_words(insert_prob: float, speaker_ph: bool = True, uncertain_ph: bool = True,
                 fill_ph: bool = True) -> TextFn:
    lists = _json("filler_words.json")
    fillers = ((lists["speaker_phrases"] if speaker_ph else []) + (lists["uncertain_phrases"] if uncertain_ph else [])
               + (lists["fill_phrases"] if fill_ph else []))

    def perturb(text: str, rng: Random) -> str:
        words: list[str] = []
        for word in text.split(" "):
            if rng.random() <= insert_prob:
                words.append(rng.choice(fillers))
            words.append(word)
        return " ".join(words)

    return perturb


def mild_mix() -> TextFn:
    """HELM Classic's robustness: lowercase, contractions, misspellings (p=0.1), spaces (1-3)."""
    steps = [lowercase(), contraction(), misspelling(0.1), space(3)]

    def perturb(text: str, rng: Random) -> str:
        for step in steps:
            text = step(text, rng)
        return text

    return perturb


# --------------------------------------------------------------------------- fairness (HELM 0.5.16)
def dialect(prob: float, mapping: str) -> TextFn:
    """SAE -> AAVE word substitution; a word must sit between non-word, non-hyphen characters (so the
    very first and last word of a text never change: HELM's pattern)."""
    table: dict[str, list[str]] = _json(mapping)
    pattern = "[^\\w-]({})[^\\w-]".format("|".join(re.escape(w) for w in table))

    def perturb(text: str, rng: Random) -> str:
        def sub(m: re.Match) -> str:
            whole, word = m.group(0), m.group(1)
            if rng.uniform(0, 1) < prob:
                synonym = match_case(word, rng.choice(table[word.lower()]))
                whole = whole.replace(word, synonym)
            return whole

        return re.sub(pattern, sub, text, flags=re.IGNORECASE)

    return perturb


def gender(mode: str, prob: float, source: str, target: str) -> TextFn:
    """Gendered pronouns (Lauscher et al. 2022) or terms (Garg 2018, Bolukbasi 2016, HELM's own),
    word by word in list order; an earlier pair shadows a later one (male->female ``his`` -> ``her``)."""
    data = _json(f"gender_{mode}.json")
    index = {g: i for i, g in enumerate(data["genders"])}
    pairs = [(m[index[source]], m[index[target]]) for m in data["mappings"]]

    def perturb(text: str, rng: Random) -> str:
        for word, synonym in pairs:
            def sub(m: re.Match, synonym: str = synonym) -> str:
                whole, found = m.group(0), m.group(1)
                if rng.uniform(0, 1) < prob:
                    whole = whole.replace(found, match_case(found, synonym))
                return whole

            text = re.sub(f"[^\\w]({word})[^\\w]", sub, text, flags=re.IGNORECASE)
        return text

    return perturb


def _names(filename: str) -> dict[str, dict[str, list[str]]]:
    return _parsed_names(data_bytes(filename))


@functools.cache
def _parsed_names(data: bytes) -> dict[str, dict[str, list[str]]]:
    """HELM's name file: ``<name>,first_name[,<category>,<value>]*`` -> category -> value -> names."""
    table: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in data.decode("utf-8").splitlines():
        name, name_type, *cats = line.split(",")
        if name_type != "first_name":
            continue
        for i in range(len(cats) // 2):
            table[cats[2 * i]][cats[2 * i + 1]].append(name.strip().lower())
    return table


def _person_name_apply(p: Perturbation, instance: Instance) -> Instance:
    """HELM's ``PersonNamePerturbation.apply``: one substitution map shared by the references and then
    the input, so a name maps to the same replacement everywhere; first names of the source race map to
    target-race names of the same gender."""
    params = p.params
    table = _names(params["names"])
    source = table["race"][params["source"]]
    target = table["race"][params["target"]]
    genders = table["gender"]
    rng = Random(seed_of(instance))
    mapping: dict[str, str] = {}
    skipped: set[str] = set()

    def substitute(token: str) -> str | None:
        options = target
        lowered = token.lower()
        gender_of = next((g for g in ("female", "male", "neutral") if g in genders and lowered in genders[g]), None)
        if gender_of:
            options = [n for n in target if n in genders[gender_of]]
            if not options:
                return None
        return rng.choice(list(options))

    def perturb(text: str) -> str:
        out = []
        for token in re.split(r"([^\w])", text):
            lowered = token.lower()
            if not (lowered in mapping or lowered in skipped) and lowered in source:
                if rng.uniform(0, 1) < params["prob"]:
                    if name := substitute(token):
                        mapping[lowered] = name
                else:
                    skipped.add(lowered)
            if lowered in mapping:
                token = match_case(token, mapping[lowered])
            out.append(token)
        return "".join(out)

    references = [r.model_copy(update={"text": perturb(r.text)}) for r in instance.references]
    return instance.model_copy(update={"input": _map_input(instance.input, perturb), "references": references})


# --------------------------------------------------------------------------- contrast sets (HELM 0.5.16)
#: the instance fields a scenario with contrast sets fills (BoolQ, IMDB): the contrast inputs' texts, and
#: for each the texts of its correct references
CONTRAST_INPUTS, CONTRAST_REFERENCES = "contrast_inputs", "contrast_references"


def _contrast_sets_apply(p: Perturbation, instance: Instance) -> Instance:
    """HELM's ``ContrastSetsPerturbation``: one of the instance's human-written contrast inputs, chosen by
    ``Random(instance id).choice``, with its own references; an instance without any is unchanged."""
    inputs, references = instance.extra.get(CONTRAST_INPUTS), instance.extra.get(CONTRAST_REFERENCES)
    if not inputs or not references:
        return instance
    k = Random(seed_of(instance)).choice(range(len(inputs)))
    return instance.model_copy(update={"input": Input(text=inputs[k]),
                                       "references": [Reference(text=t, correct=True) for t in references[k]]})


# --------------------------------------------------------------------------- translation (HEIM, HELM 0.5.16)
#: what HELM's CLIPScore scores against the prompt before the perturbation (its ``contrast_inputs``):
#: HELM's perturbation names ``translate``, ``dialect`` and ``mild_mix``
SCORED_AGAINST_ORIGINAL = ("dialect", "mild_mix", *(f"translate_{lang}" for lang in TRANSLATIONS))


def translate(language_code: str, table: str) -> TextFn:
    """HELM's ``TranslatePerturbation``: the text as Google Translate translates it into ``language_code``
    (no draw from the generator). HELM asks Google's API at run time through its sqlite cache
    (``GoogleTranslateClient``); that is not reachable offline and HELM publishes no translations, so
    here they come from a table the user supplies: a JSON object, English text -> its translation
    (HELM's cache's ``translatedText``), fetched into the storage root like HELM's other data files. An
    empty text stays empty; a text the table lacks stops the run before any request, naming it."""
    translations: dict[str, str] = _json(table)

    def perturb(text: str, rng: Random) -> str:
        if not text:
            return text
        found = translations.get(text)
        if not isinstance(found, str):
            raise PerturbationError(f"translation table {table} has no {language_code} translation of {text!r}: "
                                    f"add it (HELM translates with Google Translate)")
        return found

    return perturb


# --------------------------------------------------------------------------- art styles (HEIM, HELM 0.5.16)
#: HELM's ``art`` data augmentation (run_expander.py): one SuffixPerturbation per style, in its order
ART_STYLES = ("oil painting", "watercolor", "pencil sketch", "animation", "vector graphics", "pixel art")


def suffix(suffix: str) -> TextFn:
    """HELM's ``SuffixPerturbation`` (its stat name ``style``): ``<text>, <suffix>``, no draw from the generator."""
    return lambda text, rng: f"{text}, {suffix}"


# --------------------------------------------------------------------------- what is registered
# HELM's stat names and the parameters its run expander uses (run_expander.py, PERTURBATION_SPECS_DICT)
for _p in [
    Perturbation("lowercase", "robustness", "1", lowercase, description="the input in lower case"),
    Perturbation("contraction", "robustness", "1", contraction, data=("contractions.json",),
                 description="expanded phrases contracted (77-entry map from NL-Augmenter)"),
    Perturbation("expansion", "robustness", "1", expansion, data=("contractions.json",),
                 description="contractions expanded"),
    Perturbation("misspellings", "robustness", "1", misspelling, {"prob": 0.1}, ("correct_to_misspelling.json",),
                 description="words replaced by common misspellings with probability 0.1"),
    Perturbation("space", "robustness", "1", space, {"max_spaces": 3},
                 description="every run of spaces becomes 1-3 spaces"),
    Perturbation("extra_space", "robustness", "1", extra_space, {"num_spaces": 2},
                 description="every space becomes 2 spaces (HELM's extra_space2)"),
    Perturbation("typos", "robustness", "1", typos, {"prob": 0.1},
                 description="letters replaced by a keyboard neighbour with probability 0.1 (HELM's typo_easy)"),
    Perturbation("filler_words", "robustness", "1", filler_words, {"insert_prob": 0.1, "speaker_ph": False},
                 ("filler_words.json",), description="a filler word before a word with probability 0.1"),
    Perturbation("mild_mix", "robustness", "1", mild_mix, data=("contractions.json", "correct_to_misspelling.json"),
                 description="HELM Classic's robustness: lowercase, contractions, misspellings (0.1), extra spaces"),
    Perturbation("dialect", "fairness", "1", dialect, {"prob": 1.0, "mapping": "SAE_to_AAVE_mapping.json"},
                 ("SAE_to_AAVE_mapping.json",), perturb_references=True,
                 description="Standard American English words mapped to African American English (Ziems et al. 2022)"),
    Perturbation("gender", "fairness", "1", gender,
                 {"mode": "pronouns", "prob": 1.0, "source": "male", "target": "female"},
                 ("gender_pronouns.json",), perturb_references=True,
                 description="male pronouns replaced by female ones"),
    Perturbation("gender_terms", "fairness", "1", gender,
                 {"mode": "terms", "prob": 1.0, "source": "male", "target": "female"},
                 ("gender_terms.json",), perturb_references=True,
                 description="male terms (father, king, ...) replaced by female ones"),
    Perturbation("person_name", "fairness", "1", None,
                 {"prob": 1.0, "names": "person_names.txt", "source": "white_american", "target": "black_american"},
                 ("person_names.txt",), perturb_references=True, apply_fn=_person_name_apply,
                 description="White-American first names replaced by Black-American ones of the same gender"),
    Perturbation("contrast_sets", "robustness", "1", None, perturb_references=True, apply_fn=_contrast_sets_apply,
                 description="the instance's human-written contrast input and answer (Gardner et al. 2020)"),
    *(Perturbation(f"translate_{lang}", "multilinguality", "1", translate,
                   {"language_code": code, "table": translation_file(code)}, (translation_file(code),),
                   perturb_references=True, description=f"the text translated into {lang.capitalize()} ({code}) "
                                                        f"from a declared table (HELM: Google Translate)")
      for lang, code in TRANSLATIONS.items()),
    *(Perturbation(f"style_{style.replace(' ', '_')}", "style", "1", suffix, {"suffix": style},
                   description=f"', {style}' appended to the text (HELM's SuffixPerturbation, HEIM's art styles)")
      for style in ART_STYLES),
]:
    perturbation(_p)

SETS.update({
    "robustness": ("mild_mix",),
    # HELM's fairness set also has ``dialect``; its SAE->AAVE mapping is not shipped (data/README.md)
    "fairness": ("gender", "person_name"),
    "robustness_all": ("contraction", "expansion", "filler_words", "lowercase", "misspellings", "space"),
    # HELM's ``art`` data augmentation: the six styles (HEIM's MS-COCO art-style entry)
    "art": tuple(f"style_{style.replace(' ', '_')}" for style in ART_STYLES),
})

__all__ = ["ART_STYLES", "HELM_ID", "NOT_FETCHED", "PERTURBATIONS", "PERTURBED_BY", "SCORED_AGAINST_ORIGINAL",
           "SETS", "TRANSLATIONS", "UNPERTURBED_TEXT", "DataNotFetched", "Perturbation", "PerturbationError",
           "assets_from", "data_bytes", "match_case", "missing_data", "perturb_evaluated", "resolve", "seed_of",
           "tolerate_missing_data"]
