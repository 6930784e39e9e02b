"""WikiTableQuestions (Pasupat and Liang, 2015) as ToRR runs it (unitxt's ``cards.wikitq``): a question
over a Wikipedia table, answered with the table's words; HELM's ``f1_strings``.

The card reads three question files (``random-split-1-train.tsv`` → train, ``random-split-1-dev.tsv`` →
valid, ``pristine-unseen-tables.tsv`` → test; tab-separated ``id, utterance, context, targetValue``), the
first 10,000 rows of each (the recipe's ``loader_limit``). Each row's ``context`` names its table
(``csv/<n>-csv/<k>.csv``), read in the ``.tsv`` form beside it, split on tabs with ``"`` quotes, cells'
newlines turned into spaces and stripped; a table of more than 200 cells (rows × columns) drops the
question. The answers are ``targetValue`` split on ``|``. The table is augmented and serialised by the
entry's ``serialization`` and ``augmentation`` (:mod:`helmflow.scenarios.tables`); one in-context example.

Data: unitxt reads the repository's master branch file by file; here the files come from the dataset's
1.0.2 release zip (the same folders under ``WikiTableQuestions/``), pinned by its sha256 at first fetch.
"""

from __future__ import annotations

import csv
import io
import zipfile

import fsspec

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.helm_lite import generation_spec
from helmflow.scenarios.tables import TABLES_VERSION, TableError, TableParams, parse_delimited, table_cells

RELEASE = "WikiTableQuestions-1.0.2-compact"
ZIP = f"{RELEASE}.zip"
ZIP_URL = f"https://github.com/ppasupat/WikiTableQuestions/releases/download/v1.0.2/{ZIP}"
ROOT = "WikiTableQuestions/"
FILES = (("data/random-split-1-train.tsv", "train"), ("data/random-split-1-dev.tsv", "valid"),
         ("data/pristine-unseen-tables.tsv", "test"))
LOADER_LIMIT = 10_000  # the ToRR recipes' loader_limit: rows read per split
MAX_CELLS = 200  # the card's filter on rows x columns
INSTRUCTIONS = ("Answer the question from the table. Give only the answer, copied exactly as the table has it, "
                "with nothing added. One example input with its answer comes first; answer the last input.")


@scenario("wikitq")
class WikiTQ(Scenario[TableParams]):
    VERSION = f"1.{TABLES_VERSION}"
    SOURCE_REVISION = RELEASE
    Params = TableParams
    description = "WikiTableQuestions: questions over Wikipedia tables, as ToRR serialises and varies them."
    main_metric = "f1_strings"
    metrics = ["f1_strings", "f1_strings_answers", "exact_match", "efficiency"]
    default_adapter = generation_spec("", "Answer", 512, [], instructions=INSTRUCTIONS, max_train_instances=1)
    helm_wording = ("the Question:/Table:/Answer: layout and the one in-context example follow the unitxt card's "
                    "template; the instructions are helmflow's own sentences; the example is drawn by HELM's "
                    "seeded draw, not unitxt's demo sampler")
    helm_differences = ("wikitq: the question and table files come from the 1.0.2 release zip, not the repository's "
                        "master branch, pinned by the zip's sha256 at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=ZIP, url=self.web_url(ZIP_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[ZIP]
        try:
            with fsspec.open(url, "rb") as fh:
                archive = zipfile.ZipFile(io.BytesIO(fh.read()))
        except (FileNotFoundError, zipfile.BadZipFile) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable zip: {exc}") from None
        names = set(archive.namelist())

        def read(member: str) -> str:
            if ROOT + member not in names:
                raise ScenarioError(f"scenario {self.name!r}: {url} has no {ROOT}{member}")
            return archive.read(ROOT + member).decode("utf-8")

        tables: dict[str, str | None] = {}  # context -> rendered table (None: over the cell limit)
        out: list[Instance] = []
        for member, split in FILES:
            rows = list(csv.DictReader(io.StringIO(read(member)), delimiter="\t"))[:LOADER_LIMIT]
            for k, row in enumerate(rows):
                try:
                    context, question, target = row["context"], row["utterance"], row["targetValue"]
                    qid = row["id"]
                except KeyError as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {member} row {k + 1}: no column {exc}") from None
                if context not in tables:
                    table = parse_delimited(read(context.replace(".csv", ".tsv")), "\t", strip_cells=True)
                    try:
                        tables[context] = self.params.render(table) if table_cells(table) <= MAX_CELLS else None
                    except (TableError, IndexError) as exc:
                        raise ScenarioError(f"scenario {self.name!r}: table {context}: {exc}") from None
                rendered = tables[context]
                if rendered is None:
                    continue
                out.append(Instance(id=qid, split=split, input=Input(text=f"Question: {question}\nTable: {rendered}"),
                                    references=[Reference(text=a, correct=True) for a in target.split("|")],
                                    extra={"table": context}))
        return out
