"""A dev-server policy whose every fourth answer holds a lone surrogate, as a real provider's JSON
can (``"\\ud800"`` is valid JSON; it decodes to a code point UTF-8 cannot store)."""

from helmflow.devserver import echo


def lone_surrogate(prompt: str, payload: dict) -> str:
    answer = echo(prompt, payload)
    number = int("".join(ch for ch in answer if ch.isdigit()) or 0)
    return f"{answer} \ud800 tail" if number % 4 == 0 else answer
