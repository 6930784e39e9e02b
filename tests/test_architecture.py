"""The shape of the code: the core names no benchmark; a benchmark owns its knowledge.

A judged benchmark is one scenario module, one metric module (with its judge template) and the
registry lines; nothing under ``helmflow/`` (the core) may name one in code. Docstrings, comments
and CLI help text may use one as an example.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.cli import REPO

BENCHMARKS = re.compile(r"gpqa|wildbench|omni_math|mmlu_pro|ifeval", re.IGNORECASE)
HELP_KEYWORDS = {"help", "description"}


def _code_mentions(path: Path) -> list[str]:
    """Names and string constants in a module's code that name a benchmark (docstrings and help text excluded)."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.keyword) and node.arg in HELP_KEYWORDS:
            skip.update(id(n) for n in ast.walk(node.value))
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            text = node.name
        if text and BENCHMARKS.search(text):
            found.append(f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}: {text[:60]!r}")
    return found


def test_the_core_names_no_benchmark():
    mentions = [m for path in sorted((REPO / "helmflow").rglob("*.py")) for m in _code_mentions(path)]
    assert mentions == []


def _words(folders: list[str], word: str) -> list[str]:
    """Files under ``folders`` whose text (comments and docstrings too) has ``word`` as a whole word."""
    pattern = re.compile(rf"\b{re.escape(word)}\b")
    return [str(p.relative_to(REPO)) for folder in folders for p in sorted((REPO / folder).rglob("*.py"))
            if pattern.search(p.read_text())]


def test_the_core_names_no_board_wide_metric_and_one_module_defines_the_unjudged_run():
    """A board-wide metric is its metric module alone: planning, the CLI, manifests and flows reach it
    through its hook. Running judged scenarios without judges is the selection's concept."""
    from helmflow.metrics import METRICS

    wide = [m for m in METRICS.names() if METRICS.get(m).board_wide is not None]
    assert {"toxicity", "bias"} <= set(wide)
    assert {m: _words(["helmflow", "flows", "tasks"], m) for m in wide} == {m: [] for m in wide}
    assert _words(["helmflow", "flows", "tasks"], "no_judge") == ["helmflow/plan/selection.py"]


def test_judge_templates_are_registered_by_their_metric_modules():
    from helmflow import judges
    from helmflow.metrics import METRICS

    judged = {name: METRICS.get(name).judge for name in METRICS.names() if METRICS.get(name).judge}
    # HELM's instruction-following critique: one template per question, all from its module
    critique = judged.pop("instruction_following_critique")
    assert critique == tuple(f"instruct_{q}" for q in ("helpfulness", "understandability", "completeness",
                                                        "conciseness", "harmlessness", "keywords"))
    assert {judges.TEMPLATES.get(t).fields.__module__ for t in critique} == {"helmflow.metrics.instruction_following"}
    jury = {f"{name}_accuracy": name for name in ("medication_qa", "med_dialog", "medi_qa", "aci_bench",
                                                         "mtsamples_replicate", "mtsamples_procedures", "mimic_bhc",
                                                         "mimic_rrs", "dischargeme", "chw_care_plan", "starr_patient_instructions",
                                                         "mental_health", "medalign")}  # one module, a template per scenario
    assert judged == {name: name for name in ("wildbench", "omni_math", "harm_bench", "simple_safety_tests", "xstest",
                                              "anthropic_red_team", "financebench", "air_bench_2024", "alrage")} | jury
    for metric, template in judged.items():
        assert template in judges.TEMPLATES
        # the metric module, or the metrics package's shared safety helpers it calls
        assert judges.TEMPLATES.get(template).fields.__module__ in (f"helmflow.metrics.{metric}", "helmflow.metrics.safety",
                                                                   "helmflow.metrics.medhelm_jury")


STORAGE_PREFIXES = re.compile(r"^(runs|leaderboards|work|instances|datasets|responses|prefect-results|media|renders|quarantine|leases)/")
PRODUCT_DIRS = ["helmflow", "tasks", "flows", "scenarios", "clients", "metrics"]
# The report's page URLs (report/runs/<id>/index.html, /boards/.../runs/<id>/) mirror the app's routes, not storage.
PAGE_PATHS = {"helmflow/web/export.py", "helmflow/web/pages.py"}


def test_storage_keys_are_spelled_only_in_the_layout_module():
    """Every storage key comes from helmflow/layout.py (f-strings included: their first literal part)."""
    found = []
    for folder in PRODUCT_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name == "layout.py" or str(path.relative_to(REPO)) in PAGE_PATHS:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                text = None
                if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
                    text = node.values[0].value
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    text = node.value
                if isinstance(text, str) and STORAGE_PREFIXES.match(text):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {text!r}")
    assert found == []


# --------------------------------------------------------------------------- the import graph
PACKAGES = {"helmflow": "helmflow", "flows": "helmflow.flows", "tasks": "helmflow.tasks",
            "scenarios": "helmflow.scenarios", "clients": "helmflow.clients", "metrics": "helmflow.metrics"}
# Each module's layer (the longest matching prefix wins); a module may import only its own layer or lower ones.
LAYERS = {
    # 0: records and the contracts everything shares
    "helmflow.records": 0, "helmflow.registry": 0, "helmflow.storage": 0, "helmflow.layout": 0,
    "helmflow.manifests": 0, "helmflow.versions": 0, "helmflow.stats": 0, "helmflow.aio": 0,
    "helmflow.progress": 0, "helmflow.tokenizers": 0, "helmflow.errors": 0, "helmflow.media": 0,
    "helmflow.integrity": 0, "helmflow.releases": 0, "helmflow.stopping": 0, "helmflow.lease": 0,
    "helmflow.settings": 0, "helmflow.outcomes": 0, "helmflow.chunks": 0, "helmflow.render": 0, "helmflow.renders": 0,
    "helmflow.adaptive": 0,
    # 1: the benchmark knowledge (plugins) and the engines that run one request or one file
    "helmflow.adapters": 1, "helmflow.scenarios": 1, "helmflow.metrics": 1, "helmflow.clients": 1,
    "helmflow.perturbations": 1, "helmflow.judges": 1, "helmflow.prompts": 1, "helmflow.journal": 1, "helmflow.datasets": 1,
    "helmflow.query": 1, "helmflow.batches": 1, "helmflow.scoring": 1, "helmflow.request_builder": 1,
    # 2: planning a board and the plain stage functions
    "helmflow.plan": 2, "helmflow.pipeline": 2, "helmflow.aggregate": 2, "helmflow.uptodate": 2, "helmflow.dryrun": 2, "helmflow.reproduce": 2,
    "helmflow.publish": 2, "helmflow.helm": 2, "helmflow.bundle": 2, "helmflow.compare": 2, "helmflow.agreement": 2,
    "helmflow.calibration": 2, "helmflow.reeval": 2, "helmflow.tracking": 2, "helmflow.hub_publish": 2,
    # 3: Prefect: thin tasks and flows
    "helmflow.tasks": 3, "helmflow.flows": 3,
    # 4: commands and the web report
    "helmflow.cli": 4, "helmflow.check": 4, "helmflow.operations": 4,
    "helmflow.mirror": 4, "helmflow.web": 4, "helmflow.devserver": 4,
    "helmflow.__main__": 4, "helmflow.prefect_runtime": 4, "helmflow.prefect_server": 4, "helmflow.terminal": 4,
    "helmflow": 0,  # the package itself: __version__ only
}
KNOWN_CYCLES: list[set[str]] = []


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in PACKAGES.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(REPO / folder).with_suffix("").parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the helmflow modules it imports anywhere (function-level imports count too)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deps |= {resolve(a.name) for a in node.names if a.name.startswith("helmflow")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("helmflow"):
                deps |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else resolve(node.module)
                         for a in node.names}
        graph[name] = deps - {None, name}
    return graph


def layer(module: str) -> int:
    prefixes = [p for p in LAYERS if module == p or (p != "helmflow" and module.startswith(p + "."))]
    assert prefixes, f"{module} has no layer: add it to LAYERS"
    return LAYERS[max(prefixes, key=len)]


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_cycle():
    assert sorted(map(sorted, cycles(import_graph()))) == sorted(map(sorted, KNOWN_CYCLES))


def test_no_module_imports_a_higher_layer():
    graph = import_graph()
    upward = sorted(f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, deps in graph.items() for b in deps if layer(b) > layer(a))
    assert upward == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_every_board_has_a_one_line_flow_with_the_generic_flows_parameters():
    import importlib
    import inspect

    from helmflow.flows.evaluate import evaluate
    from helmflow.plan.spec import board_names

    def described(fn) -> list[tuple[str, object, object]]:
        return [(p.name, p.default, p.annotation) for p in inspect.signature(fn).parameters.values() if p.name != "board"]

    generic = described(evaluate.fn)
    for board in board_names():
        module = importlib.import_module(f"helmflow.flows.{board.replace('-', '_')}")
        board_flow = getattr(module, board.replace("-", "_"))
        assert board_flow.name == board
        assert described(board_flow.fn) == generic, board  # names, defaults and types: a deployment sets them alike


def test_every_package_is_declared_for_the_wheel():
    """pyproject lists packages by hand (package-dir maps flows/, tasks/, … under helmflow): a package
    left out works in an editable install and is missing from a real one."""
    import tomllib

    declared = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = set()
    for folder, package in PACKAGES.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            found.add(".".join([package, *parts]))
    assert found == declared
