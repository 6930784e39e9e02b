"""APPS (Hendrycks et al., 2021): solve a programming-contest problem in Python, as HELM Classic runs it
(``code_scenario.py`` with ``dataset=apps``, run entry ``code:dataset=apps,timeout=3``, a targeted reasoning
evaluation).

The sources are HELM's: Berkeley's ``APPS.tar.gz`` (``APPS/{train,test}/<problem>/`` with ``question.txt``,
``solutions.json``, ``input_output.json`` and ``starter_code.py``) and the problem order HELM pins for
reproducibility (``code_scenario_apps_pinned_file_order.json`` on CodaLab: split -> problem folders; HELM's
official runs listed folders in an arbitrary ``os.listdir`` order, kept by that file; a split it does not list is
read in sorted order). Train then test, problems in that order, ids ``id<i>``: a train problem needs its question
and solutions, a test problem its question and test cases (others are skipped, as HELM skips them).

The input is HELM's prompt: ``QUESTION:``, the question, the starter code, ``Use Call-Based format`` when there is
starter code (else ``Use Standard Input format``) and ``ANSWER in Python code:``; each text cut at 150,000
characters. The reference is the problem's first solution, re-indented with tabs as HELM re-indents every
solution (HELM keeps all of them; only the first is ever read: it is an in-context example's answer); a problem
without solutions has the empty one. A test problem's test cases (``input_output.json`` as written) travel in
``extra["apps_tests"]`` for the code metric. HELM's completion adapter: two in-context examples (the APPS paper's
appendix D), temperature 0.2, 600 tokens, HELM's four stop sequences. Scored by running the program on its test
cases in a jail (:mod:`helmflow.metrics.code_execution`): ``test_avg``, HELM's main metric, and ``strict_acc``.
"""

from __future__ import annotations

import json
import tarfile

import fsspec

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source

ARCHIVE_URL = "https://people.eecs.berkeley.edu/~hendrycks/APPS.tar.gz"
ARCHIVE = "APPS.tar.gz"
ORDER_URL = "https://worksheets.codalab.org/rest/bundles/0x308e1062e2b7448bacc45b4c92af5a75/contents/blob/"
ORDER = "code_scenario_apps_pinned_file_order.json"
SPLITS: tuple[Split, ...] = ("train", "test")
FILES = ("question.txt", "solutions.json", "input_output.json", "starter_code.py")
LIMIT = 150_000  # HELM's SINGLE_STR_LIMIT, from the APPS codebase
STOP = ["'''", "---", '"""', "\n\n\n"]  # HELM's, chosen by hand to stop before unrelated code


def apps_adapter() -> AdapterSpec:
    """HELM's ``get_completion_adapter_spec(max_train_instances=2, temperature=0.2, stop_sequences=STOP,
    max_tokens=600)``."""
    return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="", output_prefix="",
                       output_suffix="", max_train_instances=2,
                       generation=GenerationParams(max_tokens=600, temperature=0.2, stop=list(STOP)))


def reindent(code: str) -> str:
    """HELM's ``_reindent_code`` (the APPS authors' reindent script, tabs on): the indentation unit is read off
    the first indented line, and every whole unit of leading indentation becomes one tab; lines before it and
    the rest of each line are kept; each line ends with a newline."""
    lines = code.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    unit = ""
    out = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not unit:
            if line and line[0] in " \t" and not line.isspace():
                width = len(line) - len(line.lstrip(" \t"))
                unit = ("\t" if line[0] == "\t" else " ") * width
            else:
                out.append(line)
                continue
        level = 0
        while line[:len(unit) * (level + 1)] == unit * (level + 1):
            level += 1
        out.append("\t" * level + line[len(unit) * level:])
    return "".join(line + "\n" for line in out)


def apps_prompt(question: str, starter_code: str | None) -> str:
    """HELM's ``_make_input_for_apps`` (with its added ``in Python``)."""
    answer_type = "\nUse Call-Based format\n" if starter_code is not None else "\nUse Standard Input format\n"
    return ("\nQUESTION:\n" + question[:LIMIT] + "\n" + (starter_code or "")[:LIMIT] + "\n" + answer_type
            + "\nANSWER in Python code:\n")


def _text(data: bytes) -> str:
    """A file as Python's ``open(path, "r")`` reads it: UTF-8, universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@scenario("apps")
class APPS(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "APPS"
    description = ("APPS: solve a programming-contest problem in Python; the program runs on the problem's test "
                   "cases in a jail (HELM Classic's targeted reasoning evaluation; share of tests passed).")
    main_metric = "test_avg"
    metrics = ["apps_tests", "efficiency"]
    helm_wording = ("QUESTION:, the question, the starter code, the answer format and ANSWER in Python code: are "
                    "HELM's prompt, two in-context examples with their solutions, no instructions, as in HELM")
    helm_differences = ("apps: Berkeley's archive and HELM's pinned problem order (CodaLab) are pinned by their "
                        "sha256 (recorded at first fetch); each problem keeps its first solution only (the one HELM "
                        "reads, as an in-context example's answer), and a train problem no test cases (HELM reads "
                        "them for test problems only)",
                        "apps: the programs run in a bubblewrap jail (no network, the system read-only but for "
                        "two 64 MiB in-memory folders, 1 GiB of address space, 32 processes, 16 MiB per file) where "
                        "HELM runs them in a forked child of its evaluator, limited by the clock alone: a program "
                        "that needs more fails here; HELM's 11 s per completion are the program's, the jail's "
                        "start has 2 s more",
                        "apps: HELM's conf runs this entry for its code models only (model=code); here for every "
                        "deployment the board is given; its entry is in run_entries.conf, which averaged three draws "
                        "of the two in-context examples (one here, the board's recipe)")

    @property
    def default_adapter(self) -> AdapterSpec:
        return apps_adapter()

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=ARCHIVE, url=self.web_url(ARCHIVE_URL), sha256_unknown=True),
                DataSource(filename=ORDER, url=self.web_url(ORDER_URL), sha256_unknown=True)]

    def _problems(self, url: str) -> dict[tuple[str, str], dict[str, bytes]]:
        """(split, problem folder) -> {file name: bytes}, streamed from the archive (its one top folder, APPS/,
        dropped as HELM's unpacking drops it)."""
        out: dict[tuple[str, str], dict[str, bytes]] = {}
        try:
            with fsspec.open(url, "rb") as fh, tarfile.open(fileobj=fh, mode="r|*") as tar:
                for member in tar:
                    parts = member.name.strip("/").split("/")
                    if parts and parts[0] not in SPLITS:
                        parts = parts[1:]
                    if member.isfile() and len(parts) == 3 and parts[0] in SPLITS and parts[2] in FILES and not (
                            parts[0] == "train" and parts[2] == "input_output.json"):  # a train problem's tests: unread
                        handle = tar.extractfile(member)
                        if handle is not None:
                            out.setdefault((parts[0], parts[1]), {})[parts[2]] = handle.read()
        except FileNotFoundError:
            raise ScenarioError(f"scenario {self.name!r}: {url} does not exist") from None
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable tar archive: {exc}") from None
        return out

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            order = json.loads(read_source(self.name, files[ORDER]))
            if not isinstance(order, dict):
                raise ValueError("not a JSON object of split -> problem folders")
        except ValueError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[ORDER]}: {exc}") from None
        problems = self._problems(files[ARCHIVE])
        out: list[Instance] = []
        for split in SPLITS:
            names = order.get(split) or sorted(name for s, name in problems if s == split)
            for name in names:
                found = problems.get((split, name), {})
                if "question.txt" not in found or (split == "train" and "solutions.json" not in found) or (
                        split == "test" and "input_output.json" not in found):
                    continue  # HELM skips a problem without its question, or its solutions / test cases
                where = f"scenario {self.name!r}: {files[ARCHIVE]}: {split}/{name}"
                try:
                    solutions = json.loads(found["solutions.json"]) if "solutions.json" in found else []
                    if not isinstance(solutions, list) or not all(isinstance(s, str) for s in solutions):
                        raise ValueError("solutions.json is not a list of programs")
                    starter = _text(found["starter_code.py"]) if "starter_code.py" in found else None
                    extra = {}
                    if split == "test":
                        tests = _text(found["input_output.json"])
                        parsed = json.loads(tests, parse_int=str)  # APPS has integers past Python's 4,300 digits
                        if not isinstance(parsed, dict) or not isinstance(parsed.get("inputs"), list) or \
                                not isinstance(parsed.get("outputs"), list):
                            raise ValueError("input_output.json has no inputs and outputs lists")
                        extra = {"apps_tests": tests}
                    question = _text(found["question.txt"])
                except (ValueError, UnicodeDecodeError) as exc:
                    raise ScenarioError(f"{where}: {exc}") from None
                answer = reindent(solutions[0])[:LIMIT] if solutions else ""
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=apps_prompt(question, starter)),
                                    references=[Reference(text=answer, correct=True)], extra=extra))
        return out

