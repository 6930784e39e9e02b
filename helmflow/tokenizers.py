"""Tokenizers by id (the deployment's ``tokenizer`` field, part of model_version).

Used to fit prompts into a deployment's window and to count tokens when a provider does not.
An id is ``kind`` or ``kind:argument``; add a kind with ``@tokenizer_kind``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Protocol

from helmflow.registry import Registry


class Tokenizer(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` with at most ``max_tokens`` tokens."""
        ...


TOKENIZER_KINDS: Registry[Callable[[str], Tokenizer]] = Registry("tokenizer kind")


def tokenizer_kind(name: str):
    def deco(factory: Callable[[str], Tokenizer]) -> Callable[[str], Tokenizer]:
        TOKENIZER_KINDS.add(name, factory)
        return factory

    return deco


class WhitespaceTokenizer:
    """Tokens are whitespace-separated words: what offline deployments count."""

    def count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        words = text.split()
        if len(words) <= max_tokens:
            return text
        # keep the original spacing up to the cut
        pos, seen = 0, 0
        for word in words[:max_tokens]:
            pos = text.index(word, pos) + len(word)
            seen += 1
        return text[:pos]


@tokenizer_kind("whitespace")
def _whitespace(_: str) -> Tokenizer:
    return WhitespaceTokenizer()


@lru_cache(maxsize=64)
def get_tokenizer(spec: str) -> Tokenizer:
    kind, _, arg = spec.partition(":")
    return TOKENIZER_KINDS.get(kind)(arg)
