"""Chat prompts are fitted to the window like text prompts: oldest turns first, then the last turn is cut."""

from __future__ import annotations

from helmflow.records import ChatMessage, Deployment
from helmflow.request_builder import fit_messages


def _dep(window: int) -> Deployment:
    return Deployment(name="d", client="offline", model="m", context_window=window)


def _m(role: str, words: int, tag: str) -> ChatMessage:
    return ChatMessage(role=role, content=" ".join(f"{tag}{i}" for i in range(words)))


CHAT = [_m("system", 2, "s"), _m("user", 5, "u"), _m("assistant", 5, "a"), _m("user", 5, "q")]


def test_fitting_messages_keep_everything():
    assert fit_messages(CHAT, _dep(40), 10) == (CHAT, False)  # 17 tokens + 10 <= 40


def test_oldest_turns_go_first_and_the_conversation_restarts_on_a_user_turn():
    fitted, truncated = fit_messages(CHAT, _dep(20), 10)  # budget 10: system (2) + last user turn (5)
    assert truncated and [m.content for m in fitted] == [CHAT[0].content, CHAT[3].content]


def test_the_last_turn_is_cut_when_dropping_is_not_enough():
    fitted, truncated = fit_messages(CHAT, _dep(16), 11)  # budget 5: system 2, last turn keeps 3 words
    assert truncated and fitted[0] == CHAT[0] and fitted[1].content == "q0 q1 q2"
