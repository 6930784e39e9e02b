"""The data path: where a scenario's pinned files are read from, how they are fetched and checked.

A scenario declares ``DataSource(filename, url, sha256)``; ``url`` is usually
``hf://datasets/<repo>@<full revision>/<path>`` (huggingface_hub's fsspec file system, which honours
``HF_ENDPOINT`` and ``HF_TOKEN``) or, for data kept in a GitHub repository, the raw file at a full
commit SHA, ``https://raw.githubusercontent.com/<org>/<repo>/<sha>/<path>`` (fsspec's HTTP file
system; ``$HELMFLOW_GITHUB_RAW`` replaces the host). Both are checksummed the same way. A mirror
replaces the source with no code change:

- ``$HELMFLOW_MIRROR_<NAME>`` (scenario name upper-cased, non-alphanumerics as ``_``): a folder or
  ``s3://`` prefix holding that scenario's files directly, ``<mirror>/<filename>``;
- ``$HELMFLOW_MIRROR``: a root for every scenario, ``<mirror>/<name>/<revision>/<filename>``
  (the layout ``helmflow mirror <scenario> --to URL`` writes).

In either folder a Hub file may also sit at its path in the Hub repository
(``data/test-00000-of-00001.parquet``, as ``huggingface-cli download --local-dir`` writes it).

Every byte read is checked: a missing file, an empty file, a checksum mismatch or a gated repository
without ``HF_TOKEN`` is one :class:`ScenarioError` naming the scenario and the URL, before anything
is stored (HELM #1932 accepted empty downloads). ``sha256=None`` sources are pinned at plan time
and recorded in ``datasets/<scenario>/<revision>/manifest.json``; later runs must match it.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

import fsspec

from helmflow import layout
from helmflow.adapters import AdapterError, check_adaptable, sample_positions, uses_train
from helmflow.errors import MetricError, host_of, probe, unreachable
from helmflow.media import MediaStore
from helmflow.metrics import check_scorable
from helmflow.records import INSTANCE_SCHEMA, AdapterSpec, Instance, instance_from_row, instance_to_row, to_table
from helmflow.scenarios import DataSource, Scenario, ScenarioError, get_scenario
from helmflow.scenarios.base import UNPINNED, check_unique_ids
from helmflow.settings import scenario_mirror, scenario_mirror_var, settings
from helmflow.storage import Store, parquet_writer

if TYPE_CHECKING:
    import pyarrow as pa

MIRROR_ENV = "HELMFLOW_MIRROR"  # read through helmflow.settings; named here for messages
# Written by `helmflow mirror` next to the files it copied: the revision, and each file's sha256 as
# verified against the pinned source (declared sha256, or the Hub's LFS hash at the pinned revision).
MIRROR_MANIFEST = "helmflow-mirror.json"
_CHUNK = 1 << 20


# --------------------------------------------------------------------------- where to read
mirror_env_var = scenario_mirror_var  # the per-scenario mirror variable's name, for messages


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def repo_path(source: DataSource) -> str | None:
    """The file's path inside its Hub repository (``data/test-00000-of-00001.parquet``), None when
    the source is not a Hub file. A mirror may keep the file under this path instead of its flat name."""
    if not source.url.startswith("hf://") or "@" not in source.url:
        return None
    path = source.url.split("@", 1)[1].partition("/")[2]
    return path if path and path != source.filename else None


def mirror_names(source: DataSource) -> list[str]:
    """The names a mirror may hold a file under: its flat name, then its Hub repository path (what
    ``huggingface-cli download --revision R --local-dir DIR`` writes) or its path inside its archive
    (what unpacking the archive into the folder writes)."""
    return list(dict.fromkeys([source.filename, *filter(None, [repo_path(source) or source.member])]))


def _first_existing(scenario: str, folder: str, source: DataSource) -> str:
    """The mirror URL of ``source`` under ``folder``: the first name that exists (the flat one if none does,
    so the error names it; with a Hub path, the error names both)."""
    names = mirror_names(source)
    if len(names) == 1:
        return _join(folder, names[0])
    for name in names:
        fs, path = fsspec.core.url_to_fs(_join(folder, name))
        if fs.exists(path):
            return _join(folder, name)
    where = "its path in the archive" if source.member else "the Hub repository's path"
    raise ScenarioError(f"scenario {scenario!r}: the mirror {folder} has neither {names[0]} nor {names[1]} "
                        f"(flat name, or {where})")


def mirror_folder(scenario: str, revision: str) -> str | None:
    """The folder a mirror keeps this scenario's files in, if a mirror is set."""
    own = scenario_mirror(scenario)
    if own:
        return own.rstrip("/")
    root = settings().mirror
    return _join(root, scenario, revision) if root else None


def resolve_source(scenario: str, revision: str, source: DataSource) -> str:
    """The URL to read ``source`` from: the scenario's mirror, else the root mirror, else the source.
    In a mirror, the file may sit under its flat name or its Hub repository path."""
    folder = mirror_folder(scenario, revision)
    if folder:
        return _first_existing(scenario, folder, source)
    if revision == UNPINNED:
        raise ScenarioError(
            f"scenario {scenario!r}: no source revision is pinned (none could be verified), so it never reads "
            f"{source.url.split('@')[0]}; it runs from a mirror only: set {mirror_env_var(scenario)} or {MIRROR_ENV}"
        )
    return source.url


# --------------------------------------------------------------------------- reading, with clear errors
def _storage_options(url: str) -> dict:
    """hf:// reads HF_ENDPOINT and HF_TOKEN now (huggingface_hub reads HF_ENDPOINT once, at import).
    An archive member gets a fresh zip/tar file system each time: a cached one holds the archive file
    that closing the previous member closed (the archive itself stays in simplecache, fetched once)."""
    if url.startswith(("zip://", "tar://")):
        return {url.partition("://")[0]: {"skip_instance_cache": True}}
    if not url.startswith("hf://"):
        return {}
    options: dict = {"skip_instance_cache": True}  # a fresh listing: no stale "not found" or gate
    if os.environ.get("HF_ENDPOINT"):
        options["endpoint"] = os.environ["HF_ENDPOINT"].rstrip("/")
    if os.environ.get("HF_TOKEN"):
        options["token"] = os.environ["HF_TOKEN"]
    return options


def _gated(exc: BaseException) -> bool:
    from huggingface_hub.errors import GatedRepoError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, GatedRepoError) or (
                getattr(getattr(seen, "response", None), "status_code", None) in (401, 403)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _explain(scenario: str, url: str, exc: BaseException) -> ScenarioError:
    where = f"scenario {scenario!r}: {url}"
    if url.startswith("hf://") and _gated(exc):
        token = "HF_TOKEN is set but was refused" if os.environ.get("HF_TOKEN") else "HF_TOKEN is not set"
        return ScenarioError(
            f"{where} is in a gated Hugging Face repository and {token}: accept the dataset's terms on its "
            f"Hub page and export HF_TOKEN (a read token), or point {mirror_env_var(scenario)} / {MIRROR_ENV} "
            "at a mirror"
        )
    remote = url.startswith(("hf://", "http://", "https://")) or "::simplecache::http" in url
    hint = f"; offline? point {mirror_env_var(scenario)} or {MIRROR_ENV} at a mirror" if remote else ""
    # a host that never answered is not a file that does not exist (fsspec's HTTP and simplecache
    # file systems raise FileNotFoundError for both; the cause, or one connection attempt, tells)
    why = unreachable(exc) if remote else None
    if remote and why is None and isinstance(exc, FileNotFoundError) and exc.__cause__ is None:
        why = probe(url)
    if why:
        return ScenarioError(f"scenario {scenario!r}: cannot reach {host_of(url)} ({why}) to read {url}: offline? "
                             f"mirror with `helmflow mirror {scenario} --to DIR` where the network is, then "
                             f"export {MIRROR_ENV}=DIR")
    if isinstance(exc, FileNotFoundError):
        detail = str(exc).split("\n")[0]
        if "::" in url:  # the archive host answered, but not with the archive (or it lacks the member)
            return ScenarioError(f"{where} does not exist or its archive could not be fetched ({detail}){hint}")
        return ScenarioError(f"{where} does not exist ({detail})")
    first_line = str(exc).splitlines()[0] if str(exc) else ""
    return ScenarioError(f"{where} could not be read: {type(exc).__name__}: {first_line}{hint}")


@contextmanager
def open_source(scenario: str, url: str) -> Iterator[IO[bytes]]:
    """Open a source or mirror URL for reading; every failure becomes one :class:`ScenarioError`."""
    try:
        opened = fsspec.open(url, "rb", **_storage_options(url))
        fh = opened.__enter__()  # not .open(): a chain's lower file (the archive) must live as long as fh
    except Exception as exc:  # noqa: BLE001 - fsspec backends raise many kinds; each is explained
        raise _explain(scenario, url, exc) from None
    try:
        yield fh
    finally:
        opened.__exit__(None, None, None)


def fetch(scenario: str, url: str) -> bytes:
    """The whole file at ``url``; an empty file is an error, never a dataset."""
    with open_source(scenario, url) as fh:
        try:
            data = fh.read()
        except Exception as exc:  # noqa: BLE001
            raise _explain(scenario, url, exc) from None
    if not data:
        raise ScenarioError(f"scenario {scenario!r}: {url} is empty (0 bytes); refusing to use it")
    return data


def _hub_lfs_sha256(scenario: str, url: str) -> str | None:
    """The Hub's own sha256 of an LFS file (its LFS object id), from one metadata call; None if not LFS."""
    try:
        fs, path = fsspec.core.url_to_fs(url, **_storage_options(url))
        info = fs.info(path)
    except Exception as exc:  # noqa: BLE001
        raise _explain(scenario, url, exc) from None
    lfs = info.get("lfs")
    if info.get("size") == 0:
        raise ScenarioError(f"scenario {scenario!r}: {url} is empty (0 bytes); refusing to use it")
    return getattr(lfs, "sha256", None) if lfs is not None else None


_HASHED: contextvars.ContextVar[dict[tuple[str, str], str] | None] = contextvars.ContextVar("hashed", default=None)


@contextmanager
def hash_once() -> Iterator[None]:
    """Within the block each source file is hashed (read) once: planning a board asks for a custom
    file's digest twice, as its revision and as its checksum, and a remote file was fetched for each.
    Scoped to one plan on purpose: the next plan must read the file again, it may have changed."""
    token = _HASHED.set({} if _HASHED.get() is None else _HASHED.get())
    try:
        yield
    finally:
        _HASHED.reset(token)


def sha256_of(scenario: str, url: str) -> str:
    """The sha256 plan time pins for a ``sha256=None`` source: the Hub's LFS id, else streamed
    (:data:`UNDECLARED` for a remote file inside :func:`declared_pins`: it is not read)."""
    if _DECLARED_ONLY.get() and not is_local(url):
        return UNDECLARED
    memo = _HASHED.get()
    if memo is not None and (scenario, url) in memo:
        return memo[(scenario, url)]
    digest = _sha256_of(scenario, url)
    if memo is not None:
        memo[(scenario, url)] = digest
    return digest


def _sha256_of(scenario: str, url: str) -> str:
    if url.startswith("hf://"):
        known = _hub_lfs_sha256(scenario, url)
        if known:
            return known
    h, size = hashlib.sha256(), 0
    with open_source(scenario, url) as fh:
        try:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                h.update(chunk)
                size += len(chunk)
        except Exception as exc:  # noqa: BLE001
            raise _explain(scenario, url, exc) from None
    if not size:
        raise ScenarioError(f"scenario {scenario!r}: {url} is empty (0 bytes); refusing to use it")
    return h.hexdigest()


def source_sha256(scen: Scenario, source: DataSource) -> str:
    """The checksum a plan pins: the declared one, else the resolved file's (mirror or source)."""
    if source.sha256:
        return source.sha256
    if _DECLARED_ONLY.get():
        url, absent = whereabouts(scen, source)
        return UNDECLARED if absent else sha256_of(scen.name, url)
    return sha256_of(scen.name, resolve_source(scen.name, scen.dataset_revision(), source))


# --------------------------------------------------------------------------- planning from the declared pins
# The checksum a plan inside declared_pins() records for a file that declares no sha256 and is not on
# this machine: a run reads the file and pins its real hash, so that plan's scenario_version is its own.
UNDECLARED = "undeclared"
_DECLARED_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("declared_only", default=False)
_LOCAL_PROTOCOLS = ("file", "local", "memory")


@contextmanager
def declared_pins() -> Iterator[None]:
    """Within the block planning reads no remote data (``helmflow show``): a source's checksum is its
    declared sha256; one without is hashed only where a copy is on this machine (a local mirror, a
    local file), else it is :data:`UNDECLARED`. Mirror manifests on this machine are still read."""
    token = _DECLARED_ONLY.set(True)
    try:
        yield
    finally:
        _DECLARED_ONLY.reset(token)


def is_local(url: str) -> bool:
    """Whether reading ``url`` stays on this machine (a path, ``file://``, ``memory://``; for a chained
    URL, its innermost file: ``zip://m::simplecache::https://...`` is remote)."""
    protocol = fsspec.core.split_protocol(url.rpartition("::")[2])[0]
    return protocol is None or protocol in _LOCAL_PROTOCOLS


def _exists_here(url: str) -> bool:
    fs, path = fsspec.core.url_to_fs(url)
    return fs.exists(path)


def whereabouts(scen: Scenario, source: DataSource) -> tuple[str, str | None]:
    """Where a run reads ``source`` and, found without reading remote data, why it is not on this
    machine (None when it is): not mirrored (a run downloads it), missing from the mirror, or in a
    remote mirror (not looked at)."""
    revision = scen.dataset_revision()
    folder = mirror_folder(scen.name, revision)
    if folder is None:
        if revision == UNPINNED:
            return "", f"not mirrored: no revision is pinned, it runs from a mirror only ({MIRROR_ENV})"
        if not is_local(source.url):
            return source.url, f"not mirrored: read from {host_of(source.url)}"
        return source.url, None if _exists_here(source.url) else f"missing: {source.url}"
    if not is_local(folder):
        return _join(folder, source.filename), f"in the remote mirror {folder} (not looked at)"
    for name in mirror_names(source):
        if _exists_here(_join(folder, name)):
            return _join(folder, name), None
    return _join(folder, source.filename), f"not mirrored: {folder} has no {' or '.join(mirror_names(source))}"


def gated_missing(scen: Scenario) -> list[str]:
    """One sentence per credential-gated file of ``scen`` this machine cannot read (on no local mirror, and
    not at a local path the scenario names): where to get access and where to put the file. A remote mirror
    is not looked at (it is assumed to hold the file)."""
    out = []
    for source in scen.sources():
        if not source.gated:
            continue
        _, why = whereabouts(scen, source)
        if why is None or why.startswith("in the remote mirror"):
            continue
        out.append(f"{source.filename} is credential-gated and not on this machine: {source.gated}; or put it in "
                   f"the folder ${mirror_env_var(scen.name)} names, or in "
                   f"${MIRROR_ENV}/{scen.name}/{scen.dataset_revision()}/")
    return out


def fetch_verified(scenario: str, url: str, expected: str) -> bytes:
    data = fetch(scenario, url)
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ScenarioError(
            f"scenario {scenario!r}: checksum mismatch for {url}: expected sha256 {expected}, got {digest} "
            f"({len(data)} bytes); the file is not the pinned one (partial download or a different revision?)"
        )
    return data


def _mismatch(scenario: str, url: str, expected: str, digest: str, size: int) -> ScenarioError:
    return ScenarioError(
        f"scenario {scenario!r}: checksum mismatch for {url}: expected sha256 {expected}, got {digest} "
        f"({size} bytes); the file is not the pinned one (partial download or a different revision?)"
    )


def copy_verified(scenario: str, url: str, dest: Store, key: str, expected: str | None) -> str:
    """``url`` copied to ``dest``'s ``key`` a block at a time, hashed as it goes (a dataset file of hundreds of MB
    is never held whole); returns its sha256. With ``expected``, another hash is refused as :func:`fetch_verified`
    refuses it and nothing is kept (the store's temporary file is removed); an empty file is an error."""
    h, size = hashlib.sha256(), 0
    with open_source(scenario, url) as src, dest.writing(key) as out:
        while True:
            try:
                block = src.read(_CHUNK)
            except Exception as exc:  # noqa: BLE001 - fsspec backends raise many kinds; each is explained
                raise _explain(scenario, url, exc) from None
            if not block:
                break
            h.update(block)
            size += len(block)
            out.write(block)
        if not size:
            raise ScenarioError(f"scenario {scenario!r}: {url} is empty (0 bytes); refusing to use it")
        digest = h.hexdigest()
        if expected is not None and digest != expected:
            raise _mismatch(scenario, url, expected, digest, size)
    return digest


# --------------------------------------------------------------------------- is the data the pinned data?
def unverified_reason(scen: Scenario, source: DataSource, sha256: str) -> str | None:
    """None when the bytes a run reads are known to be the pinned ones; else why they are not.

    Known: a declared sha256 (the download refuses anything else), the pinned source itself (a Hub
    revision or a commit, read directly), or a mirror whose ``helmflow-mirror.json`` (written by
    ``helmflow mirror``, which checked the Hub) records this revision and this file's sha256.
    """
    if source.sha256:
        return None
    if source.sha256_unknown:
        return (f"{source.filename} has no declared sha256 (upstream pins nothing): the run reads whatever "
                f"{source.url.rpartition('::')[2]} serves; pin it (docs/datasets.md: filling in a pin)")
    if sha256 == UNDECLARED:  # not read (declared_pins): nothing is known against the mirror's record
        return None
    revision = scen.dataset_revision()
    folder = mirror_folder(scen.name, revision)
    if folder is None:
        return None
    manifest_url = _join(folder, MIRROR_MANIFEST)
    try:
        manifest = json.loads(fetch(scen.name, manifest_url))
        entry = (manifest.get("files") or {}).get(source.filename) or {}
    except ScenarioError:
        return f"the mirror {folder} has no {MIRROR_MANIFEST} (write one with `helmflow mirror {scen.name} --to URL`)"
    except (ValueError, AttributeError):
        return f"{manifest_url} is not a helmflow mirror manifest"
    if manifest.get("revision") != revision:
        return f"{manifest_url} was written for revision {manifest.get('revision')}, not the pinned {revision}"
    if entry.get("sha256") != sha256:
        return f"{source.filename} (sha256 {sha256}) matches no hash in {manifest_url}"
    if not entry.get("verified_against"):
        return f"{manifest_url} records {source.filename} as not verified against the source"
    return None


# --------------------------------------------------------------------------- the download stage
def _changed_pin(plan, source: DataSource, manifest: dict, manifest_key: str) -> str | None:
    """Why ``source`` no longer matches the sha256 this storage pinned at its first download (None if it does)."""
    pinned, expected = manifest.get(source.filename), plan.checksums[source.filename]
    if source.sha256 is None and pinned and pinned != expected:
        return (f"scenario {plan.name!r}: {source.filename} at revision {plan.dataset_revision} changed since it was "
                f"first downloaded: {manifest_key} pins sha256 {pinned}, the source now has {expected}")
    return None


def check_stored_pins(store: Store, scenarios) -> None:
    """Data changed under the same storage (another mirror file than the first download) is bad input:
    one :class:`ScenarioError` at plan time (exit 2), before the flow starts and anything is written."""
    for plan in scenarios:
        manifest_key = layout.dataset_manifest(plan.key, plan.dataset_revision)
        if not store.exists(manifest_key):
            continue
        manifest = store.read_json(manifest_key)
        for source in get_scenario(plan.name, plan.params).sources():
            problem = _changed_pin(plan, source, manifest, manifest_key)
            if problem:
                raise ScenarioError(problem)


def mirror_sources(store: Store, plan) -> dict[str, str]:
    """Copy each pinned file into the store once, verified; returns filename -> stored URL."""
    scen = get_scenario(plan.name, plan.params)
    manifest_key = layout.dataset_manifest(plan.key, plan.dataset_revision)
    manifest = store.read_json(manifest_key) if store.exists(manifest_key) else {}
    files: dict[str, str] = {}
    for source in scen.sources():
        key = layout.dataset_file(plan.key, plan.dataset_revision, source.filename)
        expected = plan.checksums[source.filename]
        problem = _changed_pin(plan, source, manifest, manifest_key)
        if problem:  # the CLI finds this at plan time (check_stored_pins); a deployment run finds it here
            raise ScenarioError(problem)
        if manifest.get(source.filename) != expected or not store.exists(key):
            url = resolve_source(plan.name, plan.dataset_revision, source)
            copy_verified(plan.name, url, store, key, expected)
            manifest[source.filename] = expected
            store.write_json(manifest_key, manifest)
        files[source.filename] = store.url(key)
    if not scen.sources() and not store.exists(manifest_key):
        store.write_json(manifest_key, {"generated": True, "loader_version": plan.loader_version})
    return files


def load_checked(plan, files: dict[str, str], store: Store | None) -> list[Instance]:
    """The scenario's instances from ``files``, checked as a run needs them: loadable, not empty, ids
    unique. The download stage, the pre-flight of ``helmflow run`` and ``--dry-run`` all go through
    here (:func:`checked_batches`), so they refuse the same data with the same message, which names the file
    the user can fix (its source or mirror), not the verified copy in the store. Images found while loading
    land in ``store``'s media/ (content-addressed); with no store (``--dry-run``) they are decoded, not kept."""
    return [i for batch in checked_batches(plan, files, store) for i in batch]


def instance_bytes(inst: Instance) -> int:
    """About the bytes an instance's text takes (its input and references): what bounds a batch of them."""
    inp = inst.input
    text = len(inp.text or "") + sum(len(m.content) for m in inp.messages or []) + sum(
        len(p.text or "") for p in inp.parts or [])
    return text + sum(len(r.text) for r in inst.references) + 64


def checked_batches(plan, files: dict[str, str], store: Store | None) -> Iterator[list[Instance]]:
    """:func:`load_checked`'s instances in batches of about :data:`helmflow.chunks.CHUNK_BYTES` of text, in
    order, each checked as it comes (a scenario whose ``load`` yields its instances one at a time, such as a
    long-context one, is then never held whole); the empty and duplicate-id checks come after the last."""
    from helmflow import chunks

    scen = get_scenario(plan.name, plan.params)
    scen.media = MediaStore(store)
    ids: list[tuple[int, str]] = []

    def checked(batch: list[Instance]) -> list[Instance]:
        try:
            check_adaptable(plan.adapter, batch)
        except AdapterError as exc:
            raise ScenarioError(f"scenario {plan.name!r} ({plan.adapter.method}): {exc}") from None
        try:
            check_scorable(plan.metrics, [i for i in batch if i.split in plan.adapter.sample.splits])  # the scored ones
        except MetricError as exc:
            raise MetricError(f"scenario {plan.label!r}: {exc}") from None
        return batch

    def loaded() -> Iterator[Instance]:  # a list-returning load raises on the first next(), as a stream does
        yield from scen.load(files)

    batches = chunks.batched(loaded(), instance_bytes)
    while True:
        try:
            batch = next(batches, None)
        except ScenarioError as exc:
            message = str(exc)
            for source in scen.sources():
                if source.filename in files:
                    message = message.replace(files[source.filename],
                                              resolve_source(plan.name, plan.dataset_revision, source))
            raise ScenarioError(message) from None
        if batch is None:
            break
        ids += [(len(ids) + n, i.id) for n, i in enumerate(batch, start=1)]
        yield checked(batch)
    if not ids:
        raise ScenarioError(f"scenario {plan.name!r} produced no instances from {sorted(files) or 'its generator'}")
    check_unique_ids(f"scenario {plan.name!r}", ids, "instance")


def write_instances(store: Store, plan, files: dict[str, str]) -> str:
    """The scenario's instances file, written a batch (a row group) at a time as they are loaded and checked."""
    key = layout.instances(plan.key, plan.scenario_version)
    with store.writing(key) as fh, parquet_writer(fh, INSTANCE_SCHEMA, instances_meta(plan)) as writer:
        for batch in checked_batches(plan, files, store):
            writer.write_table(to_table([instance_to_row(i) for i in batch], INSTANCE_SCHEMA))
    return key


def instances_meta(plan) -> dict[str, str]:
    meta = {
        "helmflow.scenario": plan.name,
        "helmflow.scenario_params": json.dumps(plan.params, sort_keys=True),
        "helmflow.scenario_version": plan.scenario_version,
        "helmflow.dataset_revision": plan.dataset_revision,
        "helmflow.loader_version": plan.loader_version,
    }
    if getattr(plan, "perturbation", None) is not None:
        meta["helmflow.perturbation"] = json.dumps(plan.perturbation.model_dump(mode="json"), sort_keys=True)
    return meta


def store_instances(store: Store, plan, instances: list[Instance]) -> str:
    """Write a scenario plan's instances file (a perturbed plan's too: its metadata names the perturbation)."""
    table = to_table([instance_to_row(i) for i in instances], INSTANCE_SCHEMA)
    key = layout.instances(plan.key, plan.scenario_version)
    store.write_parquet(key, table, instances_meta(plan))
    return key


def read_instances(store: Store, key: str, ids: set[str] | None = None) -> list[Instance]:
    """The scenario's instances in stored order; only those in ``ids`` when given (scoring 5 of
    11,000 instances builds 5 objects, not 11,000)."""
    import pyarrow as pa

    table = instances_table(store, key, None if ids is None else pa.array(sorted(ids), pa.string()))
    return [instance_from_row(r) for r in table.to_pylist()]


def read_sampled(store: Store, key: str, spec: AdapterSpec) -> tuple[list[Instance], list[Instance]]:
    """What ``spec``'s prompts read of the stored instances: the train split in stored order (none when it
    draws no examples) and the evaluation sample in drawn order, chosen from the ``split`` column, so only
    those become objects (5 of 11,000 synthetic-reasoning items, not all of them)."""
    table = store.read_parquet(key)
    splits = table.column("split").to_pylist()
    evaluated = sample_positions(splits, spec.sample)
    train = [k for k, split in enumerate(splits) if split == "train"] if uses_train(spec) else []
    wanted = sorted(set(train) | set(evaluated))
    built = dict(zip(wanted, map(instance_from_row, table.take(wanted).to_pylist()), strict=True))
    return [built[k] for k in train], [built[k] for k in evaluated]


def iter_sampled(store: Store, key: str, spec: AdapterSpec) -> Iterator[tuple[list[Instance], list[Instance]]]:
    """:func:`read_sampled` a chunk at a time: (the train split, the next chunk of the evaluation sample in drawn
    order), the sample read through the row groups that hold it (about :data:`helmflow.chunks.CHUNK_BYTES` of
    rows each), every instance built once; the train split is the same list in every pair."""
    import numpy as np
    import pyarrow.parquet as pq

    from helmflow import chunks

    splits = store.read_parquet(key, columns=["split"]).column("split").to_pylist()
    evaluated = np.array(sample_positions(splits, spec.sample), np.int64)
    train_rows = np.array([k for k, split in enumerate(splits) if split == "train"] if uses_train(spec) else [],
                          np.int64)
    with store.open(key) as fh:
        parquet = pq.ParquetFile(fh)
        size = chunks.parquet_rows_within(parquet)
        train = [instance_from_row(r) for r in chunks.read_rows(parquet, train_rows).to_pylist()]
        for start in range(0, len(evaluated), size):
            wanted = evaluated[start:start + size]
            ascending = np.unique(wanted)
            rows = dict(zip(ascending.tolist(), chunks.read_rows(parquet, ascending).to_pylist(), strict=True))
            built = {k: instance_from_row(row) for k, row in rows.items()}
            yield train, [built[k] for k in wanted.tolist()]


def instances_table(store: Store, key: str, ids: pa.Array | None = None) -> pa.Table:
    """The instances file as a table in stored order; only the rows whose id is in the Arrow array
    ``ids`` when given."""
    import pyarrow.compute as pc

    table = store.read_parquet(key)
    return table if ids is None else table.filter(pc.is_in(table["id"], value_set=ids))


# --------------------------------------------------------------------------- helmflow mirror
def _pinned_sha256(scen: Scenario, source: DataSource) -> tuple[str | None, str | None]:
    """What the pinned source says a file's sha256 is, and how it is known: the declared checksum,
    else the Hub's LFS hash at the pinned revision (one metadata call), else the Hub file's own bytes."""
    if source.sha256:
        return source.sha256, "declared sha256"
    if source.sha256_unknown or scen.dataset_revision() == UNPINNED:
        return None, FIRST_FETCH  # nothing to check against: the mirror records what it read
    if not source.url.startswith("hf://"):
        return None, None
    lfs = _hub_lfs_sha256(scen.name, source.url)
    if lfs:
        return lfs, f"Hub LFS sha256 at revision {scen.dataset_revision()}"
    return hashlib.sha256(fetch(scen.name, source.url)).hexdigest(), f"Hub file at revision {scen.dataset_revision()}"


FIRST_FETCH = "first fetch"  # how a sha256_unknown source's hash is known: recorded, not verified


def pin_line(scen: Scenario, source: DataSource, sha256: str) -> str:
    """What to write in the scenario module to pin a source by the hash just recorded."""
    module = type(scen).__module__.rpartition(".")[2]
    drop = " (and drop sha256_unknown)" if source.sha256_unknown else ""
    return f"scenarios/{module}.py: {source.filename}: sha256=\"{sha256}\"{drop}"


def mirror_scenario(scen: Scenario, to: str) -> list[tuple[str, str, str]]:
    """Copy a scenario's pinned files to ``<to>/<name>/<revision>/``, verify them, write the manifest.

    Reads each file from where a run would (mirror variables included) and checks it against the
    pinned source (:func:`_pinned_sha256`: needs the Hub unless a sha256 is declared), writes it,
    reads the copy back, loads the scenario from the copies so a schema problem shows here, and
    writes ``helmflow-mirror.json`` (revision, each file's sha256 and what it was verified against),
    which makes the mirror *verified* for runs. A ``sha256_unknown`` source, or any source of a scenario
    whose revision could not be pinned (``UNPINNED``: it reads mirrors only), has nothing to be checked
    against: its hash is recorded at this first fetch (``verified_against`` empty, ``recorded_at``
    says so) and :func:`pin_line` tells what to declare. Several entries of one scenario (MMLU's
    subjects) share a folder: their manifest entries are merged. Returns (filename, sha256, copy URL) rows.
    """
    revision = scen.dataset_revision()
    dest = Store(to)
    done: list[tuple[str, str, str]] = []
    files: dict[str, dict[str, str | None]] = {}
    for source in scen.sources():
        url = resolve_source(scen.name, revision, source)
        expected, how = _pinned_sha256(scen, source)
        if how != FIRST_FETCH and expected is None:
            raise ScenarioError(f"scenario {scen.name!r}: {source.filename} has no declared sha256 and no Hub revision "
                                f"to verify it against; declare its sha256 in the scenario "
                                f"(see docs/datasets.md: filling in a pin)")
        key = f"{scen.name}/{revision}/{source.filename}"
        target = dest.url(key)
        try:  # a block at a time, hashed as it goes (hashed on a first fetch, verified otherwise)
            expected = copy_verified(scen.name, url, dest, key, None if how == FIRST_FETCH else expected)
        except ScenarioError:
            raise
        except Exception as exc:  # noqa: BLE001 - any backend error: say where
            raise ScenarioError(f"scenario {scen.name!r}: cannot write {target}: {type(exc).__name__}: {exc}") from None
        copied = _sha256_of(scen.name, target)  # read back, a block at a time
        if copied != expected:
            raise _mismatch(scen.name, target, expected, copied, os.path.getsize(target) if is_local(target) else -1)
        done.append((source.filename, expected, target))
        if how == FIRST_FETCH:
            files[source.filename] = {"sha256": expected, "verified_against": "", "source": source.url,
                                      "recorded_at": f"{FIRST_FETCH}: no declared pin; "
                                                     f"{pin_line(scen, source, expected)}"}
        else:
            files[source.filename] = {"sha256": expected, "verified_against": how, "source": source.url}
    if done:
        scen.media = MediaStore(None)  # decode every image (a bad one shows here), store none
        for _ in scen.load({filename: url for filename, _, url in done}):  # read it all (a stream too), keep none
            pass
        manifest_key = f"{scen.name}/{revision}/{MIRROR_MANIFEST}"
        manifest: dict[str, Any] = {"scenario": scen.name, "revision": revision, "params": [], "files": {}}
        if dest.exists(manifest_key):
            old = dest.read_json(manifest_key)
            if old.get("revision") == revision:
                manifest["files"] = dict(old.get("files") or {})
                old_params = old.get("params")
                manifest["params"] = old_params if isinstance(old_params, list) else [old_params]
        if scen.param_dict not in manifest["params"]:
            manifest["params"].append(scen.param_dict)
        manifest["files"].update(files)
        dest.write_json(manifest_key, manifest)
    return done
