"""HELM's six instruction-following sources (HELM Instruct; in HELM Classic's ``run_entries.conf`` as
``model=instruction_following`` entries with ``num_respondents=1``), one scenario each, as HELM's
``self_instruct_scenario.py``, ``grammar_scenario.py`` (with ``grammar.py``), ``open_assistant_scenario.py``,
``vicuna_scenario.py``, ``koala_scenario.py`` and ``anthropic_hh_rlhf_scenario.py`` read them. Every one is
scored by the ``instruction_following_critique`` metric (a critic model answers HELM's five multiple-choice
questions and its keyword question about each answer).

- ``self_instruct``: ``human_eval/user_oriented_instructions.jsonl`` of yizhongw/self-instruct (HELM: branch
  ``main``; here its head commit). One test instance per entry of a row's ``instances``: the instruction, a
  newline and the entry's ``input`` (often empty); its ``output`` is the (unused) reference.
- ``grammar``: HELM's own grammar file (``path``, HELM's conf: ``best_chatgpt_prompts.yaml``) read from
  stanford-crfm/helm at v0.5.16, expanded as HELM's ``generate_derivations``: every expansion of the ``Root``
  rules, the cross product of their categories' expansions in rule order; ``tags`` keeps the derivations that
  carry all of them (HELM's conf: none). Test instances, no references.
- ``open_assistant``: OpenAssistant/oasst1 at HELM's revision, its two Parquet files (train, then
  validation). Per split, the conversation roots (``parent_id`` null) in ``language`` (HELM's conf: ``en``;
  ``all``: every language) in file order; each root's direct assistant replies in that language are its
  references. HELM asserts that no message has a ``model_name`` and every root is a prompter's: a file that
  breaks this is refused.
- ``vicuna``: ``fastchat/eval/table/question.jsonl`` of lm-sys/FastChat at HELM's tag v0.2.5 (its commit),
  the questions of ``category`` (HELM's conf: ``all``). Test instances, no references.
- ``koala``: ``koala_test_set.jsonl`` of arnav-gudibande/koala-test-set (HELM: branch ``main``; here its head
  commit), each ``prompt`` a test instance.
- ``anthropic_hh_rlhf``: Anthropic/hh-rlhf at HELM's revision. ``subset=hh`` (HELM's conf): the files the Hub's
  loader resolves without a ``data_dir``, the four ``<dir>/train.jsonl.gz`` then the four ``test.jsonl.gz``
  (dirs in sorted order: harmless-base, helpful-base, helpful-online, helpful-rejection-sampled), the first
  human turn of each ``chosen`` dialogue; ``red_team``: the red-team transcripts, HELM's "train" as test.

No file's checksum is declared: each sha256 is recorded at first fetch (``helmflow mirror``), as the board's
other GitHub and Hub sources are; the GitHub files' values at the pinned commits are in docs/boards/classic.md.

Ids are ``id<i>`` over the whole list in HELM's order (train instances first where there are any); HELM
evaluates its valid and test instances, at most 1,000 by its seeded sample (the board's ``max_instances``).
HELM's instruct adapter: the input and a newline, no instructions or examples, 512 tokens at temperature 0.7,
one output, no stop sequence.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from helmflow.errors import load_yaml
from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.anthropic_red_team import _records as gzip_json_records
from helmflow.scenarios.anthropic_red_team import first_utterance as red_team_first_utterance
from helmflow.scenarios.base import read_jsonl_lines, read_parquet_source, read_source

CRITIQUE = "instruction_following_critique"
MAIN_METRIC = "Helpfulness"  # HELM's stat name (schema_instruction_following.yaml: main_name)
HELM_COMMIT = "ef439fc94e58568fd1274d5c07ceb1b711360a55"  # stanford-crfm/helm tag v0.5.16
SNAPSHOT = "the head of the branch in a GitHub snapshot of the repository taken for this port"


def instruct_spec() -> AdapterSpec:
    """HELM's ``get_instruct_adapter_spec()``: the input and a newline, zero-shot, 512 tokens at 0.7."""
    return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="\n", output_prefix="",
                       output_suffix="", max_train_instances=0,
                       generation=GenerationParams(max_tokens=512, temperature=0.7, stop=[], num_outputs=1))


def _numbered(rows: list[tuple[str, str, list[str]]]) -> list[Instance]:
    """(split, input, reference texts) in HELM's order -> instances ``id<i>``, references correct."""
    return [Instance(id=f"id{k}", split=split, input=Input(text=text),
                     references=[Reference(text=r, correct=True) for r in refs])
            for k, (split, text, refs) in enumerate(rows)]


def _rows(scen: str, url: str, model: type[BaseModel]) -> list[Any]:
    """A JSON Lines file's rows, each checked against ``model`` (one clear error naming the line)."""
    out = []
    for number, line in read_jsonl_lines(scen, url):
        try:
            out.append(model.model_validate(json.loads(line)))
        except (ValueError, ValidationError) as exc:
            raise ScenarioError(f"scenario {scen!r}: {url} line {number}: not the source's shape "
                                f"({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    return out


class _Instruct(Scenario):
    """What the six share: HELM's adapter and the critique metric (HELM's main metric: Helpfulness); the three
    that read one JSON Lines file of a GitHub commit name it in ``FILE``."""

    main_metric = MAIN_METRIC
    metrics = [CRITIQUE, "efficiency"]
    FILE: ClassVar[str] = ""

    @property
    def filename(self) -> str:
        return self.FILE.rsplit("/", 1)[-1]

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.git_url(self.FILE), sha256_unknown=True)]

    @property
    def default_adapter(self) -> AdapterSpec:
        return instruct_spec()

    helm_wording = "HELM's instruct adapter: the instance's text and a newline, nothing else"


# --------------------------------------------------------------------------- self_instruct
class SelfInstructExample(BaseModel):
    model_config = ConfigDict(extra="ignore")
    input: StrictStr
    output: StrictStr


class SelfInstructRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    instruction: StrictStr
    instances: list[SelfInstructExample]


@scenario("self_instruct")
class SelfInstruct(_Instruct):
    VERSION = "1"
    GIT_REPO = "yizhongw/self-instruct"
    GIT_COMMIT = "0b26ccaa415992100fa32df62d41b994cf928e23"
    FILE = "human_eval/user_oriented_instructions.jsonl"
    description = "Self-Instruct's 252 user-oriented instructions, answered and rated by a critic model."
    helm_differences = (f"self_instruct: yizhongw/self-instruct at a commit (HELM reads its main branch; the commit is "
                        f"{SNAPSHOT})",)

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = _rows(self.name, files[self.filename], SelfInstructRow)
        return _numbered([("test", f"{r.instruction}\n{e.input}", [e.output]) for r in rows for e in r.instances])


# --------------------------------------------------------------------------- grammar (HELM's grammar.py)
@dataclass(frozen=True)
class Expansion:
    text: str
    tags: tuple[str, ...] = ()

    @property
    def children(self) -> list[str]:
        return re.split(r"(\${\w+})", self.text)  # HELM: tokens and ${Category} items, in order


@dataclass(frozen=True)
class Rule:
    category: str
    expansions: tuple[Expansion, ...]
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Derivation:
    values: tuple[str, ...]  # the leaves' texts, in order
    tags: tuple[str, ...]  # the rules' and expansions' tags, collected depth first as HELM's get_tags


def _category(item: str) -> str | None:
    return item[2:-1] if item.startswith("${") and item.endswith("}") else None


def _texts(raw: Any, where: str, what: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise ScenarioError(f"{where}: {what} is not a list of strings")
    return tuple(raw)


def read_grammar(text: str, where: str) -> list[Rule]:
    """HELM's ``read_grammar`` (YAML ``{rules: [{category, tags, expansions: [{text, tags}]}]}``)."""
    try:
        raw = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}: not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("rules"), list):
        raise ScenarioError(f"{where}: not a grammar (a mapping with a list of rules)")
    rules = []
    for i, rule in enumerate(raw["rules"]):
        at = f"{where}: rule {i + 1}"
        if not isinstance(rule, dict) or not isinstance(rule.get("category"), str) \
                or not isinstance(rule.get("expansions"), list):
            raise ScenarioError(f"{at}: needs a category and a list of expansions")
        expansions = []
        for e in rule["expansions"]:
            if not isinstance(e, dict) or not isinstance(e.get("text"), str):
                raise ScenarioError(f"{at}: an expansion without a text")
            expansions.append(Expansion(e["text"], _texts(e.get("tags"), at, "an expansion's tags")))
        rules.append(Rule(rule["category"], tuple(expansions), _texts(rule.get("tags"), at, "tags")))
    return rules


def generate_derivations(rules: list[Rule], where: str = "grammar") -> list[Derivation]:
    """HELM's ``generate_derivations``: the cross product over each expansion's items, left to right."""
    by_category: dict[str, list[Rule]] = defaultdict(list)
    for rule in rules:
        by_category[rule.category].append(rule)

    def expand(category: str, depth: int) -> list[Derivation]:
        if depth > 50:
            raise ScenarioError(f"{where}: category {category!r} expands into itself")
        out: list[Derivation] = []
        for rule in by_category.get(category, []):  # HELM: an undefined category has no derivation
            for expansion in rule.expansions:
                results = [Derivation((), rule.tags + expansion.tags)]
                for item in expansion.children:
                    name = _category(item)
                    candidates = [Derivation((item,), ())] if name is None else expand(name, depth + 1)
                    results = [Derivation(d.values + c.values, d.tags + c.tags) for d in results for c in candidates]
                out.extend(results)
        return out

    return expand("Root", 0)


class GrammarParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field("src/helm/benchmark/scenarios/best_chatgpt_prompts.yaml",
                      pattern=r"^src/helm/benchmark/scenarios/[\w-]+\.yaml$")
    tags: str = ""


@scenario("grammar")
class GrammarScenario(_Instruct):
    VERSION = "1"
    Params = GrammarParams
    GIT_REPO = "stanford-crfm/helm"
    GIT_COMMIT = HELM_COMMIT
    description = ("HELM's Best ChatGPT Prompts: instructions generated from HELM's grammar of GRIDFITI's list, "
                   "rated by a critic model.")
    helm_differences = ("grammar: the grammar file is read from stanford-crfm/helm at v0.5.16 (HELM reads its "
                        "installed copy; the file has not changed since May 2023)",)

    @property
    def filename(self) -> str:
        return self.params.path.rsplit("/", 1)[-1]

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.git_url(self.params.path), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.filename]
        where = f"scenario {self.name!r}: {url}"
        try:
            text = read_source(self.name, url).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"{where} is not UTF-8 text: {exc}") from None
        wanted = self.params.tags.split(",") if self.params.tags else []
        kept = [d for d in generate_derivations(read_grammar(text, where), where)
                if all(t in d.tags for t in wanted)]
        return _numbered([("test", "".join(d.values), []) for d in kept])


# --------------------------------------------------------------------------- open_assistant
OASST_REVISION = "fdf72ae0827c1cda404aff25b6603abec9e3399b"
OASST_FILES = {  # HELM's split order: train, then validation (HELM's valid)
    "train": "data/train-00000-of-00001-b42a775f407cee45.parquet",
    "valid": "data/validation-00000-of-00001-134b8fd0c89408b6.parquet",
}
OASST_COLUMNS = {"message_id": "string", "parent_id": "string", "text": "string", "role": "string",
                 "lang": "string", "model_name": "string"}


class OpenAssistantParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str = Field(pattern=r"^(all|[a-z]{2,3}(-[A-Za-z]+)?)$")


def oasst_rows(split: str, messages: list[dict[str, Any]], language: str, where: str
               ) -> list[tuple[str, str, list[str]]]:
    """HELM's ``get_split_instances``: the roots in ``language`` and their direct assistant replies."""
    def wanted(m: dict[str, Any]) -> bool:
        return language == "all" or m["lang"] == language

    roots: dict[str, str] = {}
    for m in messages:
        if m["model_name"] is not None:
            raise ScenarioError(f"{where}: message {m['message_id']} has a model_name (HELM asserts none has)")
        if m["parent_id"] is None and wanted(m):
            if m["role"] != "prompter":
                raise ScenarioError(f"{where}: root message {m['message_id']} is not a prompter's")
            if m["message_id"] in roots:
                raise ScenarioError(f"{where}: message id {m['message_id']} occurs twice")
            roots[m["message_id"]] = m["text"]
    replies: dict[str, list[str]] = defaultdict(list)
    for m in messages:
        if m["role"] == "assistant" and m["parent_id"] in roots and wanted(m):
            replies[m["parent_id"]].append(m["text"])
    return [(split, text, replies.get(mid, [])) for mid, text in roots.items()]


@scenario("open_assistant")
class OpenAssistant(_Instruct):
    VERSION = "1"
    Params = OpenAssistantParams
    HUB_REPO = "OpenAssistant/oasst1"
    HUB_REVISION = OASST_REVISION
    description = "OpenAssistant (OASST1): the first prompt of each conversation tree, rated by a critic model."
    helm_differences = ("open_assistant: HELM's revision's two Parquet files read directly (HELM's load_dataset "
                        "reads the same files; their paths, data/<split>-00000-of-00001-<hash>.parquet, were not "
                        "checked against the Hub at that revision here)",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=path.rsplit("/", 1)[-1], url=self.hub_url(path), sha256_unknown=True)
                for path in OASST_FILES.values()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows: list[tuple[str, str, list[str]]] = []
        for split, path in OASST_FILES.items():
            url = files[path.rsplit("/", 1)[-1]]
            messages = read_parquet_source(self.name, url, OASST_COLUMNS).select(list(OASST_COLUMNS)).to_pylist()
            rows += oasst_rows(split, messages, self.params.language, f"scenario {self.name!r}: {url}")
        return _numbered(rows)


# --------------------------------------------------------------------------- vicuna
class VicunaParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: Literal["all", "generic", "knowledge", "roleplay", "common-sense", "fermi", "counterfactual", "coding",
                      "math", "writing"] = "all"


class VicunaRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: StrictStr
    category: StrictStr


@scenario("vicuna")
class Vicuna(_Instruct):
    VERSION = "1"
    Params = VicunaParams
    GIT_REPO = "lm-sys/FastChat"
    GIT_COMMIT = "be29f26524b57f5eb4509cc2616781799516e2b0"  # tag v0.2.5, HELM's
    FILE = "fastchat/eval/table/question.jsonl"
    description = "The Vicuna team's 80 evaluation questions, answered and rated by a critic model."

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = _rows(self.name, files[self.filename], VicunaRow)
        want = self.params.category
        return _numbered([("test", r.text, []) for r in rows if want == "all" or r.category == want])


# --------------------------------------------------------------------------- koala
class KoalaRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    prompt: StrictStr


@scenario("koala")
class Koala(_Instruct):
    VERSION = "1"
    GIT_REPO = "arnav-gudibande/koala-test-set"
    GIT_COMMIT = "2d4396aee3cff495382e9b0ad2521d70b177763b"
    FILE = "koala_test_set.jsonl"
    description = "The Koala team's 180 test prompts, answered and rated by a critic model."
    helm_differences = (f"koala: arnav-gudibande/koala-test-set at a commit (HELM reads its main branch; the commit is "
                        f"{SNAPSHOT})",)

    def load(self, files: dict[str, str]) -> list[Instance]:
        return _numbered([("test", r.prompt, []) for r in _rows(self.name, files[self.filename], KoalaRow)])


# --------------------------------------------------------------------------- anthropic_hh_rlhf
HH_REVISION = "09be8c5bbc57cb3887f3a9732ad6aa7ec602a1fa"
HH_DIRS = ("harmless-base", "helpful-base", "helpful-online", "helpful-rejection-sampled")  # sorted, as resolved
RED_TEAM = "red-team-attempts/red_team_attempts.jsonl.gz"


def first_utterance(dialogue: str, where: str) -> str:
    """HELM's ``get_first_utterance`` (the red-team scenario's reading); a dialogue without one is refused."""
    text = red_team_first_utterance(dialogue)
    if text is None:
        raise ScenarioError(f"{where}: a dialogue with no utterance (HELM: 'Invalid dialogue')")
    return text


class HHParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Literal["hh", "red_team"]


@dataclass(frozen=True)
class _HHFile:
    filename: str
    path: str
    split: str
    key: str  # the dialogue's field


def hh_layout(subset: str) -> list[_HHFile]:
    if subset == "red_team":  # HELM: the original "train" split as its test split
        return [_HHFile("red_team_attempts.jsonl.gz", RED_TEAM, "test", "transcript")]
    return [_HHFile(f"{d}-{split}.jsonl.gz", f"{d}/{split}.jsonl.gz", split, "chosen")
            for split in ("train", "test") for d in HH_DIRS]


@scenario("anthropic_hh_rlhf")
class AnthropicHHRLHF(_Instruct):
    VERSION = "1"
    Params = HHParams
    HUB_REPO = "Anthropic/hh-rlhf"
    HUB_REVISION = HH_REVISION
    description = ("Anthropic's HH-RLHF dialogues: the first human turn of each, answered and rated by a critic "
                   "model.")
    helm_differences = ("anthropic_hh_rlhf: the eight files HELM's load_dataset resolves at its revision without a "
                        "data_dir, read directly in the loader's order (train then test, dirs sorted; that order, "
                        "which fixes the instance ids and so HELM's sample, is what the datasets library's file "
                        "patterns give that layout, not checked against the Hub here)",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f.filename, url=self.hub_url(f.path), sha256_unknown=True)
                for f in hh_layout(self.params.subset)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows: list[tuple[str, str, list[str]]] = []
        for f in hh_layout(self.params.subset):
            url = files[f.filename]
            for index, record in enumerate(gzip_json_records(self.name, url, read_source(self.name, url))):
                where = f"scenario {self.name!r}: {url}: row {index}"
                dialogue = record.get(f.key) if isinstance(record, dict) else None
                if not isinstance(dialogue, str):
                    raise ScenarioError(f"{where} has no {f.key!r} text")
                rows.append((f.split, first_utterance(dialogue, where), []))
        return _numbered(rows)
