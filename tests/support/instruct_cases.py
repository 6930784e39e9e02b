"""Critic completions for the instruction-following critique, written for this project: per case, the critic's
raw answer to each of HELM's six questions (Helpfulness, Understandability, Completeness, Conciseness,
Harmlessness, Keyword Feedback), one per respondent, and ``num_respondents``. HELM's parse of a multiple-choice
answer drops spaces, newlines and full stops, upper-cases, splits on commas and needs one piece that is a
substring of A-Z naming an option; any other answer skips that respondent, and fewer parsed respondents than
``num_respondents`` gives the instance no stats."""

from __future__ import annotations

CRITIQUE_CASES: list[tuple[list[list[str]], int]] = [
    ([["C"], ["D"], ["B"], ["E"], ["E"], ["typos, too long"]], 1),
    ([[" b."], ["a"], ["E\n"], ["c "], ["D."], [""]], 1),
    ([[""], ["B"], ["C"], ["D"], ["E"], ["fine"]], 1),  # an empty answer is "A" to HELM's parse
    ([["F"], ["B"], ["C"], ["D"], ["E"], ["x"]], 1),  # out of range: no stats
    ([["Answer: B"], ["B"], ["C"], ["D"], ["E"], ["x"]], 1),  # not a letter once parsed: no stats
    ([["BC"], ["A"], ["CDE"], ["D"], ["E"], ["x"]], 1),  # a run of letters is its first letter's option
    ([["A,B"], ["A"], ["C"], ["D"], ["E"], ["x"]], 1),  # two answers to a multiple-choice question
    ([["B", "D"], ["C", "C"], ["E", "A"], ["A", "B"], ["E", "E"], ["long", "ok"]], 2),
    ([["B", "Z"], ["C", "C"], ["E", "A"], ["A", "B"], ["E", "E"], ["long", "ok"]], 2),  # one respondent skipped
    ([["B", "C", "D"], ["E", "E", "D"], ["A", "B", "C"], ["C", "c.", "B"], ["D", "E", "E"], ["", "a", "b"]], 3),
]
