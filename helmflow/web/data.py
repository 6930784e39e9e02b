"""Read-only views of published releases and runs.

A run's instances are read one chunk at a time: a chunk is ``CHUNK_ROWS`` request rows, inside one
Parquet row group of ``requests.parquet`` and ``completions.parquet`` (publish writes groups of
1,000 rows; any layout reads correctly, only the groups holding the chunk are decoded). The narrow
columns every page needs (instance ids, stats, references; for filtering: split, main score, error
and truncation flags) are read once per run and cached, so every page after the first costs one row
group whatever the run's size.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from helmflow import layout
from helmflow.integrity import CorruptFile, read_manifest, verify_files
from helmflow.manifests import ReleaseManifest, RunManifest
from helmflow.releases import latest_release_id
from helmflow.storage import Store, safe_key

CHUNK_ROWS = 100
CORRECT_AT = 0.5  # an instance counts as correct when its main metric is at least this


def read_parquet_named(store: Store, key: str) -> list[dict[str, Any]]:
    """A small published Parquet file's rows; a file pyarrow cannot parse is a :class:`CorruptFile`."""
    try:
        return store.read_parquet(key).to_pylist()
    except (pa.ArrowInvalid, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CorruptFile(store.url(key), f"not a readable Parquet file ({exc})") from None


class NotFound(LookupError):
    """No such board, release, run or chunk (a 404 in the app)."""


def check_name(name: str) -> str:
    """A URL segment that must already be a storage-safe key: anything else cannot exist (no ``..``)."""
    try:
        ok = bool(name) and safe_key(name) == name
    except ValueError:
        ok = False
    if not ok:
        raise NotFound(f"no such name {name!r}")
    return name


@dataclass
class Release:
    board: str
    release_id: str
    manifest: ReleaseManifest
    leaderboard: list[dict[str, Any]]
    runs: list[dict[str, Any]]

    @property
    def info(self) -> dict[str, Any]:
        """release.json as data, for the templates."""
        return self.manifest.to_json()

    @property
    def labels(self) -> list[str]:
        return list(self.manifest.scenarios)

    @property
    def metric_groups(self) -> list[dict[str, Any]]:
        """The board's metric groups (name, description, columns), as published in release.json."""
        return [g.to_json() for g in self.manifest.metric_groups]

    @property
    def content_warning(self) -> bool:
        """Some scenario of the release has harmful prompts by design (its scenario declares ``unsafe_text``)."""
        return self.manifest.content_warning


class Reports:
    """Boards, releases and runs under one storage root (runs cached per process)."""

    def __init__(self, store: Store, max_cached_runs: int = 16):
        self.store = store
        self._runs: OrderedDict[tuple[str, str], Run] = OrderedDict()
        self._max = max_cached_runs
        self._lock = threading.Lock()
        self._diffs: dict[tuple[str, str, str], dict[str, Any]] = {}  # release diffs and agreements, by releases

    def boards(self) -> list[str]:
        return [k.rsplit("/", 1)[-1] for k in self.store.ls(layout.LEADERBOARDS) if self.releases(k.rsplit("/", 1)[-1])]

    def infos(self, board: str) -> dict[str, ReleaseManifest]:
        """Every readable ``release.json`` of a board by release id (unreadable ones: :meth:`broken`)."""
        board = check_name(board)
        out = {}
        for key in self.store.ls(layout.board_dir(board)):
            release_id = key.rsplit("/", 1)[-1]
            if self.store.exists(manifest := layout.release_json(board, release_id)):
                try:
                    out[release_id] = self._release_manifest(manifest)
                except CorruptFile:
                    continue
        return out

    def _release_manifest(self, key: str) -> ReleaseManifest:
        try:
            return ReleaseManifest.model_validate(read_manifest(self.store, key))
        except ValueError as exc:  # valid JSON, not a release manifest
            raise CorruptFile(self.store.url(key), f"not a release manifest ({exc})") from None

    def broken(self) -> list[str]:
        """One line per release.json that cannot be read, naming the file (shown on the home page)."""
        out = []
        for board_key in self.store.ls(layout.LEADERBOARDS):
            board = board_key.rsplit("/", 1)[-1]
            for key in self.store.ls(board_key):
                if self.store.exists(manifest := layout.release_json(board, key.rsplit("/", 1)[-1])):
                    try:
                        self._release_manifest(manifest)
                    except CorruptFile as exc:
                        out.append(str(exc))
        return out

    def releases(self, board: str, subsets: bool | None = None) -> list[str]:
        """Release ids, newest first (by creation time: ids of one day do not sort by time);
        ``subsets`` True or False keeps only subset or only full-board releases."""
        infos = self.infos(board)
        ids = [i for i, info in infos.items() if subsets is None or info.subset == subsets]
        return sorted(ids, key=lambda i: (infos[i].created_at, i), reverse=True)

    def previous(self, release: Release) -> Release | None:
        """The release of the same kind (full board or subset) published just before this one, if any."""
        ids = self.releases(release.board, subsets=release.manifest.subset)
        if release.release_id not in ids:
            return None
        at = ids.index(release.release_id)
        return self.release(release.board, ids[at + 1]) if at + 1 < len(ids) else None

    def diff(self, release: Release, previous: Release) -> dict[str, Any]:
        """:func:`helmflow.compare.release_diff` of the two releases (computed once per process: both are
        immutable once published)."""
        from helmflow import compare

        key = (release.board, previous.release_id, release.release_id)
        with self._lock:
            found = self._diffs.get(key)
        if found is None:
            found = compare.release_diff(self.store, release.board, previous.release_id, release.release_id)
            with self._lock:
                self._diffs[key] = found
        return found

    def agreement(self, release: Release) -> list[dict[str, Any]]:
        """The judges' agreement on every juried cell: the release's ``agreement.parquet`` when
        ``helmflow agreement`` wrote one (with its human labels), else computed from the verdicts."""
        from helmflow import agreement

        key = layout.agreement(release.board, release.release_id)
        if self.store.exists(key):
            return read_parquet_named(self.store, key)
        cache = ("agreement", release.board, release.release_id)
        with self._lock:
            found = self._diffs.get(cache)
        if found is None:
            found = {"rows": agreement.release_agreement(self.store, release.runs, release.labels)}
            with self._lock:
                self._diffs[cache] = found
        return found["rows"]

    def trees(self, release: Release) -> list[dict[str, Any]]:
        """Per scenario whose metric declares a hierarchy of its stats (a taxonomy, ``Metric.tree``): the
        nodes as a tree, each with its instance count and every model's value (mean and interval, on the
        split of the run's main metric), computed once per process."""
        cache = ("trees", release.board, release.release_id)
        with self._lock:
            found = self._diffs.get(cache)
        if found is None:
            found = {"rows": [t for label in release.labels if (t := self._tree(release, label))]}
            with self._lock:
                self._diffs[cache] = found
        return found["rows"]

    def _tree(self, release: Release, label: str) -> dict[str, Any] | None:
        from helmflow.datasets import read_instances
        from helmflow.metrics import METRICS

        cells = [r for r in release.runs if r["scenario"] == label and r.get("run_id") and r["status"] != "missing"]
        stored = [(cell["deployment"], run) for cell in cells if (run := self._stored_run(cell["run_id"]))]
        first = stored[0][1] if stored else None  # one run says whether its metrics have a tree
        trees = [tree for m in (first.manifest.metrics if first else {})
                 if m in METRICS and (tree := METRICS.get(m).tree) is not None]
        if first is None or not trees or not self.store.exists(first.instances_key):
            return None
        nodes = trees[0](read_instances(self.store, first.instances_key))
        runs = stored
        values: dict[str, dict[str, dict[str, Any]]] = {}
        for deployment, run in runs:
            splits = [s["split"] for s in run.summary if s["name"] == run.main_metric]
            split = "test" if "test" in splits else (splits[0] if splits else "test")
            values[deployment] = {s["name"]: s for s in run.summary if s["split"] == split}
        out: dict[str, dict[str, Any]] = {}
        roots: list[dict[str, Any]] = []
        for node in nodes:
            stats = {d: v.get(node.stat) for d, v in values.items()}
            counts = [s["count"] for s in stats.values() if s]
            entry: dict[str, Any] = {"id": node.id, "name": node.name, "stat": node.stat, "values": stats,
                                     "count": max(counts) if counts else None, "children": []}
            out[node.id] = entry
            parent = out.get(node.parent) if node.parent is not None else None
            (parent["children"] if parent else roots).append(entry)
        return {"label": label, "models": [d for d, _ in runs], "nodes": roots}

    def paired(self, release: Release) -> list[dict[str, Any]]:
        """Every pair of the release's models on every scenario (:func:`helmflow.compare.all_pairs`),
        computed once per process."""
        from helmflow import compare

        cache = ("pairs", release.board, release.release_id)
        with self._lock:
            found = self._diffs.get(cache)
        if found is None:
            view = compare.ReleaseView(board=release.board, release_id=release.release_id, manifest=release.manifest,
                                       runs=release.runs)
            found = {"rows": compare.all_pairs(self.store, view)}
            with self._lock:
                self._diffs[cache] = found
        return found["rows"]

    def changes(self, release: Release, previous: Release) -> list[dict[str, Any]]:
        """The cells that differ from the previous release (new, removed, or re-run, and which versions
        moved), most significant change first: each with its score change, the paired interval of
        the change on the instances both runs scored, and the instances that flipped."""
        out = []
        for cell in self.diff(release, previous)["cells"]:
            if cell["what"] == "same run":
                continue
            before, after = cell["before"], cell["after"]
            out.append(cell | {"score_delta": after - before if None not in (before, after) else None})
        return out

    def latest(self, board: str) -> str:
        """The board's default release: its pointers (full releases before subsets), else the newest."""
        board = check_name(board)
        pointed = latest_release_id(self.store, board)
        if pointed and pointed in self.infos(board):
            return pointed
        releases = self.releases(board, subsets=False) or self.releases(board)
        if not releases:
            raise NotFound(f"board {board!r} has no release")
        return releases[0]

    def release(self, board: str, release_id: str) -> Release:
        board, release_id = check_name(board), check_name(release_id)
        if not self.store.exists(manifest := layout.release_json(board, release_id)):
            raise NotFound(f"board {board!r} has no release {release_id!r}")
        info = self._release_manifest(manifest)
        verify_files(self.store, layout.release_dir(board, release_id), info.sha256)
        return Release(
            board=board,
            release_id=release_id,
            manifest=info,
            leaderboard=read_parquet_named(self.store, layout.release_file(board, release_id, "leaderboard.parquet")),
            runs=read_parquet_named(self.store, layout.release_file(board, release_id, "runs.parquet")),
        )

    def _stored_run(self, run_id: str) -> Run | None:
        """The run, or None where the release names a run this storage does not hold or holds corrupt (the page
        shows the rest; the run's own page names the corrupt file)."""
        try:
            return self.run(run_id)
        except (NotFound, CorruptFile):
            return None

    def run(self, run_id: str) -> Run:
        key = layout.run_json(check_name(run_id))
        if not self.store.exists(key):
            raise NotFound(f"no run {run_id!r}")
        try:
            manifest = RunManifest.model_validate(read_manifest(self.store, key))
        except ValueError as exc:
            raise CorruptFile(self.store.url(key), f"not a run manifest ({exc})") from None
        cache_key = (run_id, manifest.lineage.published_at)  # a re-published run is new
        with self._lock:
            if cache_key in self._runs:
                self._runs.move_to_end(cache_key)
                return self._runs[cache_key]
            verify_files(self.store, layout.run_dir(run_id), manifest.sha256)  # once per publication: named, not read
            run = self._runs[cache_key] = Run(self.store, run_id, manifest)
            while len(self._runs) > self._max:
                self._runs.popitem(last=False)
            return run


class _Grouped:
    """A table's rows by one key column: sorted once, then each lookup is a binary search per key."""

    def __init__(self, table: pa.Table, key: str):
        self.key = key
        self.table = table.take(pc.sort_indices(table, sort_keys=[(key, "ascending")]))
        self.keys = self.table[key].to_numpy(zero_copy_only=False)

    def get(self, keys: list[str]) -> dict[str, list[dict[str, Any]]]:
        spans = [(np.searchsorted(self.keys, k, "left"), np.searchsorted(self.keys, k, "right")) for k in keys]
        rows = self.table.take(pa.array([r for lo, hi in spans for r in range(lo, hi)], pa.int64())).to_pylist()
        out: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            out.setdefault(row[self.key], []).append(row)
        return out


@dataclass
class Run:
    store: Store
    run_id: str
    manifest: RunManifest
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @cached_property
    def info(self) -> dict[str, Any]:
        """run.json as data, for the templates."""
        return self.manifest.to_json()

    @property
    def prefix(self) -> str:
        return layout.run_dir(self.run_id)

    @cached_property
    def trajectory(self) -> list[dict[str, Any]]:
        """An adaptive run's ``trajectory.parquet`` rows in asking order (empty for any other run)."""
        key = layout.run_file(self.run_id, layout.RUN_TRAJECTORY)
        if key not in self.manifest.files:
            return []
        return sorted(self.store.read_parquet(key).to_pylist(), key=lambda r: r["step"])

    @property
    def scenario(self) -> str:
        return self.manifest.scenario.name

    @property
    def redacted(self) -> bool:
        """True when this run's text must not appear in a static export: its scenario declares
        ``publish_text = False`` (a scenario this process does not know keeps its text)."""
        from helmflow.scenarios import SCENARIOS

        return self.scenario in SCENARIOS and not SCENARIOS.get(self.scenario).publish_text

    @property
    def unsafe(self) -> bool:
        """True when the scenario's prompts (and so its replies) are harmful by design: the page shows a
        content warning and a static export leaves the text out unless asked (``unsafe_text``)."""
        from helmflow.scenarios import SCENARIOS

        return self.scenario in SCENARIOS and SCENARIOS.get(self.scenario).unsafe_text

    def redacted_in_export(self, include_unsafe_text: bool = False) -> bool:
        """Whether a static export shows ids and scores only: never-published text always, harmful text
        unless the user opted in."""
        return self.redacted or (self.unsafe and not include_unsafe_text)

    @property
    def main_metric(self) -> str:
        return self.manifest.main_metric

    @property
    def instances_key(self) -> str:
        return layout.instances(safe_key(self.scenario), self.manifest.versions.scenario_version)

    def has(self, name: str) -> bool:
        return self.store.exists(layout.run_file(self.run_id, name))

    @cached_property
    def summary(self) -> list[dict[str, Any]]:
        return self.store.read_parquet(layout.run_file(self.run_id, "summary.parquet")).to_pylist()

    # ------------------------------------------------------------------ row groups
    @cached_property
    def _last_read(self) -> dict[str, tuple[tuple, pa.Table]]:
        """Per file, the last single row group decoded (ten consecutive pages share one)."""
        return {}

    @cached_property
    def _footers(self) -> dict[str, pq.FileMetaData]:
        """The per-request files' Parquet footers, parsed once (a 100,000-row run has 1,000 row groups)."""
        out = {}
        for name in ("requests.parquet", "completions.parquet"):
            with self.store.open(layout.run_file(self.run_id, name)) as fh:
                out[name] = pq.read_metadata(fh)
        return out

    @cached_property
    def _row_groups(self) -> dict[str, list[int]]:
        """Each per-request file's row-group start offsets, plus its row count at the end."""
        starts = {}
        for name, meta in self._footers.items():
            offsets, at = [], 0
            for i in range(meta.num_row_groups):
                offsets.append(at)
                at += meta.row_group(i).num_rows
            offsets.append(at)
            starts[name] = offsets
        return starts

    @property
    def num_rows(self) -> int:
        return self._row_groups["requests.parquet"][-1]

    @property
    def num_chunks(self) -> int:
        return max(1, -(-self.num_rows // CHUNK_ROWS))

    def _read_rows(self, name: str, start: int, stop: int, columns: list[str] | None = None) -> pa.Table:
        """Rows [start, stop) of one of the run's files, decoding only the row groups that hold them."""
        offsets = self._row_groups[name]
        groups = [i for i in range(len(offsets) - 1) if offsets[i] < stop and offsets[i + 1] > start]
        key = (tuple(groups), tuple(columns or ()))
        last = self._last_read.get(name)  # the next page is usually in the same row group
        if last and last[0] == key:
            table = last[1]
        else:
            with self.store.open(layout.run_file(self.run_id, name)) as fh:
                table = pq.ParquetFile(fh, metadata=self._footers[name]).read_row_groups(groups, columns=columns)
            if len(groups) == 1:  # keep one page's row group, never a whole-file scan
                self._last_read[name] = (key, table)
        first = offsets[groups[0]] if groups else start
        return table.slice(start - first, stop - start)

    # ------------------------------------------------------------------ per-run columns, aligned to request rows once
    def prepare(self) -> Run:
        """Read what every page needs (stats, references, judge verdicts) once, whichever thread asks first.

        The app starts this as it sends a run page, so the work overlaps the browser loading the page.
        """
        with self._lock:
            _ = (self.stats, self.references, self.annotations, self.renders)
        return self

    @cached_property
    def _request_ids(self) -> pa.Array:
        return self._read_rows("requests.parquet", 0, self.num_rows, ["instance_id"])["instance_id"].combine_chunks()

    @cached_property
    def stats(self) -> dict[str, np.ndarray]:
        """Each stat's value per request row (NaN where the instance has none, e.g. an errored one).

        One hash join in Arrow (stats rows to request rows), then a scatter per stat name in numpy.
        """
        table = self.store.read_parquet(layout.run_file(self.run_id, "stats.parquet"),
                                        columns=["instance_id", "name", "value"])
        ids = pc.unique(self._request_ids)
        row_of = pc.index_in(self._request_ids, value_set=ids).to_numpy()
        at = pc.index_in(table["instance_id"], value_set=ids)
        known = pc.is_valid(at).to_numpy(zero_copy_only=False)
        at = pc.fill_null(at, 0).to_numpy()
        names = table["name"].combine_chunks().dictionary_encode()
        codes = names.indices.to_numpy(zero_copy_only=False)
        values = table["value"].to_numpy()
        out = {}
        for code, name in enumerate(names.dictionary.to_pylist()):
            per_id = np.full(len(ids), np.nan)
            mine = known & (codes == code)
            per_id[at[mine]] = values[mine]
            out[name] = per_id[row_of]
        return dict(sorted(out.items()))

    @cached_property
    def references(self) -> pa.Array | None:
        """Each request row's instance references (from the scenario's instance file), or None without it."""
        if not self.store.exists(self.instances_key):
            return None
        table = self.store.read_parquet(self.instances_key, columns=["id", "references"])
        return table["references"].take(pc.index_in(self._request_ids, value_set=table["id"].combine_chunks()))

    def media_names(self) -> set[str]:
        """The images this run's pages show: request parts, image-valued references and generated images
        (``<sha256>.<ext>``)."""
        return set(self.media_sources())

    def media_sources(self) -> dict[str, str]:
        """Each image this run's pages show -> the first instance id that shows it."""
        from helmflow.media import media_names

        self.prepare()
        sources: dict[str, str] = {}
        rows = self._read_rows("requests.parquet", 0, self.num_rows, ["body_json", "instance_id"])
        for body, instance in zip(rows["body_json"].to_pylist(), rows["instance_id"].to_pylist(), strict=True):
            for name in media_names(json.loads(body).get("parts")):
                sources.setdefault(name, instance)
        if "images" in self._footers["completions.parquet"].schema.to_arrow_schema().names:
            generated = self._read_rows("completions.parquet", 0, self.num_rows, ["images"])["images"].to_pylist()
            for images, instance in zip(generated, rows["instance_id"].to_pylist(), strict=True):
                for name in media_names(images):
                    sources.setdefault(name, instance)
        if self.references is not None:
            for refs, instance in zip(self.references.to_pylist(), self._request_ids.to_pylist(), strict=True):
                for name in media_names([r.get("image") for r in refs or [] if r.get("image")]):
                    sources.setdefault(name, instance)
        if self.renders is not None:
            for render in self.renders.table.select(["instance_id", "image"]).to_pylist():
                for name in media_names([render["image"]] if render["image"] else []):
                    sources.setdefault(name, render["instance_id"])
        return sources

    @cached_property
    def renders(self) -> _Grouped | None:
        """What a renderer drew for each completion (``renders.parquet``), by request hash, when the run's
        metrics render (LaTeX, web pages, music sheets)."""
        if not self.has(layout.RUN_RENDERS):
            return None
        columns = ["request_hash", "instance_id", "renderer", "renderer_version", "compiled", "error", "image",
                   "seconds", "reused"]
        return _Grouped(self.store.read_parquet(layout.run_file(self.run_id, layout.RUN_RENDERS), columns=columns),
                        "request_hash")

    @cached_property
    def annotations(self) -> _Grouped | None:
        """Judge verdicts (``annotations.parquet``: one per completion and judge), when the run has them.

        Matched to completions by request hash (each sample has its own), else by instance id.
        """
        if not self.has("annotations.parquet"):
            return None
        table = self.store.read_parquet(layout.run_file(self.run_id, "annotations.parquet"))
        return _Grouped(table, "request_hash" if "request_hash" in table.column_names else "instance_id")

    @cached_property
    def index(self) -> pa.Table:
        """One narrow row per request: what filtering needs (no ids, no text)."""
        self.prepare()
        req = self._read_rows("requests.parquet", 0, self.num_rows, ["split", "prompt_truncated"])
        flag = "truncated_in_reasoning"  # a run stored before reasoning was recorded has no such column
        has_flag = flag in self._footers["completions.parquet"].schema.to_arrow_schema().names
        comp = self._read_rows("completions.parquet", 0, self.num_rows, ["error", *([flag] if has_flag else [])])
        main = self.stats.get(self.main_metric, np.full(self.num_rows, np.nan))
        return pa.table(
            {
                "split": req["split"],
                "score": pa.array(main, from_pandas=True),
                "error": pc.is_valid(comp["error"]),
                "prompt_truncated": req["prompt_truncated"],
                flag: pc.fill_null(comp[flag], False) if has_flag else pa.array(np.zeros(self.num_rows, bool)),
            }
        )

    # ------------------------------------------------------------------ text search (the live app)
    def search(self, text: str) -> list[int]:
        """Rows whose instance id, prompt, completion or a reference contains ``text`` (any case).

        Reads the text columns in full, once per search: vectorised in Arrow, not a page at a time.
        """
        pattern = text.strip()
        if not pattern:
            return list(range(self.num_rows))

        def hits(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
            found = pc.match_substring(values, pattern, ignore_case=True)
            return pc.fill_null(found, False).to_numpy(zero_copy_only=False)

        self.prepare()
        req = self._read_rows("requests.parquet", 0, self.num_rows, ["instance_id", "prompt"])
        comp = self._read_rows("completions.parquet", 0, self.num_rows, ["text"])
        rows = hits(req["instance_id"]) | hits(req["prompt"]) | hits(comp["text"])
        if self.references is not None and len(self.references):
            flat = pc.list_flatten(self.references)
            parents = pc.list_parent_indices(self.references).to_numpy()
            rows[np.unique(parents[hits(pc.struct_field(flat, "text"))])] = True
        return np.flatnonzero(rows).tolist()

    # ------------------------------------------------------------------ a chunk of instances
    def chunk(self, k: int, redact: bool = False) -> list[dict[str, Any]]:
        """Every instance record of chunk ``k``: request, completion, references, stats, judge verdicts.

        With ``redact``, only ids, flags and numbers (for scenarios whose text must not be published).
        """
        if not 0 <= k < self.num_chunks:
            raise NotFound(f"run {self.run_id} has no chunk {k}")
        self.prepare()
        start, stop = k * CHUNK_ROWS, min((k + 1) * CHUNK_ROWS, self.num_rows)
        requests = self._read_rows("requests.parquet", start, stop).to_pylist()
        completions = self._read_rows("completions.parquet", start, stop).to_pylist()
        stats = {name: values[start:stop].tolist() for name, values in self.stats.items()}
        refs = self.references.slice(start, stop - start).to_pylist() if self.references is not None else None
        notes: dict[str, list[dict[str, Any]]] = {}
        if self.annotations:
            notes = self.annotations.get(sorted({r[self.annotations.key] for r in requests}))
        drawn: dict[str, list[dict[str, Any]]] = {}
        if self.renders is not None and not redact:
            drawn = self.renders.get(sorted({r["request_hash"] for r in requests}))
        rows = []
        for i, (req, comp) in enumerate(zip(requests, completions, strict=True)):
            iid = req["instance_id"]
            values = {name: column[i] for name, column in stats.items() if not math.isnan(column[i])}
            row: dict[str, Any] = {
                "row": start + i,
                "instance_id": iid,
                "split": req["split"],
                "sample_index": req["sample_index"],
                "truncated": bool(req["prompt_truncated"]),
                "num_train_instances": req["num_train_instances"],
                "score": values.get(self.main_metric),
                "stats": values,
                "error": comp["error"],
                "finish_reason": comp["finish_reason"],
                "prompt_tokens": comp["prompt_tokens"],
                "output_tokens": comp["output_tokens"],
                "latency_s": comp["latency_s"],
                "cost_usd": comp["cost_usd"],
                # columns a run stored before reasoning was recorded lacks
                "reasoning_tokens": comp.get("reasoning_tokens") or 0,
                "truncated_in_reasoning": bool(comp.get("truncated_in_reasoning")),
            }
            annotations = [
                {k: v for k, v in a.items() if k not in ("instance_id", "request_hash")}
                for a in notes.get(req[self.annotations.key] if self.annotations else iid, [])
            ]
            if redact:
                row["error"] = "error" if comp["error"] is not None else None  # provider errors can quote the prompt
                row["annotations"] = [
                    {k: v for k, v in a.items() if isinstance(v, (int, float, bool)) or v is None} for a in annotations
                ]
            else:
                row.update(
                    prompt=req["prompt"],
                    request=json.loads(req["body_json"]),
                    output_mapping=json.loads(req["output_mapping_json"] or "{}"),
                    references=(refs[i] if refs else None) or [],
                    completion=comp["text"],
                    images=comp.get("images") or [],  # generated images (a text-to-image run), in order
                    reasoning=comp.get("reasoning") or "",
                    notes=req.get("notes") or [],  # what the client left out of the request (e.g. temperature)
                    response=comp,
                    annotations=annotations,
                )
                if req["request_hash"] in drawn:  # the completion as its renderer drew it (the first sample's)
                    row["render"] = {k: v for k, v in drawn[req["request_hash"]][0].items() if k != "request_hash"}
            rows.append(row)
        return rows
