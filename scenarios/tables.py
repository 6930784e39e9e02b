"""Tables in prompts, as ToRR varies them (unitxt's ``struct_data_operators``): seven serialisations and
five augmentations, each a pure function of the table (and a seed), shared by the table scenarios.

A table is ``{"header": [column names], "rows": [[cells], ...]}`` (unitxt's ``Table``), cells as the
loaders read them (strings). ``TABLES_VERSION`` is part of every table scenario's version: bump it when
any output here can change.

Serialisations (unitxt's class; the string is unitxt's byte for byte on string cells):

- ``concat`` (``SerializeTableAsConcatenation``): header then rows, every cell joined by one space.
- ``csv`` (``TableSerializer``, what a ToRR recipe without a serializer gets): Python's ``csv.writer``
  with ``\\n`` line ends, the final line end stripped.
- ``df`` (``SerializeTableAsDFLoader``): ``pd.DataFrame({...},\\nindex=[0, ...])`` with the columns as
  ``json.dumps`` of a dict of lists; a repeated column name gets ``_<k>`` (its k-th repeat). A table with
  non-string cells goes through pandas as unitxt's does, so a column of ints and floats shows floats.
- ``html`` (``SerializeTableAsHTML``): ``<table>``, an indented ``<thead>`` row of ``<th>`` and a
  ``<tbody>`` of ``<td>`` rows. Cells are not escaped, as in unitxt.
- ``indexed_row_major`` (``SerializeTableAsIndexedRowMajor``): ``col : a | b row 1 : x | y row 2 : ...``.
- ``json`` (``SerializeTableAsJson``): ``json.dumps`` of ``{row index: {column: cell}}``; a repeated
  column name keeps its last cell, as a dict does.
- ``markdown`` (``SerializeTableAsMarkdown``): ``|a|b|``, ``|---|---|``, then ``|x|y|`` lines.

Augmentations (unitxt's class):

- ``none`` (``NullAugmentor``).
- ``shuffle_rows``, ``shuffle_cols`` (``ShuffleTableRows``, ``ShuffleTableColumns``): ``random.Random``
  seeded as unitxt's ``new_random_generator({"table": table, "seed": seed})`` with unitxt's default
  global seed 42, so the order is unitxt's for the same table and seed. The seed is the ``str`` of the table as
  given, keys beyond ``header`` and ``rows`` included (QTSumm's ``title``), as unitxt seeds from the whole dict.
- ``insert_empty_rows`` (``InsertEmptyTableRows[times=2]``): two rows of empty cells, each at
  ``randint(0, len(rows))``. unitxt draws these from Python's global ``random`` (seeded once when unitxt
  is imported), so its positions depend on every table processed before; here they come from the same
  per-table generator as the shuffles, so each table's result depends on that table and the seed only.
- ``transpose`` (``TransposeTable``): header ``[" ", "0", "1", ...]``, one row per former column.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from helmflow.scenarios.base import DataSource, Scenario

#: the split files of a table-to-text dataset on the Hub (numericNLG, SciGen): ``data/<split>.parquet``, and the
#: split each becomes here; a loader reads at most ``LOADER_LIMIT`` rows of each, as unitxt's loader does
HUB_SPLITS = (("train", "train"), ("validation", "valid"), ("test", "test"))
LOADER_LIMIT = 10_000


def hub_split_sources(scenario: Scenario) -> list[DataSource]:
    """The three ``data/<split>.parquet`` files of ``scenario``'s Hub repository, named ``<split>.parquet``."""
    return [DataSource(filename=f"{split}.parquet", url=scenario.hub_url(f"data/{split}.parquet"))
            for split, _ in HUB_SPLITS]


TABLES_VERSION = "2"  # 2: df shows non-string cells through pandas, as unitxt

Table = dict[str, Any]  # {"header": list[str], "rows": list[list[Any]]}

UNITXT_SEED = 42  # unitxt's ``settings.seed`` default, the root of its per-object generators
EMPTY_ROWS = 2  # ToRR's ``insert_empty_rows[times=2]``


class TableError(ValueError):
    """A table these functions cannot serialise (no header or no rows, as unitxt asserts)."""


def _parts(table: Table) -> tuple[list[str], list[list[Any]]]:
    header, rows = list(table.get("header") or []), [list(r) for r in table.get("rows") or []]
    if not header or not rows:
        raise TableError("a table needs a header and at least one row")
    return header, rows


# --------------------------------------------------------------------------- serialisations
def as_concat(table: Table) -> str:
    header, rows = _parts(table)
    text = " ".join(str(c) for c in header)
    for row in rows:
        text += " " + " ".join(str(c) for c in row)
    return text.strip()


def as_csv(table: Table) -> str:
    header, rows = _parts(table)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().strip()


def _dedup(header: list[str]) -> list[str]:
    return [f"{col}_{header[:i].count(col)}" if header[:i].count(col) else col for i, col in enumerate(header)]


def as_df(table: Table) -> str:
    header, rows = _parts(table)
    columns = _dedup(header)
    if all(isinstance(c, str) for row in rows for c in row):
        data = {col: [row[j] if j < len(row) else None for row in rows] for j, col in enumerate(columns)}
    else:  # numbers (TableBench's JSON cells): pandas' column types, as unitxt's DataFrame (3 -> 3.0 beside 12.5)
        import pandas as pd

        data = pd.DataFrame(rows, columns=columns).to_dict(orient="list")
    return "pd.DataFrame({\n" + json.dumps(data)[1:-1] + "},\nindex=" + str(list(range(len(rows)))) + ")"


def as_html(table: Table) -> str:
    header, rows = _parts(table)
    head = "  <thead>\n    <tr>" + "".join(f"<th>{c}</th>" for c in header) + "</tr>\n  </thead>"
    body = "  <tbody>" + "".join("\n    <tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    body += "\n  </tbody>"
    return f"<table>\n{head}\n{body}\n</table>".strip()


def as_indexed_row_major(table: Table) -> str:
    header, rows = _parts(table)
    text = "col : " + " | ".join(header) + " "
    for i, row in enumerate(rows, start=1):
        text += f"row {i} : " + " | ".join(str(c) for c in row) + " "
    return text.strip()


def as_json(table: Table) -> str:
    header, rows = _parts(table)
    return json.dumps({i: {header[j]: value for j, value in enumerate(row)} for i, row in enumerate(rows)})


def as_markdown(table: Table) -> str:
    header, rows = _parts(table)
    text = "|{}|\n".format("|".join(header)) + "|{}|\n".format("|".join(["---"] * len(header)))
    for row in rows:
        text += "|{}|\n".format("|".join(str(c) for c in row))
    return text.strip()


SERIALIZATIONS: dict[str, Callable[[Table], str]] = {
    "concat": as_concat, "csv": as_csv, "df": as_df, "html": as_html,
    "indexed_row_major": as_indexed_row_major, "json": as_json, "markdown": as_markdown,
}


# --------------------------------------------------------------------------- augmentations
def table_random(table: Table, seed: int = 0) -> random.Random:
    """unitxt's ``new_random_generator({"table": table, "seed": seed})``: the first 8 hex of the md5 of
    that dict's ``str``, as a decimal string after ``"42/"``."""
    digest = hashlib.md5(str({"table": table, "seed": seed}).encode("utf-8")).hexdigest()[:8]
    return random.Random(f"{UNITXT_SEED}/{int(digest, 16)}")


def _canonical(table: Table) -> Table:
    header, rows = _parts(table)
    return {"header": header, "rows": rows}


def no_augmentation(table: Table, seed: int = 0) -> Table:
    return _canonical(table)


def shuffle_rows(table: Table, seed: int = 0) -> Table:
    draw = table_random(table, seed)  # the table as given: a source's extra keys (a title) seed it too, as in unitxt
    table = _canonical(table)
    rows = list(table["rows"])
    draw.shuffle(rows)
    return {"header": table["header"], "rows": rows}


def shuffle_cols(table: Table, seed: int = 0) -> Table:
    draw = table_random(table, seed)
    table = _canonical(table)
    order = list(range(len(table["header"])))
    draw.shuffle(order)
    return {"header": [table["header"][i] for i in order], "rows": [[row[i] for i in order] for row in table["rows"]]}


def insert_empty_rows(table: Table, seed: int = 0, times: int = EMPTY_ROWS, rng: random.Random | None = None) -> Table:
    """``times`` rows of empty strings, each inserted at ``rng.randint(0, len(rows))`` in turn (``rng``:
    the table's generator unless given, e.g. a stream standing in for unitxt's global one)."""
    table = _canonical(table)
    draw = rng or table_random(table, seed)
    rows = list(table["rows"])
    for _ in range(times):
        rows.insert(draw.randint(0, len(rows)), [""] * len(table["header"]))
    return {"header": table["header"], "rows": rows}


def transpose(table: Table, seed: int = 0) -> Table:
    header, rows = _parts(table)
    return {"header": [" "] + [str(i) for i in range(len(rows))],
            "rows": [[header[i]] + [row[i] for row in rows] for i in range(len(header))]}


AUGMENTATIONS: dict[str, Callable[..., Table]] = {
    "none": no_augmentation, "shuffle_rows": shuffle_rows, "shuffle_cols": shuffle_cols,
    "insert_empty_rows": insert_empty_rows, "transpose": transpose,
}


def render_table(table: Table, serialization: str, augmentation: str = "none", seed: int = 0) -> str:
    """The table as a prompt shows it: augmented, then serialised (unitxt's order)."""
    if serialization not in SERIALIZATIONS:
        raise TableError(f"unknown table serialization {serialization!r}; known: {', '.join(SERIALIZATIONS)}")
    if augmentation not in AUGMENTATIONS:
        raise TableError(f"unknown table augmentation {augmentation!r}; known: {', '.join(AUGMENTATIONS)}")
    return SERIALIZATIONS[serialization](AUGMENTATIONS[augmentation](table, seed))


def parse_delimited(text: str, separator: str, strip_cells: bool = False) -> Table:
    """unitxt's ``ParseCSV`` (header in the first line): Python's ``csv.reader`` with ``"`` quotes, rows as
    read (no padding); ``strip_cells`` turns newlines into spaces and strips each cell."""
    lines = list(csv.reader(io.StringIO(text), delimiter=separator, quotechar='"'))
    header, rows = (lines[0] if lines else []), lines[1:]
    if strip_cells:
        header = [c.replace("\n", " ").strip() for c in header]
        rows = [[c.replace("\n", " ").strip() for c in row] for row in rows]
    return {"header": header, "rows": rows}


def table_cells(table: Table) -> int:
    """unitxt's ``GetNumOfTableCells``: rows times header columns."""
    return len(table.get("rows") or []) * len(table.get("header") or [])


class TableParams(BaseModel):
    """The two axes ToRR varies (its 35 runs per dataset), and the augmentations' seed."""

    model_config = ConfigDict(extra="forbid")
    serialization: Literal["concat", "csv", "df", "html", "indexed_row_major", "json", "markdown"] = "csv"
    augmentation: Literal["none", "shuffle_rows", "shuffle_cols", "insert_empty_rows", "transpose"] = "none"
    seed: int = 0

    def render(self, table: Table) -> str:
        return render_table(table, self.serialization, self.augmentation, self.seed)
