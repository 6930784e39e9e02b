"""HumanEval and APPS fixtures in the datasets' real shapes, with problems written for the tests (no row comes
from the real datasets): HumanEval's gzipped JSON Lines (``task_id``, ``prompt``, ``canonical_solution``,
``test``, ``entry_point``) and APPS's archive (``APPS/<split>/<problem>/`` with ``question.txt``,
``solutions.json``, ``input_output.json`` and, for call-based problems, ``starter_code.py``) with HELM's pinned
problem order (split -> folders)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

from helmflow.scenarios.humaneval import COMMIT

HUMANEVAL = f"raw.githubusercontent.com/openai/human-eval/{COMMIT}/data/HumanEval.jsonl.gz"
APPS = "people.eecs.berkeley.edu/~hendrycks/APPS.tar.gz"
APPS_ORDER = "worksheets.codalab.org/rest/bundles/0x308e1062e2b7448bacc45b4c92af5a75/contents/blob/"

HUMANEVAL_PROBLEMS = [
    {"task_id": "Fixture/0",
     "prompt": 'def triple(n: int) -> int:\n    """Three times n.\n    >>> triple(2)\n    6\n    """\n',
     "canonical_solution": "    return 3 * n\n",
     "test": "def check(candidate):\n    assert candidate(2) == 6\n    assert candidate(-1) == -3\n",
     "entry_point": "triple"},
    {"task_id": "Fixture/1",
     "prompt": 'from typing import List\n\n\ndef evens(xs: List[int]) -> List[int]:\n    """The even numbers of xs, '
               'in order."""\n',
     "canonical_solution": "    return [x for x in xs if x % 2 == 0]\n",
     "test": "def check(candidate):\n    assert candidate([1, 2, 3, 4]) == [2, 4]\n    assert candidate([]) == []\n",
     "entry_point": "evens"},
    {"task_id": "Fixture/2",
     "prompt": 'def shout(word: str) -> str:\n    """The word in capitals with an exclamation mark."""\n',
     "canonical_solution": '    return word.upper() + "!"\n',
     "test": 'def check(candidate):\n    assert candidate("hi") == "HI!"\n',
     "entry_point": "shout"},
]


def humaneval_gz(problems: list[dict] | None = None) -> bytes:
    lines = [json.dumps(p) for p in (HUMANEVAL_PROBLEMS if problems is None else problems)]
    return gzip.compress(("\n".join(lines) + "\n\n").encode())


# APPS: two train problems (solutions indented with spaces, as many are), three test problems (standard input,
# call-based with starter code, and one without test cases, which HELM skips), listed in an order that is not
# sorted (HELM's pinned order)
APPS_PROBLEMS: dict[tuple[str, str], dict[str, str]] = {
    ("train", "0001"): {
        "question.txt": "Read two integers and print their sum.\n\n-----Input-----\nTwo integers a and b.\n",
        "solutions.json": json.dumps(["a, b = map(int, input().split())\nif a > b:\n  print(a + b)\nelse:\n"
                                      "  print(b + a)\n", "print(sum(map(int, input().split())))"]),
        "input_output.json": json.dumps({"inputs": ["1 2\n"], "outputs": ["3\n"]}),
    },
    ("train", "0000"): {
        "question.txt": "Print the word twice.\r\n",
        "solutions.json": json.dumps(["w = input()\nfor _ in range(2):\n    print(w)\n"]),
    },
    ("train", "0002"): {"question.txt": "A problem without solutions is skipped in train.\n"},
    ("test", "0003"): {
        "question.txt": "Print the largest of the numbers on the line.\n",
        "solutions.json": json.dumps(["print(max(map(int, input().split())))\n"]),
        "input_output.json": json.dumps({"inputs": ["1 5 2\n", "7\n", "-3 -9\n"], "outputs": ["5\n", "7\n", "-3\n"]}),
    },
    ("test", "0000"): {
        "question.txt": "Given a list of integers, return the list sorted in decreasing order.\n",
        "starter_code.py": "class Solution:\n    def sortDesc(self, nums: List[int]) -> List[int]:\n        ",
        "input_output.json": json.dumps({"fn_name": "sortDesc", "inputs": [[[3, 1, 2]], [[5]]],
                                         "outputs": [[[3, 2, 1]], [[5]]]}),
    },
    ("test", "0004"): {"question.txt": "A test problem without test cases is skipped.\n"},
}
APPS_ORDER_JSON = {"train": ["0001", "0000", "0002"], "test": ["0003", "0000", "0004"]}


def apps_archive(problems: dict[tuple[str, str], dict[str, str]] | None = None) -> bytes:
    """A gzipped tar in APPS's layout (``APPS/<split>/<problem>/<file>``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for (split, name), contents in (APPS_PROBLEMS if problems is None else problems).items():
            for filename, text in contents.items():
                data = text.encode("utf-8")
                info = tarfile.TarInfo(f"APPS/{split}/{name}/{filename}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def code_files() -> dict[str, bytes]:
    """The three source files under their URLs' paths (host and path), for a local server."""
    return {HUMANEVAL: humaneval_gz(), APPS: apps_archive(), APPS_ORDER: json.dumps(APPS_ORDER_JSON).encode()}
