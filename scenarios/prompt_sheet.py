"""What PartiPrompts and DrawBench share: a header row, then the prompt and its category in the first two
columns, filtered as HELM filters them (the row's category *starts with* ``category``, or ``all``)."""

from __future__ import annotations

import csv
import io

from helmflow.records import Input, Instance
from helmflow.scenarios.base import ScenarioError, read_source


def sheet_instances(scenario: str, url: str, delimiter: str, category: str) -> list[Instance]:
    text = read_source(scenario, url).decode("utf-8")
    out = []
    for i, row in enumerate(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)):
        if i == 0:
            continue  # the header
        if len(row) < 2:
            raise ScenarioError(f"scenario {scenario!r}: {url}: row {i + 1} has no category column")
        prompt, row_category = row[0], row[1]
        if category == "all" or row_category.startswith(category):  # HELM's prefix match
            out.append(Instance(id=f"id{i}", split="test", input=Input(text=prompt), sub_split=row_category))
    return out
