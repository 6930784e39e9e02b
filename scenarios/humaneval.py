"""HumanEval (Chen et al., 2021): write the body of a Python function from its signature and docstring, as HELM
Classic runs it (``code_scenario.py`` with ``dataset=humaneval``, run entry ``code:dataset=humaneval``, a targeted
reasoning evaluation).

The source is HELM's ``data/HumanEval.jsonl.gz`` of ``openai/human-eval`` (HELM reads branch ``master``; here
the commit below, where the file is the one of July 2021), one JSON object per line with ``task_id``,
``prompt``, ``canonical_solution``, ``test`` and ``entry_point``. Every problem is a test instance, in file order
(ids ``id<i>``; HELM's 0 train and 0 valid instances): the input is the prompt, the reference the canonical
solution, and the problem travels in ``extra["humaneval"]`` for the code metric. HELM's completion adapter: no
instructions and no prefixes (the model continues the prompt), no in-context examples, temperature 0.2, 600
tokens, stop at a line starting ``class``, ``def``, ``if`` or ``print``. Scored by running the program in a jail
(:mod:`helmflow.metrics.code_execution`): ``pass`` (pass@1), HELM's main metric, and ``code_eval_acc``.
"""

from __future__ import annotations

import gzip
import json

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source

COMMIT = "6d43fb980f9fee3c892a914eda09951f772ad10d"  # master on 2025-01-17; the file is unchanged since 2021
FILE = "HumanEval.jsonl.gz"
FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
STOP = ["\nclass", "\ndef", "\nif", "\nprint"]  # HELM's, from the Codex paper


def humaneval_adapter() -> AdapterSpec:
    """HELM's ``get_completion_adapter_spec(temperature=0.2, stop_sequences=STOP, max_tokens=600)``."""
    return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="", output_prefix="",
                       output_suffix="", max_train_instances=0,
                       generation=GenerationParams(max_tokens=600, temperature=0.2, stop=list(STOP)))


@scenario("humaneval")
class HumanEval(Scenario):
    VERSION = "1"
    GIT_REPO = "openai/human-eval"
    GIT_COMMIT = COMMIT
    description = ("HumanEval: complete a Python function from its docstring; the program runs its unit tests in a "
                   "jail (HELM Classic's targeted reasoning evaluation; pass@1).")
    main_metric = "pass"
    metrics = ["code_eval", "efficiency"]
    helm_wording = "the prompt is the problem's own code, continued by the model: no instructions, as in HELM"
    helm_differences = ("humaneval: HELM reads the master branch of openai/human-eval; here a commit of it, the file's "
                        "sha256 recorded at first fetch",
                        "humaneval: the programs run in a bubblewrap jail (no network, the system read-only but for "
                        "two 64 MiB in-memory folders, 1 GiB of address space, 32 processes, 16 MiB per file) where "
                        "HELM runs them in a forked child of its evaluator, limited by the clock alone: a program "
                        "that needs more fails here; HELM's 3 s limit is the program's, the jail's start has 2 s "
                        "more",
                        "humaneval: HELM's conf runs this entry for its code models only (model=code); here for every "
                        "deployment the board is given")

    @property
    def default_adapter(self) -> AdapterSpec:
        return humaneval_adapter()

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.git_url(f"data/{FILE}"), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILE]
        try:
            text = gzip.decompress(read_source(self.name, url)).decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not gzipped UTF-8 text: {exc}") from None
        problems: dict[str, dict] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue  # HELM's _stream_jsonl skips blank lines
            try:
                row = json.loads(line)
                missing = [f for f in FIELDS if not isinstance(row.get(f), str)]
            except (ValueError, AttributeError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number} is not a JSON object: "
                                    f"{exc}") from None
            if missing:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number} has no text field(s) "
                                    f"{', '.join(missing)}")
            problems[row["task_id"]] = row  # HELM keys problems by task id: a repeated id keeps its last row
        return [Instance(id=f"id{i}", split="test", input=Input(text=p["prompt"]),
                         references=[Reference(text=p["canonical_solution"], correct=True)],
                         extra={"humaneval": {k: p[k] for k in ("task_id", "prompt", "test", "entry_point")}})
                for i, p in enumerate(problems.values())]
