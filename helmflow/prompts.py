"""Prompt wording as declared, versioned data: every text a prompt or a judge adds can be replaced.

The keys are declared, never guessed: ``<scenario>.<text>`` for a scenario's own framing sentences
(:class:`PromptText` in its ``prompt_texts``) and for the adapter texts its adapter method reads
(``instructions``, prefixes, suffixes; the method declares them), and ``judge.<template>`` for a
judge template. Their defaults are helmflow's own wording. A board's ``prompts:`` section, or
``--prompts FILE`` on run/eval/reproduce, maps keys to replacement texts; an unknown key is an error
before any work, naming the valid ones (``helmflow prompts <board>`` prints them with their texts).

Replaced prompt texts land in the adapter spec, so the effective text is hashed into prompt_version
as before: an override is a new run that never mixes with old numbers, and only the scenarios whose
texts changed are queried again. A replaced judge template gets its text's hash in its VERSION, so
it re-scores without re-querying (a judge template is part of metric_version, as design.md says).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from helmflow.errors import HelmflowError

JUDGE_SCOPE = "judge"

#: The AdapterSpec fields that are wording, and where each lands in a prompt.
ADAPTER_TEXTS: dict[str, str] = {
    "global_prefix": "text before everything else",
    "instructions": "the instructions that open the prompt (followed by a newline)",
    "input_prefix": "before each question or input",
    "input_suffix": "after each question or input",
    "reference_prefix": "before each option; its first letter becomes the option's letter (A, B, ...)",
    "reference_suffix": "after each option",
    "output_prefix": "before each answer; the prompt ends with it (right-stripped)",
    "output_suffix": "after each in-context example's answer",
    "instance_prefix": "between in-context examples and the question",
    "global_suffix": "after everything else",
}

PLACEHOLDER = re.compile(r"\{\$(\w+)\}")


class PromptError(HelmflowError, ValueError):
    """A prompt override that names no declared text, or a judge template that would not render."""


@dataclass(frozen=True)
class PromptText:
    """A scenario's own piece of wording: its default (ours), what it is, and the adapter field it
    becomes (or part of), so that field is not offered twice under two names."""

    default: str
    about: str
    field: str | None = None


def scenario_texts(scen: Any, method_texts: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """``name -> (default text, what it is)`` for a scenario instance: its own framing texts, then the
    adapter texts its adapter method reads that its own texts do not already make."""
    own: dict[str, PromptText] = dict(scen.prompt_texts)
    made = {t.field for t in own.values() if t.field}
    out = {name: (t.default, t.about) for name, t in own.items()}
    spec = scen.default_adapter
    for field in method_texts:
        if field not in made:
            out[field] = (getattr(spec, field), ADAPTER_TEXTS[field])
    return out


def split_key(key: str) -> tuple[str, str]:
    scope, sep, name = key.partition(".")
    if not sep or not scope or not name:
        raise PromptError(f"prompt key {key!r} is not <scenario>.<text> or judge.<template>")
    return scope, name


def for_scope(prompts: dict[str, str], scope: str) -> dict[str, str]:
    """The overrides of one scenario (or of the judges), by text name."""
    return {split_key(k)[1]: v for k, v in prompts.items() if split_key(k)[0] == scope}


def check(prompts: dict[str, str], valid: dict[str, dict[str, Any]], source: str) -> None:
    """Every key names a declared text of ``valid`` (scope -> text name -> ...), else one error
    listing the valid keys of that scope (or, for an unknown scope, the scopes)."""
    bad: list[str] = []
    hints: dict[str, str] = {}
    for key, value in prompts.items():
        scope, name = split_key(key)
        if not isinstance(value, str):
            raise PromptError(f"{source}: prompt {key!r} must be text, got {type(value).__name__}")
        if scope not in valid:
            bad.append(key)
            hints["*"] = f"a key starts with a scenario or judge: {', '.join(sorted(valid))}"
        elif name not in valid[scope]:
            bad.append(key)
            hints[scope] = f"{scope}: {', '.join(f'{scope}.{n}' for n in valid[scope])}"
    if bad:
        raise PromptError(f"{source}: unknown prompt key(s) {', '.join(sorted(bad))}; valid keys: "
                          f"{'; '.join(hints[s] for s in sorted(hints))} "
                          "(`helmflow prompts <board>` prints them with their texts)")


def check_judge_text(name: str, default: str, text: str, source: str) -> None:
    """A replacement judge template uses only the placeholders its template fills."""
    known = set(PLACEHOLDER.findall(default))
    unknown = sorted(set(PLACEHOLDER.findall(text)) - known)
    if unknown:
        raise PromptError(f"{source}: judge.{name} uses placeholder(s) {', '.join('{$' + u + '}' for u in unknown)}, "
                          "which the template does not fill; it fills: "
                          f"{', '.join('{$' + k + '}' for k in sorted(known))}")


def judge_replacement(name: str, texts: dict[str, str]) -> str | None:
    """What a board rewords of judge template ``name`` (None: nothing): its text (``judge.<name>``), or, when
    it also replaces keyed texts (``judge.<name>.<key>``), all of them as one canonical JSON text, the text
    its VERSION hashes."""
    own = {k: v for k, v in texts.items() if k == name or k.startswith(f"{name}.")}
    if not own:
        return None
    if set(own) == {name}:
        return own[name]
    return json.dumps(own, sort_keys=True, ensure_ascii=False)


def judge_version(version: str, text: str | None) -> str:
    """A judge template's VERSION, with the hash of a replacement text when there is one."""
    from helmflow.versions import stable_hash

    return version if text is None else f"{version}+text.{stable_hash(text, 8)}"


def read_file(path: str) -> dict[str, str]:
    """A prompts file: YAML with a ``prompts:`` mapping (the same section a board file has)."""
    from helmflow.errors import read_yaml_file

    data = read_yaml_file(path, "prompts file", PromptError)
    if not isinstance(data, dict) or not isinstance(data.get("prompts"), dict) or set(data) - {"prompts"}:
        raise PromptError(f"prompts file {path}: expected one mapping `prompts: {{<scenario>.<text>: <text>, ...}}` "
                          "(`helmflow prompts <board>` writes a template)")
    texts = {str(k): v for k, v in data["prompts"].items()}
    for key, text in texts.items():
        try:
            str(text).encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (YAML's "\ud800" escape): no prompt can hold it
            raise PromptError(f"prompts file {path}: {key} holds {text[exc.start]!r} at character {exc.start}, a lone "
                              "surrogate UTF-8 cannot encode; write the character itself or a pair of surrogates"
                              ) from None
    return texts


def template(sections: list[tuple[str, dict[str, tuple[str, str]]]]) -> str:
    """A prompts file with every key and its current text (JSON-quoted: exact bytes, valid YAML), each
    under a comment saying what it is: edit the texts you want, delete the rest."""
    lines = ["# helmflow prompt wording: keep the keys you replace, delete the others.",
             "# Texts are exact bytes (double-quoted, \\n is a newline); a replacement is a new prompt_version.",
             "prompts:"]
    for scope, texts in sections:
        for name, (text, about) in texts.items():
            lines.append(f"  # {about}")
            lines.append(f"  {scope}.{name}: {json.dumps(text, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"
