"""Offline deployments: deterministic, free, no network. Baselines and test doubles in one kind.

Behaviours (``options.behavior``), each reading only the prompt it is sent:
- ``solver``: a rule-based symbolic solver for the tasks it recognises in the *last* question of
  the prompt: arithmetic (``What is a op b?``, free answer or the matching option letter), HELM's
  synthetic reasoning (variable substitution and pattern matching exactly; induction by a
  segmentation search that names symbols X, Y, Z in order of appearance, so it is right only when
  the hidden rule happens to use that order) and Dyck completion. With ``accuracy < 1`` it is wrong
  on a seeded fraction ``1 - accuracy`` of requests. What it does not recognise it answers like ``echo``.
- ``echo``: repeats the last line of the input (after its ``Label: ``), like HELM's simple/model1.
- ``constant``: always answers ``options.answer``.
- ``first_option``: always picks the first option of a multiple-choice question (``A``; ``The
  correct answer is (A).`` when the prompt asks for that form); ``options.answer`` otherwise.
- ``draw``: a text-to-image model: an image request gets ``n`` deterministic PNGs painted from the
  shapes, colours and people its prompt names (see ``clients/offline_image.py``); a text request is
  answered like ``echo``. Every other behaviour refuses image requests.
- ``vision``: answers ``vision_shapes`` questions by looking at the request's image bytes (read from
  the media store; see ``clients/offline_vision.py``), as a letter when options are offered;
  ``options.answer`` when it sees no question it knows.

Completions carry per-token logprobs: the solver reports ``log(accuracy)`` per token of an answer
it computed (its stated confidence), the other behaviours a seeded value in [log 0.5, 0).

Echo requests (log-likelihood multiple choice: ``echo``, ``max_tokens`` 0) get the prompt's
whitespace tokens (each with the whitespace before it) and their offsets, with a seeded logprob in
[log 0.5, 0) each; except that the solver, when an arithmetic question comes before the prompt's last
word, reads that word as an option: it gets ``log(c)`` if it is the answer the solver believes (wrong
on a seeded ``1 - accuracy`` of questions, like its generations) and ``log((1 - c) / 3)`` otherwise,
``c`` being ``accuracy`` kept within [0.01, 0.99].

``options.fail`` makes a deployment fail on purpose: ``always`` (a permanent error), ``rate:<p>``
(transient errors with probability p per call) or ``after:<n>`` (permanent after n calls in a process).
Calls are counted in files under ``layout.offline_counters(<deployment>)`` of the storage root its
media store reads from, so a test in another process can prove that a cached run sent nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
import re
import threading
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from helmflow import layout
from helmflow.clients import client_kind
from helmflow.clients.base import Client, ClientResult, PermanentError, TransientError, image_bytes
from helmflow.media import ImageOptions, MediaStore
from helmflow.records import Deployment, RequestBody
from helmflow.storage import StorageFull, Store

# also lowercased, contracted, re-spaced (perturbations)
_QUESTION = re.compile(r"what(?:\s+is|'s)\s+(-?\d+)\s+([+\-*])\s+(-?\d+)\s*\?", re.IGNORECASE)
_OPTION = re.compile(r"^\s*\(?([A-Z])[.)]\)?\s+(.*?)\s*$")
_SUBSTITUTION = re.compile(r'([XYZ]) by " (.+?) "')
_OPTION_MARK = re.compile(r"(?:^|\n)\s*\(?([A-Z])[.)]\)?\s*$")  # a text part ending in an option letter
_TOKEN = re.compile(r"\s*\S+|\s+$")  # a word with the whitespace before it: the pieces join back to the text
_MATH = {"+", "-", "*", "="}
_SYMBOLS = ["X", "Y", "Z"]
_DYCK = {")": "(", "]": "[", "}": "{", ">": "<"}
_CLOSER = {v: k for k, v in _DYCK.items()}


class OfflineOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    behavior: Literal["solver", "echo", "constant", "first_option", "vision", "draw"] = Field(
        "solver", description="`solver` (a rule-based symbolic solver), `echo` (HELM's simple model), `constant` "
                              "(always `answer`), `first_option` (always A), `vision` (reads the pixels), "
                              "`draw` (paints images from the prompt: a text-to-image model)")
    accuracy: float = Field(1.0, ge=0, le=1, description="the solver is right on this seeded share of instances")
    answer: str = Field("", description="what `constant` answers")
    latency_ms: float = Field(0.0, ge=0, description="a delay per request")
    fail: str | None = Field(None, description="inject failures: `always`, `rate:<p>` or `after:<n>`")
    images: ImageOptions | None = Field(None, description="image limits, as for a real endpoint")

    @field_validator("fail")
    @classmethod
    def _fail(cls, v: str | None) -> str | None:
        if v is None or v == "always" or re.fullmatch(r"rate:(0(\.\d+)?|1(\.0+)?)", v) or re.fullmatch(r"after:\d+", v):
            return v
        raise ValueError("fail must be 'always', 'rate:<p>' with 0<=p<=1, or 'after:<n>'")


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from text."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


# --------------------------------------------------------------------------- the symbolic solver
def solve(prompt: str) -> str | None:
    """The answer to the last arithmetic question in ``prompt``, if any."""
    found = _QUESTION.findall(prompt)
    if not found:
        return None
    a, op, b = found[-1]
    x, y = int(a), int(b)
    return str(x + y if op == "+" else x - y if op == "-" else x * y)


def last_options(prompt: str) -> list[tuple[str, str]]:
    """The lettered options of the last question: the last run of ``A. text`` lines."""
    runs: list[list[tuple[str, str]]] = [[]]
    for line in prompt.splitlines():
        found = _OPTION.match(line)
        if found:
            runs[-1].append((found.group(1), found.group(2)))
        elif runs[-1]:
            runs.append([])
    return next((r for r in reversed(runs) if r), [])


def last_question(prompt: str) -> str:
    """The prompt from its last arithmetic question on (the query, after any few-shot examples)."""
    starts = [m.start() for m in _QUESTION.finditer(prompt)]
    return prompt[starts[-1]:] if starts else ""


def substitute_rule(line: str) -> str | None:
    """``Rules: <pattern> | Substitutions: X by " w " , ...`` -> the substituted pattern."""
    head, sep, subs = line.partition(" | Substitutions: ")
    if not sep or not head.startswith("Rules: "):
        return None
    mapping = dict(_SUBSTITUTION.findall(subs))
    return " ".join(mapping.get(tok, tok) for tok in head[len("Rules: "):].split())


def _bind(pattern: list[str], words: list[str], bound: dict[str, str]) -> bool:
    """Can ``pattern`` produce ``words`` with each rule symbol standing for one or two words?"""
    if not pattern:
        return not words
    symbol, rest = pattern[0], pattern[1:]
    if symbol not in _SYMBOLS:
        return bool(words) and words[0] == symbol and _bind(rest, words[1:], bound)
    if symbol in bound:
        value = bound[symbol].split()
        return words[: len(value)] == value and _bind(rest, words[len(value):], bound)
    for size in (1, 2):
        chunk = words[:size]
        if (len(chunk) == size and not set(chunk) & _MATH
                and _bind(rest, words[size:], {**bound, symbol: " ".join(chunk)})):
            return True
    return False


def match_pattern(line: str) -> str | None:
    """``Rules: p1 | p2 | p3 | p4 | Result: r`` -> the first pattern that can produce ``r``."""
    if not line.startswith("Rules: ") or " | Result: " not in line:
        return None
    rules, _, result = line[len("Rules: "):].rpartition(" | Result: ")
    words = result.split()
    return next((p for p in rules.split(" | ") if _bind(p.split(), words, {})), None)


def induce_rule(line: str) -> str | None:
    """``Two results: r1 | r2`` -> ``Rule: <pattern>`` explaining both (symbols named by appearance)."""
    if not line.startswith("Two results: ") or " | " not in line:
        return None
    first, _, second = line[len("Two results: "):].partition(" | ")
    a, b = first.split(), second.split()

    def search(i: int, j: int, pairs: dict[tuple[str, str], str]) -> list[str] | None:
        if i == len(a) and j == len(b):
            return []
        if i < len(a) and j < len(b) and a[i] in _MATH:
            rest = search(i + 1, j + 1, pairs) if a[i] == b[j] else None
            return None if rest is None else [a[i], *rest]
        for n in (1, 2):
            for m in (1, 2):
                left, right = a[i:i + n], b[j:j + m]
                if len(left) < n or len(right) < m or set(left + right) & _MATH:
                    continue
                key = (" ".join(left), " ".join(right))
                symbol = pairs.get(key) or (_SYMBOLS[len(pairs)] if len(pairs) < len(_SYMBOLS) else None)
                if symbol is None:
                    continue
                rest = search(i + n, j + m, {**pairs, key: symbol})
                if rest is not None:
                    return [symbol, *rest]
        return None

    pattern = search(0, 0, {})
    return None if pattern is None else "Rule: " + " ".join(pattern)


def close_dyck(sequence: str) -> str | None:
    """The closers a Dyck prefix still needs, with HELM's leading space; None if it is not one."""
    stack: list[str] = []
    for symbol in sequence.split():
        if symbol in _CLOSER:
            stack.append(symbol)
        elif symbol in _DYCK and stack and stack[-1] == _DYCK[symbol]:
            stack.pop()
        else:
            return None
    return " " + " ".join(_CLOSER[s] for s in reversed(stack)) if stack else None


def solve_symbolic(prompt: str) -> str | None:
    """The solver's answer to the last task in ``prompt``, or None if it recognises none."""
    lines = [ln.strip() for ln in prompt.strip().splitlines() if ln.strip()]
    answer = solve(prompt)
    if answer is not None:
        options = last_options(last_question(prompt))
        if not options:
            return answer
        letter = next((letter for letter, text in options if text == answer), None)
        if letter and "correct answer is" in prompt:
            return f"The correct answer is ({letter})."
        return letter
    for line in reversed(lines):
        for parse in (substitute_rule, match_pattern, induce_rule):
            answer = parse(line)
            if answer is not None:
                return answer
        if line.startswith("Input: "):
            return close_dyck(line[len("Input: "):])
    return None


def corrupt(answer: str, prompt: str) -> str:
    """A seeded wrong answer of the same shape, for the noisy solver."""
    if re.fullmatch(r"-?\d+", answer):
        return str(int(answer) + 1 + int(_unit(prompt + "!") * 9))
    letter = re.fullmatch(r"(The correct answer is \()?([A-Z])(\)\.)?", answer)
    if letter:
        options = [o for o, _ in last_options(prompt)] or ["A", "B"]
        wrong = next((o for o in options if o != letter.group(2)), "A")
        return answer.replace(letter.group(2), wrong)
    words = answer.split()
    return " ".join(words[:-1]) if len(words) > 1 else "?"


def echo(prompt: str) -> str:
    lines = [ln for ln in prompt.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return last.split(": ", 1)[1] if ": " in last and len(lines) > 1 else last


def offline_call_count(store: Store, deployment: str) -> int:
    return sum(int(store.read_bytes(k)) for k in store.find(layout.offline_counters(deployment)))


class CallCounter:
    """Counts a deployment's calls into ``layout.offline_counters`` of ``store`` (None: in memory only).

    The calls of one turn of the event loop are written as one file, by a callback queued behind
    them: a batch sent with ``asyncio.gather`` is one file, and it is written before the batch's
    caller resumes, so a reader in another process sees every call of a finished batch.
    """

    def __init__(self, store: Store | None, deployment: str):
        self.store, self.prefix = store, layout.offline_counters(deployment)
        self._lock = threading.Lock()
        self.calls = 0
        self._unwritten = 0

    def add(self) -> int:
        """Count one call (from inside the event loop); its number in this process."""
        with self._lock:
            self.calls += 1
            self._unwritten += 1
            first = self._unwritten == 1
        if first and self.store is not None:
            asyncio.get_running_loop().call_soon(self._write)
        return self.calls

    def _write(self) -> None:
        with self._lock:
            n, self._unwritten = self._unwritten, 0
        if n and self.store is not None:
            try:
                self.store.write_bytes(f"{self.prefix}/{uuid.uuid4().hex}.count", str(n).encode())
            except StorageFull:  # the run reports the full disk itself; these calls are counted with the next write
                with self._lock:
                    self._unwritten += n


@client_kind("offline")
class OfflineClient(Client):
    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self.options = self.validated_options(OfflineOptions, "offline options")
        self.counter = CallCounter(self.media.store, deployment.name)

    def _answer(self, prompt: str) -> tuple[str, float | None]:
        """The answer and, when the solver computed it, its per-token confidence."""
        opts = self.options
        if opts.behavior == "constant":
            return opts.answer, None
        if opts.behavior == "first_option":
            if not last_options(prompt):
                return opts.answer, None
            return ("The correct answer is (A)." if "correct answer is" in prompt else "A"), None
        if opts.behavior == "solver":
            solved = solve_symbolic(prompt)
            if solved is not None:
                if _unit(prompt) >= opts.accuracy:  # a seeded mistake
                    return corrupt(solved, prompt), opts.accuracy
                return solved, opts.accuracy
        return echo(prompt), None

    def _look(self, body: RequestBody) -> str:
        """Answer from the images themselves (``vision``); other behaviours read only the text parts."""
        prompt = "".join(p.text or "" for p in body.parts or [])
        if self.options.behavior != "vision":
            return self._answer(prompt)[0]
        from helmflow.clients.offline_vision import answer

        images: list[bytes] = []
        letters: dict[str, int] = {}
        before = ""
        for part in body.parts or []:
            if part.type == "text":
                before = part.text or ""
                continue
            found = _OPTION_MARK.search(before)
            if found:
                letters[found.group(1)] = len(images)
            images.append(image_bytes(self.media, part, self.deployment.name))
            before = ""
        options = last_options(prompt)
        said = answer(prompt, images, letters or None)
        if said is not None and options and not letters:
            said = next((letter for letter, text in options if text == said), said)
        return said if said is not None else self.options.answer

    def _draw(self, body: RequestBody) -> ClientResult:
        """An image request's ``n`` images (behaviour ``draw``)."""
        if self.options.behavior != "draw":
            raise PermanentError(f"deployment {self.deployment.name!r} generates no images (offline behavior "
                                 f"{self.options.behavior!r}; behavior draw does)")
        from helmflow.clients.offline_image import draw

        ask, prompt = body.image_generation, body.prompt or ""
        assert ask is not None
        images = [draw(prompt, i, ask.width, ask.height, ask.seed) for i in range(ask.n)]
        return ClientResult(text="", prompt_tokens=len(prompt.split()), output_tokens=0, images=images)

    def _score(self, prompt: str, max_tokens: int) -> ClientResult:
        """An echoed prompt with its tokens' logprobs (nothing is generated)."""
        if max_tokens:
            raise PermanentError(f"deployment {self.deployment.name!r}: echo requests generate nothing (max_tokens 0)")
        pieces = _TOKEN.findall(prompt)
        offsets = [0]
        for piece in pieces[:-1]:
            offsets.append(offsets[-1] + len(piece))
        logprobs = [math.log(0.5 + 0.49 * _unit(f"{prompt[:o]}|{t}")) for o, t in zip(offsets, pieces)]
        questions = list(_QUESTION.finditer(prompt)) if self.options.behavior == "solver" else []
        if questions:
            end = questions[-1].end()
            answer = solve(prompt[:end]) or ""
            context = prompt[:end]
            believed = answer if _unit(context) < self.options.accuracy else corrupt(answer, context)
            c = min(max(self.options.accuracy, 0.01), 0.99)
            if offsets[-1] >= end:  # the last word, after the question, is the option
                logprobs[-1] = math.log(c) if pieces[-1].strip() == believed else math.log((1 - c) / 3)
        return ClientResult(text="", finish_reason="length", prompt_tokens=len(pieces), output_tokens=0,
                            tokens=pieces, logprobs=logprobs, text_offsets=offsets[: len(pieces)])

    async def complete(self, body: RequestBody) -> ClientResult:
        n = self.counter.add()
        fail = self.options.fail
        if fail == "always":
            raise PermanentError(f"deployment {self.deployment.name!r} is configured to fail (fail: always)")
        if fail and fail.startswith("after:") and n > int(fail[6:]):
            raise PermanentError(f"deployment {self.deployment.name!r} is configured to fail ({fail})")
        if fail and fail.startswith("rate:") and random.random() < float(fail[5:]):
            raise TransientError(f"deployment {self.deployment.name!r}: simulated transient failure ({fail})")
        if self.options.latency_ms:
            await asyncio.sleep(self.options.latency_ms / 1000)
        if body.echo:
            return self._score(body.prompt or "", body.max_tokens)
        if body.image_generation is not None:
            return await asyncio.to_thread(self._draw, body)
        if body.parts is not None:
            prompt = "".join(p.text or "" for p in body.parts)
            text, confidence = (await asyncio.to_thread(self._look, body)), None
        else:
            prompt = body.prompt if body.prompt is not None else "\n".join(m.content for m in body.messages or [])
            text, confidence = self._answer(prompt)
        for stop in body.stop:
            if stop and stop in text:
                text = text[: text.index(stop)]
        tokens = text.split()
        finish = "length" if len(tokens) > body.max_tokens else "stop"
        tokens = tokens[: body.max_tokens]
        text = " ".join(tokens) if finish == "length" else text
        if confidence is not None:
            logprobs = [math.log(max(confidence, 1e-6))] * len(tokens)
        else:
            logprobs = [math.log(0.5 + 0.49 * _unit(f"{prompt}|{i}|{t}")) for i, t in enumerate(tokens)]
        return ClientResult(
            text=text,
            finish_reason=finish,
            prompt_tokens=len(prompt.split()),
            output_tokens=len(tokens),
            tokens=tokens,
            logprobs=logprobs,
        )
