"""HELM's code metrics (``code_metrics.py``, ``evaluate_reference_metrics.py``): HumanEval's ``code_eval_acc`` and
``pass`` (pass@k), APPS's ``test_avg`` and ``strict_acc``, running the model's code only in a jail.

A completion is untrusted code. Each one runs in a fresh bubblewrap jail (:data:`helmflow.render.JAIL`, the one
LilyPond and Jekyll answers run in) by :mod:`helmflow.metrics.code_harness`, never in the evaluator's process:
every namespace of its own (no network: a loopback of its own, nothing else; no other process; no host user), the
system's programs and the evaluator's Python read-only, the job read-only, and the only writable places two small
in-memory folders (``/sheet``, its working folder, and ``/tmp``) that vanish with it; an empty environment;
limits on wall-clock and CPU time, address space (:data:`MEMORY`), file size, and processes (:data:`PROCESSES`,
by a pids cgroup when the evaluator runs as root, else by the user's process limit);
its output is cut at :data:`MAX_OUTPUT`. When the jail's first process ends, every process it started ends too
(its own process namespace), and one past the clock is killed with its whole session.

HELM's scoring, quirks included: HumanEval runs the prompt, four spaces and the stripped completion, then the
tests and ``check(<entry point>)``, within 3 s (``passed``, ``timed out``, ``failed: ...``; a run that returns
nothing is ``timed out``); ``code_eval_acc`` is the first completion's (the most likely) pass, ``pass`` the
unbiased pass@1 estimate over every (reference, completion) pair and ``pass@k`` / ``code_eval_acc@k`` with k
outputs. APPS runs a completion's test cases within 11 s in all (HELM's global limit), 3 s each; a run that
returns nothing scores 21 failed tests (HELM's stand-in); ``test_avg`` is the share of passed tests and
``strict_acc`` whether all passed, each the best over the completions.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from helmflow import render
from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.records import Instance

VERSION = "1"
HUMANEVAL_SECONDS = 3.0  # HELM's check_correctness timeout (and its process is given one more second)
APPS_TEST_SECONDS = 3  # HELM's run entry ``timeout=3``: each test case's signal.alarm
APPS_SECONDS = 11.0  # HELM's join timeout for one APPS completion: the original APPS codebase's global limit
APPS_NO_RESULT_TESTS = 21  # HELM scores a run that returned nothing as this many failed tests
START_SECONDS = 2.0  # the jail's and Python's start, added to each wall-clock limit (HELM forks, which is instant)
MEMORY = 1 << 30  # bytes of address space for the code (HELM sets none)
PROCESSES = 32  # processes the code may have at once (HELM disables os.fork for HumanEval only)
MAX_FILE = 16 << 20  # bytes any file the code writes may reach
SCRATCH = 64 << 20  # bytes of the in-memory working folder, and of /tmp
MAX_OUTPUT = 1 << 20  # bytes of the jail's output read back (the result line is far shorter)
HARNESS = Path(__file__).with_name("code_harness.py")


class CodeJailMissing(MetricError):
    """This machine cannot run the jail (no bubblewrap, no user namespaces): never a score of 0."""


@dataclass
class Outcome:
    """What one run of a completion gave: the harness's result (None when it returned nothing) and why."""

    result: dict[str, Any] | None
    reason: str
    seconds_limit: float = 0.0
    log: str = field(default="", repr=False)


def _python_binds() -> list[tuple[str, str]]:
    """(host path, path in the jail) of the evaluator's Python and numpy, bound read-only at the same place
    (a Python finds its library next to its program); the system's own folders are bound already."""
    prefix = os.path.realpath(sys.base_prefix)
    binds = [] if prefix == "/usr" or prefix.startswith("/usr/") else [(prefix, prefix)]
    spec = importlib.util.find_spec("numpy")
    if spec is not None and spec.submodule_search_locations:
        site = os.path.dirname(os.path.realpath(next(iter(spec.submodule_search_locations))))
        inside = any(site == p or site.startswith(p + "/") for p in ["/usr", *(b[0] for b in binds)])
        if not inside:
            binds += [(os.path.join(site, name), f"/site/{name}") for name in ("numpy", "numpy.libs")
                      if os.path.isdir(os.path.join(site, name))]
    return binds


@functools.cache
def python_executable() -> str:
    """The evaluator's Python interpreter (the base one under a virtual environment)."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return os.path.realpath(base if base.is_file() else getattr(sys, "_base_executable", sys.executable))


def run_in_jail(job: dict[str, Any], seconds: float) -> Outcome:
    """Run one job (:mod:`code_harness`'s ``humaneval`` or ``apps``) in a fresh jail within ``seconds`` of wall
    clock (and as much CPU time per process); the harness's result, or None and the reason it gave none."""
    if shutil.which("bwrap") is None:
        raise CodeJailMissing("generated code runs only in a bubblewrap jail: apt-get install bubblewrap")
    nonce = secrets.token_hex(16)
    folder = tempfile.mkdtemp(prefix="helmflow-code-")
    try:
        job_dir = Path(folder)
        shutil.copyfile(HARNESS, job_dir / "harness.py")
        (job_dir / "job.json").write_text(json.dumps({**job, "nonce": nonce}))
        for path in job_dir.iterdir():
            path.chmod(0o644)
        job_dir.chmod(0o755)
        cmd = list(render.JAIL)
        for host, inside in [*_python_binds(), (folder, "/job")]:
            cmd += ["--ro-bind", host, inside]
        cmd += ["--size", str(SCRATCH), "--tmpfs", "/sheet", "--size", str(SCRATCH), "--tmpfs", "/tmp",
                "--setenv", "OPENBLAS_NUM_THREADS", "1", "--setenv", "OMP_NUM_THREADS", "1",
                "--setenv", "TMPDIR", "/tmp",
                "--", python_executable(), "-I", "/job/harness.py", "/job/job.json"]
        # the harness is the jail's one command: when it ends, its process namespace ends with every process the
        # code started (none keeps the output open); what the jail writes is cut at MAX_OUTPUT outside it
        cmd = ["/bin/sh", "-c", f'"$@" | head -c {MAX_OUTPUT}', "sh", *cmd]
        try:
            code, log = render.sandboxed(cmd, job_dir, seconds, MEMORY, processes=PROCESSES, max_file=MAX_FILE)
        except render.SandboxUnavailable as e:
            raise CodeJailMissing(f"generated code runs only in a jail with a process limit: {e}") from None
        except render.TimeLimit:
            return Outcome(None, f"timed out: the run passed its {seconds:g} s limit and was killed", seconds)
        except render.RenderError as e:
            return Outcome(None, str(e), seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for line in reversed(log.splitlines()):
        if line.startswith(nonce + " "):
            try:
                return Outcome(json.loads(line[len(nonce) + 1:]), "", seconds, log)
            except json.JSONDecodeError:
                break
    return Outcome(None, f"the run ended (exit {code}) before giving a result", seconds, log)


@functools.cache
def jail_missing() -> str | None:
    """Why generated code cannot be run here (None when it can): a trivial job must run in the jail."""
    try:
        outcome = run_in_jail({"kind": "humaneval", "problem": {"prompt": "def f():\n", "entry_point": "f",
                                                                "test": "def check(c):\n    assert c() == 1\n"},
                               "completion": "return 1", "timeout": 5.0}, 30.0)
    except CodeJailMissing as e:
        return str(e)
    if outcome.result != {"result": "passed"}:
        said = outcome.log.strip().splitlines()[-1][:200] if outcome.log.strip() else ""
        return f"the code jail runs no Python: {outcome.reason or outcome.result}{': ' + said if said else ''}"
    return None


# ---------------------------------------------------------------------------------------------- HumanEval
def check_humaneval(problem: dict[str, Any], completion: str, timeout: float = HUMANEVAL_SECONDS) -> tuple[bool, str]:
    """HELM's ``check_correctness`` in the jail: (passed, HELM's result string, or why there was none)."""
    outcome = run_in_jail({"kind": "humaneval", "problem": problem, "completion": completion, "timeout": timeout},
                          timeout + 1 + START_SECONDS)
    if outcome.result is None:
        return False, f"timed out ({outcome.reason})"  # HELM: an empty result list reads as "timed out"
    result = str(outcome.result["result"])
    return result == "passed", result


def pass_at_k(n: int, c: int, k: int) -> float:
    """HELM's ``pass_at_k_estimator``: 1 - C(n - c, k) / C(n, k), the numerically stable product."""
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def _predictions(x: MetricInput) -> list[str]:
    """HELM's predictions: the completions' stripped texts, the most likely first (by summed logprob)."""
    ordered = sorted(x.completions, key=lambda c: -sum(c.logprobs or [0.0]))
    return [c.text.strip() for c in ordered]


def _require_jail() -> None:
    """Stop before any request is sent when the programs could not be run here (checked once per process)."""
    why = jail_missing()
    if why is not None:
        raise CodeJailMissing(why)


def _check_humaneval(inst: Instance) -> None:
    _humaneval_problem(inst)
    _require_jail()


def _check_apps(inst: Instance) -> None:
    if inst.split == "test":
        _apps_tests(inst)
        _require_jail()


def _humaneval_problem(inst: Instance) -> dict[str, Any]:
    problem = inst.extra.get("humaneval")
    if not isinstance(problem, dict) or not {"prompt", "test", "entry_point"} <= set(problem):
        raise MetricError(f"instance {inst.id!r} has no HumanEval problem (extra.humaneval with prompt, test and "
                          "entry_point): code_eval scores HumanEval instances only")
    return problem


@metric("code_eval", version=VERSION, check=_check_humaneval,
        helm=HelmEquivalent(stats=("code_eval_acc", "pass")))
def code_eval(x: MetricInput) -> dict[str, float]:
    """HumanEval: ``code_eval_acc`` (the first prediction passes) and ``pass`` (pass@1 over every
    (reference, prediction) pair), with ``@k`` for k outputs, as HELM's reference metrics compute them."""
    problem = _humaneval_problem(x.instance)
    preds = _predictions(x)
    if not preds:
        return {}
    golds = x.instance.correct_references or x.instance.references[:1]
    passed = [check_humaneval(problem, pred)[0] for pred in preds]  # the test cases are the problem's, one per gold
    results = [float(ok) for _ in golds for ok in passed]
    k = x.adapter.generation.num_outputs
    out = {"code_eval_acc": float(passed[0]), "pass": pass_at_k(len(results), int(sum(results)), 1)}
    if k != 1:
        out[f"code_eval_acc@{k}"] = float(max(passed))
        out[f"pass@{k}"] = pass_at_k(len(results), int(sum(results)), k)
    return out


# ---------------------------------------------------------------------------------------------- APPS
def run_apps(tests: str, completion: str, timeout: int = APPS_TEST_SECONDS,
             seconds: float = APPS_SECONDS) -> tuple[list[Any], str]:
    """HELM's ``run_test`` in the jail: each test case's verdict (True, False or HELM's error codes -1, -2, -3)
    and what went wrong; a run that returned nothing is HELM's 21 runtime errors."""
    outcome = run_in_jail({"kind": "apps", "tests": tests, "completion": completion, "timeout": timeout},
                          seconds + START_SECONDS)
    if outcome.result is None:
        return [-1] * APPS_NO_RESULT_TESTS, outcome.reason
    return list(outcome.result["results"]), str(outcome.result.get("detail", ""))


def apps_scores(results: list[Any]) -> dict[str, float]:
    """``test_avg`` and ``strict_acc`` of one completion's verdicts: only True passes (HELM's
    ``_convert_scores``)."""
    scores = [1.0 if r is True else 0.0 for r in results]
    return {"test_avg": sum(scores) / len(scores), "strict_acc": 1.0 if sum(scores) == len(scores) else 0.0}


def _apps_tests(inst: Instance) -> str:
    """The instance's ``input_output.json`` text (parsed in the jail, which reads integers as long as APPS has)."""
    tests = inst.extra.get("apps_tests")
    if not isinstance(tests, str):
        raise MetricError(f"instance {inst.id!r} has no APPS test cases (extra.apps_tests): apps_tests scores APPS "
                          "test instances only")
    return tests


@metric("apps_tests", version=VERSION, helm=HelmEquivalent(stats=("test_avg", "strict_acc")),
        check=_check_apps)
def apps_tests(x: MetricInput) -> dict[str, float]:
    """APPS: ``test_avg`` and ``strict_acc``, each the best over the completions (HELM's ``APPSMetric``; HELM
    runs the code once per metric, here once for both)."""
    tests = _apps_tests(x.instance)
    best = {"test_avg": 0.0, "strict_acc": 0.0}
    for completion in x.completions:
        scores = apps_scores(run_apps(tests, completion.text.strip())[0])
        best = {name: max(best[name], scores[name]) for name in best}
    return best
