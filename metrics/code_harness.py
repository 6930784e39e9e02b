"""The program that runs a model's code inside the jail (:mod:`helmflow.metrics.code_execution` starts it).

It is the evaluator's side of HELM's code metrics, moved out of the evaluator's process: the jail's Python
runs this file with the job (``job.json``, read-only) and the untrusted code runs in this process, as in HELM's
forked helper, so the checks below are HELM's own (``code_metrics_helper.py``: HumanEval's ``check_correctness``
with its ``reliability_guard``; APPS's ``run_test``, from the APPS authors' ``testing_util.py``) and score a
completion the same way. Only the standard library and numpy (HELM's APPS preamble imports it) are used.

The result is one line on the descriptor the job came with, ``<nonce> <json>``, written by the process that
started (a child the code forked never writes it); a run that dies or is killed first writes nothing, which
the evaluator reads as HELM reads an empty result list. Nothing here is a security boundary: the jail is.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import io
import json
import os
import signal
import sys
from types import ModuleType
from typing import Any
from unittest.mock import mock_open, patch

#: what HELM's APPS check puts before every solution (the same modules, in the same order)
APPS_PREAMBLE = "\n".join([
    "import sys", "import time", "import itertools",
    "from itertools import accumulate, product, permutations, combinations", "import collections",
    "from collections import Counter, OrderedDict, deque, defaultdict, ChainMap", "from functools import lru_cache",
    "import math", "from math import sqrt, sin, cos, tan, ceil, fabs, floor, gcd, exp, log, log2", "import fractions",
    "from typing import List, Tuple", "import numpy as np", "import random", "import heapq", "from heapq import *",
]) + "\n"
COMPILE_ERROR, RUNTIME_ERROR, NO_FUNCTION = -2, -1, -3  # HELM's per-test codes besides True/False


class TimeoutException(Exception):  # noqa: N818 (HELM's name: the code may catch it by name)
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutException("Timed out!")


# ---------------------------------------------------------------------------------------------- HumanEval
class _WriteOnly(io.StringIO):
    """HELM's ``WriteOnlyStringIO``: the code's output is kept from the terminal and reading raises."""

    def read(self, *args: Any, **kwargs: Any) -> str:
        raise OSError

    def readline(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        raise OSError

    def readlines(self, *args: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
        raise OSError

    def readable(self, *args: Any, **kwargs: Any) -> bool:
        return False


class _Stdin(contextlib._RedirectStream):
    _stream = "stdin"


#: what HELM's ``reliability_guard`` sets to None before running a HumanEval program (the results of code
#: that calls them, a TypeError, are HELM's too)
GUARDED = {
    "os": ["kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty",
           "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown",
           "chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"],
    "shutil": ["rmtree", "move", "chown"],
    "subprocess": ["Popen"],
    "builtins": ["exit", "quit", "help"],
}
GUARDED_MODULES = ["ipdb", "joblib", "resource", "psutil", "tkinter"]


def _reliability_guard() -> None:
    import builtins
    import shutil
    import subprocess

    faulthandler.disable()
    os.environ["OMP_NUM_THREADS"] = "1"
    modules = {"os": os, "shutil": shutil, "subprocess": subprocess, "builtins": builtins}
    for module, names in GUARDED.items():
        for name in names:
            setattr(modules[module], name, None)
    for name in GUARDED_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]


def humaneval(problem: dict[str, Any], completion: str, timeout: float) -> dict[str, Any]:
    """HELM's ``check_correctness``: the prompt, four spaces, the (stripped) completion, the tests and
    ``check(<entry point>)`` run once within ``timeout`` seconds: ``passed``, ``timed out`` or ``failed: ...``."""
    program = (problem["prompt"] + "    " + completion + "\n" + problem["test"] + "\n"
               + f"check({problem['entry_point']})")
    _reliability_guard()
    stream = _WriteOnly()
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream), _Stdin(stream):
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                exec(program, {})  # noqa: S102 (the point: this process is the jail's)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        result = "passed"
    except TimeoutException:
        result = "timed out"
    except BaseException as e:  # noqa: BLE001 (HELM counts any exception, SystemExit too, as a failure)
        result = f"failed: {e}" if str(e) else f"failed: {type(e).__name__}"
    return {"result": result}


# ---------------------------------------------------------------------------------------------- APPS
def _standard_input_program(code: str) -> str:
    """HELM's wrapping of a standard-input solution: every line but the imports indented by a tab under
    ``def code():``, after the first such line (imports after it are indented too)."""
    lines = [x + "\n" if x.startswith(("from ", "import ")) else "\t" + x + "\n" for x in code.split("\n")]
    out, started = "", False
    for line in lines:
        if line.startswith("\t") and not started:
            out += "stdin = sys.stdin\nstdout = sys.stdout\ndef code():\n" + line
            started = True
        elif started and line.startswith(("from ", "import ")):
            out += "\t" + line
        else:
            out += line
    return out


def _module(source: str) -> ModuleType:
    module = ModuleType("tmp_sol", "")
    exec(source, module.__dict__)  # noqa: S102
    return module


class _Capturing(list):
    """The lines a standard-input solution printed (HELM's ``Capturing``)."""

    def __enter__(self) -> _Capturing:
        self._stdout = sys.stdout
        sys.stdout = self._buffer = io.StringIO()
        self._buffer.close = lambda *a: None  # type: ignore[method-assign]
        return self

    def __exit__(self, *args: Any) -> None:
        self.extend(self._buffer.getvalue().splitlines())
        del self._buffer
        sys.stdout = self._stdout


def _call_with_stdin(method: Any, inputs: str) -> None:
    """HELM's ``call_method``. Its stacked ``patch`` decorators take effect bottom first, so ``read``,
    ``readlines`` and ``readline`` are replaced on the process's own stdin, which is then swapped for a plain
    ``StringIO`` of the input: the code reads that (lines keep their newline); ``open`` reads the input too."""
    lines = iter(inputs.split("\n"))
    with patch("sys.stdin.read", lambda *a: inputs), patch("sys.stdin.readlines", lambda *a: inputs.split("\n")), \
            patch("sys.stdin.readline", lambda *a: next(lines)), patch("sys.stdin", io.StringIO(inputs)), \
            patch("builtins.open", mock_open(read_data=inputs)):
        try:
            method()
        except SystemExit:
            pass


def _int_keys(value: Any) -> Any:
    return {int(k): v for k, v in value.items()}


def _stripped_equal(output: list[str], expected: Any) -> bool:
    """HELM's ``custom_compare_``: the printed lines joined, as they are or each stripped, equal the
    expected text once both are stripped."""
    return any(joined.strip() == expected.strip()
               for joined in ("\n".join(output), "\n".join(o.strip() for o in output)))


def _floats_close(output: Any, expected: Any) -> bool:
    import numpy as np

    values, gold = [float(e) for e in output], [float(e) for e in expected]
    return len(values) == len(gold) and bool(np.allclose(values, gold))


def _standard_input_verdict(output: list[str], expected: Any) -> bool:  # noqa: C901, PLR0912 (HELM's cascade)
    """HELM's comparison of printed lines with a test's expected output: the first of its checks that
    holds passes the test (stripped text; lines; lines without blanks; numbers close; sets of tokens;
    sets of numbers rounded to 3 places). ``expected`` is changed as HELM changes it between checks."""
    if _stripped_equal(output, expected):
        return True
    result: Any = False
    with contextlib.suppress(Exception):
        result = output == [expected]
        if isinstance(expected, list):
            result = result or output == expected
            if isinstance(output[0], str):
                result = result or [e.strip() for e in output] == expected
    if isinstance(result, bool) and result:
        return True
    if isinstance(expected, list):
        expected = [[x.strip() for x in item.split("\n") if x] for item in expected]
    else:
        expected = [x.strip() for x in expected.split("\n") if len(x)]
    with contextlib.suppress(Exception):
        result = output == [expected]
        if isinstance(expected, list):
            result = result or output == expected
    if isinstance(result, bool) and result:
        return True
    output = list(filter(len, output))
    with contextlib.suppress(Exception):
        result = output == [expected]
        if isinstance(expected, list):
            result = result or output == expected
    with contextlib.suppress(Exception):
        result = result or _floats_close(output, expected)
    with contextlib.suppress(Exception):
        if isinstance(output[0], list):
            result = result or _floats_close(output[0], expected[0])
    if isinstance(result, bool) and result:
        return True
    expected = [set(item.split()) for item in expected] if isinstance(expected, list) else set(expected.split())
    try:
        result = output == expected
    except Exception:  # noqa: BLE001 (HELM: this test is then not recorded at all)
        return None  # type: ignore[return-value]
    if isinstance(result, bool) and result:
        return True
    tokens = [set(t) for t in filter(len, (line.split() for line in output))]
    with contextlib.suppress(Exception):
        result = {frozenset(s) for s in tokens} == {frozenset(s) for s in expected}
    with contextlib.suppress(Exception):
        result = result or ({frozenset(round(float(t), 3) for t in s) for s in tokens}
                            == {frozenset(round(float(t), 3) for t in s) for s in expected})
    return result


def apps(tests_json: str, completion: str, timeout: int) -> dict[str, Any]:  # noqa: C901, PLR0912
    """HELM's ``run_test`` of ``input_output.json``'s text: one verdict per test case (True, False, -1 runtime
    error or time-out, -2 compile error, -3 no function to call), each test and the compile within ``timeout``
    seconds of ``signal.alarm``."""
    tests = json.loads(tests_json)
    signal.signal(signal.SIGALRM, _alarm)
    method_name = tests.get("fn_name")
    call_based = method_name is not None
    details: list[str] = []
    if call_based:
        source = APPS_PREAMBLE + completion
    else:
        source, method_name = APPS_PREAMBLE + _standard_input_program(completion), "code"
    signal.alarm(timeout)
    try:
        module = _module(source)
        target: Any = module.Solution() if call_based and "class Solution" in completion else module
    except Exception as e:  # noqa: BLE001
        signal.alarm(0)
        return {"results": [COMPILE_ERROR], "detail": f"compile error: {type(e).__name__}: {e}"[:300]}
    signal.alarm(0)
    try:
        method = getattr(target, method_name)
    except BaseException:  # noqa: BLE001
        return {"results": [NO_FUNCTION], "detail": f"no function {method_name!r} to call"}
    results: list[Any] = []
    outputs = tests["outputs"]
    for index, inputs in enumerate(tests["inputs"]):
        gc.collect()
        with contextlib.suppress(Exception):
            if isinstance(inputs[0], dict):
                inputs = [_int_keys(inputs[0])]
        with contextlib.suppress(Exception):
            if isinstance(outputs[index], dict):
                outputs[index] = [_int_keys(outputs[index])]
        with contextlib.suppress(Exception):
            if isinstance(outputs[index][0], dict):
                outputs[index] = [_int_keys(outputs[index][0])]
        if call_based:
            signal.alarm(timeout)
            try:
                output = method(*inputs)
                if isinstance(output, tuple):
                    output = list(output)
                verdict = output == outputs[index]
                if isinstance(outputs[index], list) and outputs[index]:
                    verdict = verdict or output == outputs[index][0]
                with contextlib.suppress(Exception):
                    if isinstance(output[0], tuple):
                        verdict = verdict or [list(x) for x in output] == outputs[index][0]
                results.append(verdict)
                signal.alarm(0)
            except Exception as e:  # noqa: BLE001
                signal.alarm(0)
                details.append(f"test {index}: {type(e).__name__}: {e}"[:300])
                results.append(RUNTIME_ERROR)
            continue
        signal.alarm(timeout)
        text = "\n".join(inputs) if isinstance(inputs, list) else inputs
        if isinstance(outputs[index], list):
            outputs[index] = "\n".join(outputs[index])
        passed = False
        with _Capturing() as printed:
            try:
                _call_with_stdin(method, text)
                signal.alarm(0)
                passed = True
            except Exception as e:  # noqa: BLE001
                signal.alarm(0)
                details.append(f"test {index}: {type(e).__name__}: {e}"[:300])
                results.append(RUNTIME_ERROR)
            signal.alarm(0)
        if passed:
            verdict = _standard_input_verdict(list(printed), outputs[index])
            if verdict is not None:
                results.append(verdict)
    # HELM counts a test as passed only for the bool True (a numpy ``True`` from comparing arrays is a fail)
    return {"results": [r if type(r) is int else r is True for r in results], "detail": "; ".join(details[:3])}


def main() -> None:
    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    report = os.fdopen(os.dup(1), "w")  # the result's way out; the code's own fd 1 and 2 lead nowhere
    os.set_inheritable(report.fileno(), False)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    main_pid = os.getpid()
    if os.path.isdir("/site"):  # numpy bound from outside the interpreter's prefix (-I ignores PYTHONPATH)
        sys.path.append("/site")
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(100000)
    try:
        if job["kind"] == "humaneval":
            out = humaneval(job["problem"], job["completion"], job["timeout"])
        else:
            out = apps(job["tests"], job["completion"], job["timeout"])
    except BaseException:  # noqa: BLE001 (HELM: the helper process died; no result)
        os._exit(3)
    if os.getpid() != main_pid:  # a process the code forked came back here
        os._exit(0)
    report.write(f"{job['nonce']} {json.dumps(out)}\n")
    report.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
