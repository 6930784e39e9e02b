"""The shape of the code (issue 15): the core names no benchmark; a benchmark owns its knowledge.

A judged benchmark is one scenario module, one metric module (with its judge template) and the
registry lines; nothing under ``helmflow/`` (the core) may name one in code. Docstrings, comments
and CLI help text may use one as an example.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

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


def test_judge_templates_are_registered_by_their_metric_modules():
    from helmflow import judges
    from helmflow.metrics import METRICS

    judged = {name: METRICS.get(name).judge for name in METRICS.names() if METRICS.get(name).judge}
    assert judged == {name: name for name in ("wildbench", "omni_math", "harm_bench", "simple_safety_tests", "xstest",
                                              "anthropic_red_team")}
    for metric, template in judged.items():
        assert template in judges.TEMPLATES
        # the metric module, or the metrics package's shared safety helpers it calls
        assert judges.TEMPLATES.get(template).fields.__module__ in (f"helmflow.metrics.{metric}", "helmflow.metrics.safety")
