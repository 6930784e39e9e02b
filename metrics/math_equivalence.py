"""Rule-based equivalence of math answers (``math-verify``), bounded in time for untrusted answers.

math-verify parses LaTeX to SymPy and compares symbolically. It bounds each step with SIGALRM,
which works only on a process's main thread, and scoring runs on worker threads; a model can also
box an answer (``2^{2^{2^{2^{10}}}}``) whose evaluation never ends and that no signal interrupts. So
the checks run in one long-lived helper process per scoring process (this file run as a
script): there each step has math-verify's own ``STEP_TIMEOUT_S``, and if the
helper does not answer within ``HARD_TIMEOUT_S`` it is killed (and restarted for the next check) and
the answer counts as not equivalent.
"""

from __future__ import annotations

import atexit
import json
import logging
import select
import subprocess
import sys
import threading

STEP_TIMEOUT_S = 5  # math-verify's own per-step bound (two parses, one verification)
HARD_TIMEOUT_S = 20.0  # past this the helper is killed: the check is not equivalent
START_TIMEOUT_S = 120.0  # importing SymPy and the LaTeX grammar the first time


def equivalent_here(answer: str, reference: str, timeout_s: int | None = STEP_TIMEOUT_S) -> bool:
    """The check itself, in this process (``timeout_s`` needs the main thread)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    configs = [LatexExtractionConfig(), ExprExtractionConfig()]
    gold = parse(f"${reference}$", configs, parsing_timeout=timeout_s)
    pred = parse(f"${answer}$", configs, parsing_timeout=timeout_s)
    return bool(gold and pred and verify(gold, pred, timeout_seconds=timeout_s))


class _Helper:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", __file__],  # as a script: stdlib + math-verify only, not every metric
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )  # fmt: skip
        if self._read(START_TIMEOUT_S) != "ready":
            self.close()
            raise RuntimeError("the math-verify helper process did not start (is math-verify installed?)")

    def _read(self, timeout_s: float):
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        return json.loads(line) if line else None

    def ask(self, answer: str, reference: str) -> bool | None:
        """The helper's verdict, or None when it did not answer in time (or died)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps([answer, reference]) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        return self._read(HARD_TIMEOUT_S)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_lock = threading.Lock()
_helper: _Helper | None = None


def equivalent(answer: str, reference: str) -> bool:
    """Whether ``answer`` and ``reference`` (LaTeX, no ``$``) are the same mathematical object."""
    global _helper
    with _lock:  # one helper, one check at a time
        if _helper is None or _helper.proc.poll() is not None:
            _helper = _Helper()
        verdict = _helper.ask(answer, reference)
        if verdict is None:
            _helper.close()
            _helper = None
            return False
        return bool(verdict)


@atexit.register
def _stop_helper() -> None:
    if _helper is not None:
        _helper.close()


def serve() -> None:
    """The helper: one JSON ``[answer, reference]`` per line in, one JSON boolean per line out."""
    logging.disable(logging.WARNING)  # math-verify logs unparsable input; the verdict says it
    import math_verify  # noqa: F401 - pay the import before saying ready

    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        answer, reference = json.loads(line)
        try:
            verdict = equivalent_here(answer, reference)
        except Exception:  # noqa: BLE001 - anything math-verify cannot handle is not equivalent
            verdict = False
        print(json.dumps(verdict), flush=True)


if __name__ == "__main__":
    serve()
