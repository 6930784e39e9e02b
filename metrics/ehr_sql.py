"""EHRSQL's execution accuracy (HELM's ``EhrSqlAnnotator`` + ``EhrSqlMetric``): the gold and the predicted SQL
run on the scenario's pinned sqlite database and their result sets are compared.

The model's SQL is untrusted. It runs on a connection opened read-only (``mode=ro``, ``immutable=1``) on a
local copy of the stored database, checked against its sha256, with an authorizer that allows reading
only (SELECT, reading columns, functions, recursive CTEs; every write, ATTACH, PRAGMA and schema change is
denied), a time limit (a progress handler aborts it) and a row cap. A refused query is a query error, as
HELM counts any failing query.

As HELM: the prediction is the text inside ``<sql>...</sql>`` when there is such a block, else the whole
stripped completion; backticks are dropped and a leading ``sql`` line removed. The gold result is the gold
query's rows; when it has none (or fails), it is the values of the entry's ``value`` object (HELM's
fallback, a list of values compared with rows that are tuples, so it matches no non-empty prediction).
``ehr_sql_execution_accuracy``: with a gold query, 1 when both results are non-empty and equal as sets, or
when the gold result, the predicted result and the prediction are all empty. ``ehr_sql_query_validity``:
a non-empty prediction whose query ran. The answerable counts are HELM's per-instance 0/1 stats.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

from helmflow.errors import MetricError
from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput

TIME_LIMIT_S = 10.0  # per query
MAX_ROWS = 100_000  # a larger result is a query error
ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
SQL_BLOCK = re.compile(r"<\s*sql\s*>(.*?)<\/?\s*sql\s*>", re.DOTALL | re.IGNORECASE)
STATS = ("ehr_sql_execution_accuracy", "ehr_sql_query_validity", "ehr_sql_precision_answerable",
         "ehr_sql_recall_answerable", "ehr_sql_total_predicted_answerable", "ehr_sql_total_ground_truth_answerable")


class QueryError(Exception):
    """A query that failed, was refused, ran out of time or returned too many rows."""


def _authorize(action: int, *_: Any) -> int:
    return sqlite3.SQLITE_OK if action in ALLOWED else sqlite3.SQLITE_DENY


def run_readonly(path: str | Path, sql: str, seconds: float = TIME_LIMIT_S, max_rows: int = MAX_ROWS) -> list[tuple]:
    """The rows of ``sql`` on the database at ``path``, read-only, within ``seconds``; :class:`QueryError` else."""
    uri = f"file:{urllib.parse.quote(str(Path(path).resolve()))}?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        conn.set_authorizer(_authorize)
        deadline = time.monotonic() + seconds
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        try:
            rows = conn.execute(sql).fetchmany(max_rows + 1)
        except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError) as exc:
            if time.monotonic() > deadline:
                raise QueryError(f"the query ran over its {seconds:g} s limit") from None
            raise QueryError(str(exc)) from None
        if len(rows) > max_rows:
            raise QueryError(f"the query returned more than {max_rows:,} rows")
        return rows
    finally:
        conn.close()


def local_database(key: str, sha256: str) -> Path:
    """A local copy of the stored database ``key`` (sqlite needs a file), checked against ``sha256``, kept
    under its content's name in the temporary folder (verified once per process)."""
    from helmflow.media import scoring_store

    folder = Path(tempfile.gettempdir()) / "helmflow-sqlite"
    path = folder / f"{sha256}.sqlite"
    if path in _VERIFIED:
        return path
    if path.exists() and _sha256(path) == sha256:  # checked once per process
        _VERIFIED.add(path)
        return path
    store = scoring_store().store
    if store is None:
        raise MetricError("no storage root to read the EHRSQL database from")
    data = store.read_bytes(key)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise MetricError(f"{store.url(key)} does not match its sha256 (corrupted store?)")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)
    _VERIFIED.add(path)
    return path


_VERIFIED: set[Path] = set()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def predicted_sql(text: str) -> str:
    """HELM's extraction of the query from a completion."""
    text = text.strip()
    found = SQL_BLOCK.search(text)
    sql = found.group(1).strip() if found else text.strip()
    return re.sub(r"^sql\n", "", sql.replace("`", "").strip(), flags=re.MULTILINE)


def gold_result(path: Path, gold: str, value: dict[str, Any]) -> list:
    try:
        rows: list = run_readonly(path, gold)
    except QueryError:
        rows = []
    return rows or list(value.values())


def ehr_sql_stats(prediction: str, gold: str, gold_rows: list, predicted_rows: list, query_error: str | None,
                  is_impossible: bool) -> dict[str, float]:
    """HELM's ``EhrSqlMetric`` on one instance."""
    prediction, gold = prediction.strip(), gold.strip()
    answerable = not is_impossible and bool(gold)
    predicted_answerable = bool(prediction)
    correct_answerable = int(answerable and predicted_answerable)
    accuracy = 0
    if gold:
        if gold_rows and predicted_rows:
            accuracy = int(set(predicted_rows) == set(gold_rows))
        elif not gold_rows and not predicted_rows and not prediction:
            accuracy = 1
    validity = int(bool(prediction) and query_error is None)
    values = (accuracy, validity, correct_answerable if predicted_answerable else 0,
              correct_answerable if answerable else 0, int(predicted_answerable), int(answerable))
    return {name: float(v) for name, v in zip(STATS, values, strict=True)}


def _check(instance: Any) -> None:
    if "database" not in instance.extra or "database_sha256" not in instance.extra:
        raise MetricError(f"instance {instance.id}: ehr_sql_execution_accuracy needs the scenario's database")


@metric("ehr_sql_execution_accuracy", version="1", helm=HelmEquivalent(STATS), check=_check)
def ehr_sql_execution_accuracy(x: MetricInput) -> dict[str, float]:
    if not x.completions or not x.instance.references:
        return {}
    path = local_database(x.instance.extra["database"], x.instance.extra["database_sha256"])
    gold = x.instance.references[0].text.strip()
    gold_rows = gold_result(path, gold, x.instance.extra.get("value") or {})
    text = x.completions[0].text
    sql = predicted_sql(text)
    rows: list = []
    error: str | None = None
    if not sql:
        error = "No query generated"
    else:
        try:
            rows = run_readonly(path, sql)
        except QueryError as exc:
            error = str(exc)
    return ehr_sql_stats(text, gold, gold_rows, rows, error, bool(x.instance.extra.get("is_impossible")))
