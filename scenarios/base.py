"""What a scenario is: where its data lives, how rows become instances, how it is scored."""

from __future__ import annotations

import csv
import io
import json
import pickle
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Generic, TypeVar, cast

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from helmflow.errors import HelmflowError, format_validation_error
from helmflow.media import MediaError, MediaStore, image_bytes_from_hf
from helmflow.prompts import PromptText
from helmflow.records import AdapterSpec, ContentPart, Instance
from helmflow.settings import settings

#: The revision of a scenario whose source revision could not be verified: it reads mirrors only.
UNPINNED = "unpinned"
#: ``helm_wording`` of a scenario whose prompt is the instance's own text (HELM Safety's judged sets).
RAW_PROMPT_WORDING = "the prompt is the instance's own text with nothing added, as in HELM: the same bytes"


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataSource(BaseModel):
    """One pinned file: fetched through fsspec, mirrored under datasets/, checked by sha256.

    ``url`` may be a chained fsspec URL naming a file inside an archive (:meth:`Scenario.archive_url`);
    ``sha256`` is then the member's, so the pin is the content a run reads, whatever the archive's bytes
    (GitHub regenerates its zips). ``gated``: see the field. ``sha256_unknown``: the scenario declares that
    nobody could know the hash when it was written (an unpinned upstream URL); ``helmflow mirror`` records it at
    first fetch and prints the line to fill in, and runs report the data as unverified until the pin is declared.
    """

    model_config = ConfigDict(extra="forbid")
    filename: str
    url: str
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    sha256_unknown: bool = False
    # A file behind a credential (a data use agreement): where and how to get access, one sentence. A board
    # leaves out a scenario whose gated file is on no mirror of this machine, naming this, and runs the rest.
    gated: str = ""

    @model_validator(mode="after")
    def _one_pin(self) -> DataSource:
        if self.sha256 and self.sha256_unknown:
            raise ValueError(f"{self.filename}: a declared sha256 is not unknown; drop sha256_unknown")
        return self

    @property
    def member(self) -> str | None:
        """The file's path inside its archive, for a chained ``zip://``/``tar://`` URL (a mirror may keep it there)."""
        found = re.match(r"^(?:zip|tar)://([^:]+)::", self.url)
        return found.group(1) if found else None


class ScenarioError(HelmflowError, ValueError):
    """Bad scenario input (parameters, data, schema): one sentence naming what and where."""


P = TypeVar("P", bound=BaseModel, covariant=True)


class Scenario(Generic[P]):
    """Subclass, set the class attributes, implement :meth:`load`, and register with ``@scenario``.

    ``VERSION`` is the loader's declared version: bump it whenever the instances it produces can change.
    A scenario with data declares :meth:`sources` (pinned ``hf://`` URLs from :meth:`hub_url`, or raw
    files of a GitHub commit from :meth:`git_url`; mirrors and checks are the
    data path's job, see ``helmflow.datasets``) and reads the stored copies in :meth:`load` with
    :func:`read_parquet_source` / :func:`read_csv_source`, which check the columns it needs.
    ``default_adapter`` may be a property when it depends on parameters (e.g. MMLU-Pro's ``variant``).
    """

    name: ClassVar[str] = ""
    VERSION: ClassVar[str] = "1"
    Params: ClassVar[type[BaseModel]] = NoParams
    description: ClassVar[str] = ""
    main_metric: ClassVar[str] = "exact_match"
    metrics: ClassVar[list[str]] = ["exact_match"]
    # May the instances' text leave the machine (static exports)? False when the dataset asks that its
    # questions are never published in plain text; those exports carry ids and scores only.
    publish_text: ClassVar[bool] = True
    # A dataset behind terms a user accepts (a gated Hub repository): why its rows are never redistributed,
    # one sentence (``helmflow publish hf`` leaves such runs out). Credential-gated files say so in
    # ``DataSource.gated``, and ``publish_text = False`` implies it.
    gated: ClassVar[str] = ""
    # Are the prompts (and so the replies) harmful by design (red-teaming, safety sets)? Then the report
    # shows a content warning and static exports leave their text out unless the user opts in
    # (``helmflow report --include-unsafe-text``).
    unsafe_text: ClassVar[bool] = False
    # What this scenario does differently from HELM's (data source, pinning...), one sentence each:
    # ``helmflow reproduce --explain`` prints them.
    helm_differences: ClassVar[tuple[str, ...]] = ()
    # How this scenario's prompt wording compares with HELM's, described (never HELM's text quoted):
    # ``helmflow reproduce --explain`` prints it for every scenario.
    helm_wording: ClassVar[str] = ""
    # The scenario's own framing sentences (name -> default wording and what it is), which its
    # ``default_adapter`` reads through :meth:`text`; each is a prompt key ``<scenario>.<name>``
    # (see helmflow.prompts), as are the adapter texts its adapter method reads.
    prompt_texts: ClassVar[dict[str, PromptText]] = {}
    # Why the pinned revision itself is not known to be the right one (e.g. read off a stored web page,
    # never checked against the source), one sentence; empty when it was checked. ``helmflow mirror``
    # and ``helmflow show`` print it with how to verify. (An ``unpinned`` revision says so by itself.)
    pin_unverified: ClassVar[str] = ""

    def __init__(self, **params: Any):
        try:
            self._params = cast(P, self.Params(**params))
        except ValidationError as exc:
            raise ScenarioError(f"scenario {self.name!r}: bad parameters: {format_validation_error(exc)}") from None
        self.prompt_overrides: dict[str, str] = {}  # name -> replacement text (a board's ``prompts:``)

    @property
    def default_adapter(self) -> AdapterSpec:
        """The adapter a board starts from; a class attribute in most scenarios."""
        return AdapterSpec()

    @property
    def params(self) -> P:
        """The validated parameters, typed by the scenario's ``Scenario[...]`` base."""
        return self._params

    def text(self, name: str) -> str:
        """One of :attr:`prompt_texts`: the board's replacement if it has one, else our wording."""
        return self.prompt_overrides.get(name, self.prompt_texts[name].default)

    @property
    def param_dict(self) -> dict[str, Any]:
        return self.params.model_dump(mode="json")

    @property
    def spec_string(self) -> str:
        items = ",".join(f"{k}={v}" for k, v in sorted(self.param_dict.items()))
        return f"{self.name}:{items}" if items else self.name

    # A scenario whose files live in a Hugging Face dataset repo names it and its full revision here.
    HUB_REPO: ClassVar[str | None] = None
    HUB_REVISION: ClassVar[str | None] = None
    # A scenario whose files live in a GitHub repository names it (``org/repo``) and a full commit SHA.
    GIT_REPO: ClassVar[str | None] = None
    GIT_COMMIT: ClassVar[str | None] = None
    # A scenario reading web URLs (https, files in archives) names upstream's release here, e.g.
    # ``OpenBookQA-V1-Sep2018``: the mirror folder's name. The pins are the sources' sha256s.
    SOURCE_REVISION: ClassVar[str | None] = None

    def dataset_revision(self) -> str:
        """The pinned revision of the source data; generated scenarios are pinned by their VERSION."""
        return self.HUB_REVISION or self.GIT_COMMIT or self.SOURCE_REVISION or "generated"

    def hub_url(self, path: str) -> str:
        """``hf://datasets/<repo>@<revision>/<path>``: a file of the pinned Hub revision (mirrors replace it)."""
        if not (self.HUB_REPO and self.HUB_REVISION):
            raise ScenarioError(f"scenario {self.name!r} declares no HUB_REPO and HUB_REVISION")
        return f"hf://datasets/{self.HUB_REPO}@{self.HUB_REVISION}/{path}"

    def git_url(self, path: str) -> str:
        """``<raw endpoint>/<org>/<repo>/<commit>/<path>``: a file of the pinned commit (mirrors replace it).

        A commit SHA names the bytes for good (a branch or tag can move), so only a full 40-hex SHA is
        accepted. The endpoint is GitHub's raw file host, or ``$HELMFLOW_GITHUB_RAW`` (a proxy, or a
        local server in tests), read now, like ``HF_ENDPOINT`` for ``hf://``.
        """
        if not (self.GIT_REPO and self.GIT_COMMIT):
            raise ScenarioError(f"scenario {self.name!r} declares no GIT_REPO and GIT_COMMIT")
        if not re.fullmatch(r"[0-9a-f]{40}", self.GIT_COMMIT):
            raise ScenarioError(f"scenario {self.name!r}: GIT_COMMIT {self.GIT_COMMIT!r} "
                                "is not a full 40-hex commit SHA")
        endpoint = settings().github_raw.rstrip("/")
        return f"{endpoint}/{self.GIT_REPO}/{self.GIT_COMMIT}/{path}"

    @staticmethod
    def web_url(url: str) -> str:
        """An upstream ``https://host/path`` URL as it is read now: through ``$HELMFLOW_SOURCE_HOST``
        (``<source host>/host/path``: an artifact proxy, or a local server in tests) when set."""
        proxy = settings().source_host
        if not proxy:
            return url
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in ("http", "https"):
            raise ScenarioError(f"web source {url!r} is not an http(s) URL")
        return f"{proxy.rstrip('/')}/{rest}"

    @classmethod
    def archive_url(cls, url: str, member: str, kind: str | None = None) -> str:
        """The fsspec URL of ``member`` inside the archive at ``url`` (zip, or tar; ``kind`` when the URL
        does not end in .zip or .tar). The archive is fetched once per process into fsspec's
        ``simplecache`` (servers without Range requests, such as GitHub's archive host, work too)."""
        kind = kind or ("zip" if url.endswith(".zip") else "tar" if url.endswith(".tar") else None)
        if kind not in ("zip", "tar"):
            raise ScenarioError(f"archive {url!r}: say whether it is a zip or a tar (kind=)")
        return f"{kind}://{member}::simplecache::{cls.web_url(url)}"

    def sources(self) -> list[DataSource]:
        """Files to mirror before :meth:`load`; empty for generated scenarios."""
        return []

    def load(self, files: dict[str, str]) -> Iterable[Instance]:
        """Instances from the mirrored files (``filename`` -> fsspec URL of the mirrored copy): a list, or a
        generator yielding them one at a time (long contexts: the data path then never holds them all)."""
        raise NotImplementedError

    #: Where :meth:`image` puts images; the data path attaches the store before :meth:`load`.
    media: MediaStore | None = None

    def image(self, data: Any, where: str) -> ContentPart:
        """An image part for ``data`` (bytes, or a Hugging Face ``Image`` struct cell), validated and
        stored under ``media/``; ``where`` names the dataset row in errors."""
        if self.media is None:
            raise ScenarioError(f"scenario {self.name!r}: no media store attached (load through helmflow.datasets)")
        try:
            return self.media.put(image_bytes_from_hf(data, where), where)
        except MediaError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {exc}") from None


# --------------------------------------------------------------------------- reading source files, schema-checked
# Column kinds a loader can require; loose where file writers differ (string vs large_string, int widths).
COLUMN_KINDS: dict[str, Callable[[pa.DataType], bool]] = {
    "string": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    "integer": pa.types.is_integer,
    "float": lambda t: pa.types.is_floating(t) or pa.types.is_integer(t),
    "bool": pa.types.is_boolean,
    # a Hugging Face ``Image`` feature: a struct holding the encoded ``bytes`` (and a ``path``)
    "image": lambda t: pa.types.is_struct(t) and t.get_field_index("bytes") >= 0,
    "list<string>": lambda t: (pa.types.is_list(t) or pa.types.is_large_list(t))
    and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)),
}


def check_columns(scenario: str, url: str, schema: pa.Schema, expected: dict[str, str]) -> None:
    """One clear error naming scenario, URL and column when a file lacks a column or has the wrong type."""
    for column, kind in expected.items():
        if column not in schema.names:
            raise ScenarioError(
                f"scenario {scenario!r}: {url} has no column {column!r} (expected {kind}); "
                f"it has: {', '.join(schema.names) or 'no columns'}"
            )
        actual = schema.field(column).type
        if not COLUMN_KINDS[kind](actual):
            raise ScenarioError(f"scenario {scenario!r}: {url}: column {column!r} has type {actual}, expected {kind}")


def read_source(scenario: str, url: str) -> bytes:
    """The bytes of a stored source file; a missing file is a :class:`ScenarioError`."""
    try:
        with fsspec.open(url, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ScenarioError(f"scenario {scenario!r}: {url} does not exist") from None


class _PlainUnpickler(pickle.Unpickler):
    """Builds only what a pickle spells with its own opcodes (dicts, lists, tuples, sets, strings, bytes,
    numbers, booleans, None): every class or function it names is refused before it is looked up, so
    nothing in the file runs."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names {module}.{name}, and a pickle's classes and functions are never "
                                     "loaded here (only plain dicts, lists, strings and numbers are read)")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it refers to a persistent object, which is never loaded here")


def read_plain_pickle(scenario: str, url: str) -> Any:
    """A downloaded pickle (HELM's ``cnndm.pk``, ``xsum-sampled.pk``) read without running it: plain
    containers and values only (:class:`_PlainUnpickler`); anything else is a :class:`ScenarioError`."""
    return plain_pickle(scenario, url, read_source(scenario, url))


def plain_pickle(scenario: str, where: str, data: bytes, encoding: str = "ASCII") -> Any:
    """:func:`read_plain_pickle` of bytes already read (a member of an archive); ``encoding`` decodes a
    Python 2 pickle's ``str`` values, as ``pickle.load``'s does."""
    try:
        return _PlainUnpickler(io.BytesIO(data), encoding=encoding).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {where}: refused as a pickle of plain data: {exc}") from None


def read_parquet_source(scenario: str, url: str, expected: dict[str, str]) -> pa.Table:
    """A Parquet source file, with the columns a loader needs checked (name and kind)."""
    try:
        table = pq.read_table(io.BytesIO(read_source(scenario, url)))
    except pa.ArrowInvalid as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable Parquet file: {exc}") from None
    check_columns(scenario, url, table.schema, expected)
    return table


def read_csv_source(scenario: str, url: str, expected: list[str]) -> list[dict[str, str]]:
    """Rows of a CSV source file (RFC 4180 quoting, UTF-8, optional BOM), the needed columns checked."""
    try:
        text = read_source(scenario, url).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not UTF-8 text: {exc}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    check_columns(scenario, url, pa.schema([(name, pa.string()) for name in dict.fromkeys(header)]),
                  dict.fromkeys(expected, "string"))
    rows = list(reader)
    for index, row in enumerate(rows):
        if None in row or any(row[c] is None for c in expected):
            raise ScenarioError(f"scenario {scenario!r}: {url}: data row {index} does not have {len(header)} fields")
    return rows


def read_jsonl_lines(scenario: str, url: str) -> list[tuple[int, str]]:
    """The non-blank lines of a JSON Lines source file with their 1-based line numbers (for errors)."""
    try:
        text = read_source(scenario, url).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not UTF-8 text: {exc}") from None
    return [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def check_unique_ids(where: str, ids: list[tuple[int, str]], unit: str = "line") -> None:
    """Instance ids are keys (requests, stats and the web report join on them): an id on two rows is
    one error naming the id and its ``unit``s (lines of a file, or rows of a generated list)."""
    places: dict[str, list[int]] = {}
    for place, ident in ids:
        places.setdefault(ident, []).append(place)
    twice = {ident: at for ident, at in places.items() if len(at) > 1}
    if twice:
        first = next(iter(twice))
        more = f" (and {len(twice) - 1} more duplicated id(s))" if len(twice) > 1 else ""
        at = [str(n) for n in twice[first]]
        raise ScenarioError(f"{where}: id {first!r} appears on {unit}s {', '.join(at[:-1])} and {at[-1]}{more}; "
                            "ids must be unique")


RowT = TypeVar("RowT", bound=BaseModel)


def parse_jsonl_row(where: str, line: str, model: type[RowT]) -> RowT:
    """One JSON Lines row validated against the dataset's schema; errors name the place (``where``)."""
    try:
        return model.model_validate(json.loads(line))
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{where} is not JSON: {exc}") from None
    except ValidationError as exc:
        raise ScenarioError(f"{where}: {format_validation_error(exc)}") from None


class LegacyDraws:
    """``numpy.random.RandomState(seed)``'s legacy ``randint`` and ``shuffle`` draws, without numpy's
    per-call overhead (most of the time of generating HELM's 11,000 synthetic-reasoning samples).

    Both take 32-bit outputs of MT19937 and reject those above the range under the smallest
    covering bit mask (``random_interval``; masked ``randint``), so the raw outputs, fetched from the
    same RandomState in blocks, give exactly the same numbers in the same order.
    """

    BLOCK = 8192

    def __init__(self, seed: int):
        self._rng = np.random.RandomState(seed)
        self._buf: list[int] = []
        self._pos = 0

    def _refill(self) -> None:
        self._buf = self._rng.randint(0, 2**32, size=self.BLOCK, dtype=np.uint64).tolist()
        self._pos = 0

    def interval(self, top: int) -> int:
        """A value in ``[0, top]`` (numpy's ``random_interval``; no draw when ``top`` is 0)."""
        if top == 0:
            return 0
        mask = (1 << top.bit_length()) - 1
        while True:  # the next 32-bit output, inlined: this runs about a million times for HELM's Dyck items
            if self._pos == len(self._buf):
                self._refill()
            value = self._buf[self._pos] & mask
            self._pos += 1
            if value <= top:
                return value

    def stream(self, top: int) -> Iterator[int]:
        """The values of successive :meth:`interval` calls with this ``top``, masked and filtered a block at a
        time (a third of the time of Dyck's 600,000 draws), for a caller that draws nothing else meanwhile."""
        if top == 0:
            while True:
                yield 0
        mask = (1 << top.bit_length()) - 1
        while True:
            if self._pos < len(self._buf):  # what earlier draws left of the block first
                block = np.array(self._buf[self._pos:], dtype=np.uint64)
            else:
                block = self._rng.randint(0, 2**32, size=self.BLOCK, dtype=np.uint64)
            self._buf, self._pos = [], 0
            values = block & np.uint64(mask)
            yield from values[values <= top].tolist()

    def randint(self, low: int, high: int) -> int:
        """``RandomState.randint(low, high)`` (high exclusive)."""
        return low + self.interval(high - low - 1)

    def shuffle(self, items: list) -> None:
        """``RandomState.shuffle`` of a list: Fisher-Yates from the end."""
        for i in range(len(items) - 1, 0, -1):
            j = self.interval(i)
            items[i], items[j] = items[j], items[i]


def pandas_sample_split(count: int, frac: float, seed: int) -> tuple[list[int], list[int]]:
    """HELM's random split of ``count`` rows by pandas: ``train = df.sample(frac=frac, random_state=seed)``,
    ``test = df.drop(train.index).sample(frac=1, random_state=seed)``, as row positions in that order.

    pandas draws ``round(frac * count)`` rows (Python's rounding) as the head of
    ``RandomState(seed).permutation(count)``, and shuffles the rest, kept in file order, with a fresh
    ``RandomState(seed)``; the same numbers without pandas (the tests check them against pandas).
    """
    size = round(frac * count)
    train = np.random.RandomState(seed).permutation(count)[:size].tolist()
    chosen = set(train)
    rest = [i for i in range(count) if i not in chosen]
    return train, [rest[j] for j in np.random.RandomState(seed).permutation(len(rest)).tolist()]


def read_xlsx_rows(scenario: str, url: str, skip_rows: int = 0) -> tuple[list[str], list[dict[str, Any]]]:
    """The header and rows of the first sheet of an Excel workbook, as ``pandas.read_excel(path,
    skiprows=skip_rows)`` reads them through openpyxl (cell values, the row after the skipped ones as header,
    trailing empty rows dropped); rows with no value at all are left out. Needs the ``enterprise`` extra."""
    try:
        import openpyxl
    except ModuleNotFoundError:
        raise ScenarioError(f"scenario {scenario!r} reads Excel files with openpyxl: "
                            "pip install 'helmflow[enterprise]'") from None
    try:
        book = openpyxl.load_workbook(io.BytesIO(read_source(scenario, url)), read_only=True, data_only=True)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable .xlsx workbook: {exc}") from None
    try:
        cells = [tuple(row) for row in book.worksheets[0].iter_rows(values_only=True)][skip_rows:]
    finally:
        book.close()
    if not cells:
        raise ScenarioError(f"scenario {scenario!r}: {url}: the first sheet has no header row")
    header = ["" if c is None else str(c) for c in cells[0]]
    rows = [dict(zip(header, row, strict=False)) for row in cells[1:] if any(c is not None for c in row)]
    return header, rows
