"""EHRSQL (Lee et al., 2022), eICU part: write the SQL query that answers a clinical researcher's question
over an electronic health record database, as MedHELM runs it (``ehr_sql_scenario.py``, ``get_ehr_sql_run_spec``).

HELM reads ``train.json``, ``valid.json`` and ``test.json`` of EHRSQL's eICU folder at its commit (train as
train; valid and test both as test), the schema file ``eicu.sql`` (its ``CREATE TABLE`` statements, each
kept line by line, stripped, joined by a blank line) and the ``eicu.sqlite`` database of
``raulista1997/benchmarkdata`` at its commit. An entry with ``question`` and ``query`` becomes an instance:
the input is ``-- Database Schema:``, the schema, and the question under HELM's ``--`` label (with the 20
spaces its source line continuation leaves in); the reference is the gold ``query``; ``value`` and
``is_impossible`` go to the metric. The metric (``metrics/ehr_sql.py``) runs the gold and the predicted SQL
on the pinned database, read-only, and compares the result sets.
"""

from __future__ import annotations

import hashlib
import json

import fsspec

from helmflow import layout
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation
from helmflow.storage import safe_key

COMMIT = "e172ec8e61391ecae2d872c8d0ba02a622222f54"
FOLDER = "dataset/ehrsql/eicu"
DB_URL = "https://github.com/raulista1997/benchmarkdata/raw/c4c252443fa9c52afb6960f53e51be278639bea2/eicu.sqlite"
DATABASE = "eicu.sqlite"
SPLITS = {"train": "train", "valid": "test", "test": "test"}  # file -> HELM's split, in HELM's order
QUESTION_LABEL = "-- " + " " * 20 + "Question:"  # HELM's f-string continues its line into 20 spaces of indent
INSTRUCTIONS = (
    "You write SQL queries for medical research. Given a database schema and a question, write one valid SQL "
    "query that returns the information the question asks for, ending with ;, and nothing else.\n\n"
    "Input: a database schema, then a question in plain language.\n"
    "Output: the SQL query alone, without explanations.\n\n"
    "If the question cannot be answered from the database, return an empty answer."
)


def extract_schema(text: str) -> str:
    """HELM's ``extract_schema``: each ``CREATE TABLE`` statement's lines (stripped) up to the one ending in
    ``;``, the statements joined by a blank line."""
    tables: list[str] = []
    inside = False
    current: list[str] = []
    for raw in io_lines(text):
        line = raw.strip()
        if line.startswith("CREATE TABLE"):
            inside, current = True, [line]
        elif inside:
            current.append(line)
            if line.endswith(";"):
                inside = False
                tables.append("\n".join(current))
    return "\n\n".join(tables)


def io_lines(text: str) -> list[str]:
    """``readlines()`` of a text file opened with universal newlines."""
    return text.replace("\r\n", "\n").replace("\r", "\n").splitlines(keepends=True)


def helm_input(schema: str, question: str) -> str:
    return f"-- Database Schema:\n{schema}\n\n{QUESTION_LABEL}\n{question}\n\n"


def file_sha256(url: str) -> str:
    digest = hashlib.sha256()
    with fsspec.open(url, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


@scenario("ehr_sql")
class EhrSql(Scenario):
    VERSION = "1"
    GIT_REPO = "glee4810/EHRSQL"
    GIT_COMMIT = COMMIT
    description = "EHRSQL (eICU): write the SQL query answering a clinical research question (MedHELM)."
    main_metric = "ehr_sql_execution_accuracy"
    metrics = ["ehr_sql_execution_accuracy", "exact_match", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Medical Question + Schema", "SQL Query", 1024, stop=())
    helm_wording = WORDING
    helm_differences = (
        "ehr_sql: the three JSON files, the schema and the database are read at HELM's commits, pinned by the sha256 "
        "recorded at first fetch",
        "ehr_sql: SQL runs on a read-only connection (sqlite mode=ro, an authorizer that allows reads only) "
        "with a time limit and a row cap; HELM runs the model's SQL on a writable connection, so a query that "
        "writes (DROP, DELETE) would change the database for the queries after it there, and is a query error here",
    )

    def sources(self) -> list[DataSource]:
        files = [DataSource(filename=f"{name}.json", url=self.git_url(f"{FOLDER}/{name}.json"), sha256_unknown=True)
                 for name in SPLITS]
        return [*files, DataSource(filename="eicu.sql", url=self.git_url(f"{FOLDER}/eicu.sql"), sha256_unknown=True),
                DataSource(filename=DATABASE, url=self.web_url(DB_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        schema = extract_schema(read_source(self.name, files["eicu.sql"]).decode("utf-8"))
        database = {"database": layout.dataset_file(safe_key(self.name), self.dataset_revision(), DATABASE),
                    "database_sha256": file_sha256(files[DATABASE])}
        out: list[Instance] = []
        for name, split in SPLITS.items():
            url = files[f"{name}.json"]
            try:
                entries = json.loads(read_source(self.name, url))
            except json.JSONDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
            if not isinstance(entries, list):
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON array of entries")
            for entry in entries:
                if not isinstance(entry, dict) or "question" not in entry or "query" not in entry:
                    continue
                query = entry["query"] if isinstance(entry["query"], str) else ""  # HELM would fail on a null query
                value = entry.get("value") or {}
                if not isinstance(value, dict):
                    raise ScenarioError(f"scenario {self.name!r}: {url}: entry {entry.get('id')!r}: "
                                        "value is not an object")
                out.append(Instance(
                    id=f"id{len(out)}", split=split, input=Input(text=helm_input(schema, entry["question"])),
                    references=[Reference(text=query, correct=True)],
                    extra={**database, "value": value, "is_impossible": bool(entry.get("is_impossible", False))},
                ))
        return out
