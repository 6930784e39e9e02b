"""HELM's code metrics on HumanEval and APPS problems written for the tests, and the jail the generated code runs
in: hostile programs fail with their reason, reach no network and no host file, and leave no process behind."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from helmflow.metrics import METRICS
from helmflow.metrics import code_execution as ce
from helmflow.metrics.base import MetricInput
from helmflow.records import AdapterSpec, Completion, GenerationParams, Instance
from tests.support.code_fixtures import APPS_PROBLEMS, HUMANEVAL_PROBLEMS

needs_jail = pytest.mark.skipif("ce.jail_missing() is not None", reason="the code jail cannot start here")
pytestmark = needs_jail

TRIPLE = HUMANEVAL_PROBLEMS[0]


def _parent(pid: str) -> str | None:
    try:
        for line in (Path("/proc") / pid / "status").read_text().splitlines():
            if line.startswith("PPid:"):
                return line.split()[1]
    except OSError:
        return None
    return None


def _ours(pid: str) -> bool:
    """Started by this test process, or orphaned (what a jail left behind once its parent died). Another pytest
    worker's jails (the Classic board's end-to-end run scores code too) are not this test's."""
    me, seen = str(os.getpid()), 0
    parent = _parent(pid)
    if parent in ("1", "0"):
        return True
    while parent not in (None, "0", "1") and seen < 64:
        if parent == me:
            return True
        parent, seen = _parent(parent), seen + 1
    return False


def leftovers() -> list[str]:
    """Processes of this test still running a jailed program, and pids cgroups its sandboxes left behind (with no
    process in them, or with this test's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"/job/harness.py" in (entry / "cmdline").read_bytes() and _ours(entry.name):
                    found.append(entry.name)
            except OSError:
                pass
    for group in Path("/sys/fs/cgroup").glob("**/helmflow-sandbox-*"):
        try:
            procs = (group / "cgroup.procs").read_text().split()
        except OSError:
            continue  # removed meanwhile
        if not procs or any(_ours(pid) for pid in procs):
            found.append(str(group))
    return found


@pytest.fixture
def clean():
    yield
    deadline = time.monotonic() + 30  # a group is removed once its last process is reaped; a loaded machine is slow
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    # what is left is what stays: another worker's sandbox (the Classic board's end-to-end run scores code) is
    # empty for a moment between its group's creation and its first process, and after its last one exits
    first = set(leftovers())
    time.sleep(1)
    assert sorted(first & set(leftovers())) == []


def humaneval_input(problem: dict, texts: list[str], k: int | None = None) -> MetricInput:
    inst = Instance(id="id0", split="test", input={"text": problem["prompt"]},
                    references=[{"text": problem["canonical_solution"], "correct": True}],
                    extra={"humaneval": {key: problem[key] for key in ("task_id", "prompt", "test", "entry_point")}})
    spec = AdapterSpec(generation=GenerationParams(num_outputs=k or len(texts)))
    return MetricInput(inst, [], [Completion(request_hash="h", sample_index=i, text=t) for i, t in enumerate(texts)],
                       spec)


def apps_input(tests: dict, texts: list[str]) -> MetricInput:
    inst = Instance(id="id0", split="test", input={"text": "q"}, references=[{"text": "", "correct": True}],
                    extra={"apps_tests": json.dumps(tests)})
    return MetricInput(inst, [], [Completion(request_hash="h", sample_index=i, text=t) for i, t in enumerate(texts)],
                       AdapterSpec())


# --------------------------------------------------------------------------- HumanEval
def test_pass_at_k_is_the_unbiased_estimator():
    for n, c, k in [(1, 1, 1), (1, 0, 1), (5, 2, 1), (5, 2, 3), (10, 3, 5), (4, 4, 2)]:
        assert ce.pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))


def test_humaneval_scores_correct_and_incorrect_completions_as_helm(clean):
    fn = METRICS.get("code_eval").fn
    # HELM strips the completion and puts four spaces before it: the body's first line is indented by them
    assert fn(humaneval_input(TRIPLE, ["  return 3 * n\n"])) == {"code_eval_acc": 1.0, "pass": 1.0}
    assert fn(humaneval_input(TRIPLE, ["return n + n"])) == {"code_eval_acc": 0.0, "pass": 0.0}
    # two outputs, the second right: the first is the one scored, pass@1 is the share, @2 the best
    two = fn(humaneval_input(TRIPLE, ["return n", "return n * 3"]))
    assert two == {"code_eval_acc": 0.0, "pass": 0.5, "code_eval_acc@2": 1.0, "pass@2": 1.0}
    assert ce.check_humaneval(HUMANEVAL_PROBLEMS[2], 'return word.lower() + "!"') == (False, "failed: AssertionError")


def test_an_endless_loop_times_out_and_one_that_eats_the_alarm_is_killed(clean):
    assert ce.check_humaneval(TRIPLE, "while True:\n        pass", timeout=0.5) == (False, "timed out")
    job = {"kind": "humaneval", "problem": TRIPLE, "timeout": 0.3,
           "completion": "while True:\n        try:\n            while True:\n                pass\n"
                         "        except BaseException:\n            pass"}
    out = ce.run_in_jail(job, 1.5)
    assert out.result is None and out.reason.startswith("timed out: the run passed its 1.5 s limit and was killed")


def test_a_huge_allocation_fails_with_a_memory_error(clean):
    assert ce.check_humaneval(TRIPLE, "x = bytearray(10 * 2**30)\n    return 3 * n") == (False, "failed: MemoryError")


def test_a_fork_bomb_stops_at_the_process_limit(clean):
    results, detail = ce.run_apps(json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}),
                                  "import os\nwhile True:\n    os.fork()")
    assert results == [-1] and "BlockingIOError" in detail and "Resource temporarily unavailable" in detail


def test_the_code_reaches_no_server_of_the_host(clean):
    hits = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    server.settimeout(0.1)
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            hits.append(1)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # the server answers the host
        for _ in range(100):
            if hits:
                break
            time.sleep(0.05)
        assert hits == [1]
        hits.clear()
        passed, result = ce.check_humaneval(TRIPLE, f"import socket\n    socket.create_connection(('127.0.0.1', {port}), "
                                                    "timeout=2)\n    return 3 * n")
        assert (passed, result) == (False, "failed: [Errno 111] Connection refused")
        results, detail = ce.run_apps(json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}),
                                      f"import socket\nsocket.create_connection(('10.0.0.1', {port}), timeout=2)")
        assert results == [-1] and "Network is unreachable" in detail
        assert hits == []
    finally:
        stop.set()
        thread.join(5)
        server.close()


def test_the_code_reads_and_writes_no_host_file(clean, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    read = ce.check_humaneval(TRIPLE, f"return open({str(secret)!r}).read()")
    assert read == (False, f"failed: [Errno 2] No such file or directory: {str(secret)!r}")
    target = tmp_path / "written.txt"
    write = ce.check_humaneval(TRIPLE, f"open({str(target)!r}, 'w').write('x')\n    return 3 * n")
    assert write[0] is False and "No such file or directory" in write[1] and not target.exists()
    assert ce.check_humaneval(TRIPLE, "open('/usr/evil', 'w')") == (
        False, "failed: [Errno 30] Read-only file system: '/usr/evil'")
    # its own working folder is writable (HELM runs it in a temporary folder)
    assert ce.check_humaneval(TRIPLE, "open('scratch.txt', 'w').write('x')\n    return 3 * n") == (True, "passed")


# --------------------------------------------------------------------------- APPS
def test_apps_scores_standard_input_programs_as_helm(clean):
    tests = json.loads(APPS_PROBLEMS[("test", "0003")]["input_output.json"])
    fn = METRICS.get("apps_tests").fn
    right = "print(max(map(int, input().split())))"
    assert fn(apps_input(tests, [right])) == {"test_avg": 1.0, "strict_acc": 1.0}
    # the first number: right where it is the largest (2 of 3 tests); the best of the completions counts
    assert fn(apps_input(tests, ["print(input().split()[0])"])) == {"test_avg": pytest.approx(2 / 3), "strict_acc": 0.0}
    assert fn(apps_input(tests, ["print(input().split()[0])", right])) == {"test_avg": 1.0, "strict_acc": 1.0}
    assert fn(apps_input(tests, ["print(oops"])) == {"test_avg": 0.0, "strict_acc": 0.0}


def test_apps_scores_call_based_programs_as_helm(clean):
    tests = json.loads(APPS_PROBLEMS[("test", "0000")]["input_output.json"])
    solution = "class Solution:\n    def sortDesc(self, nums):\n        return sorted(nums, reverse=True)"
    assert ce.run_apps(json.dumps(tests), solution) == ([True, True], "")
    assert ce.run_apps(json.dumps(tests), solution.replace("reverse=True", "reverse=False"))[0] == [False, True]
    assert ce.run_apps(json.dumps(tests), "class Solution\n") == (
        [-2], "compile error: SyntaxError: expected ':' (<string>, line 16)")
    # a program that dies before reporting scores HELM's 21 failed tests
    assert ce.run_apps(json.dumps(tests), "import os\nos._exit(0)")[0] == [-1] * 21


# --------------------------------------------------------------------------- parity with HELM's own code
PARITY = json.loads((Path(__file__).parent / "data" / "helm_code_parity.json").read_text())


def test_the_jail_gives_helms_own_verdicts(clean):
    """crfm-helm 0.5.16's code_metrics_helper on the same programs (benchmarks/helm_code_parity.py): APPS's
    per-test scores (stdin and open() as HELM patches them, its output checks, call-based quirks, a numpy True
    failing, a main guard that never runs) and HumanEval's verdicts (its reliability guard included)."""
    for case in PARITY["apps"]:
        results, _ = ce.run_apps(json.dumps(case["tests"]), case["completion"], timeout=1)
        assert [1.0 if r is True else 0.0 for r in results] == case["helm"], case["name"]
    for case in PARITY["humaneval"]:
        passed, result = ce.check_humaneval(case["problem"], case["completion"])
        assert {"passed": passed, "kind": result.split(":")[0]} == case["helm"], case["name"]
