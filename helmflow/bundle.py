"""Download raw results: ``helmflow export`` writes a release as a self-contained bundle, ``helmflow import`` reads one.

A bundle is a storage root of its own: the release's files (leaderboard.parquet, runs.parquet,
release.json), every run behind it (its Parquet files and run.json), the instances those runs
read and the images they show, all under the same keys as in the store they came from
(``helmflow.layout``), plus the JSON Schemas of run.json and release.json and ``bundle.json``
(written last: no bundle.json, no bundle) with the sha256 of every file. Files are copied as
bytes, never re-encoded, so importing a bundle into another storage root reproduces the same
leaderboard, byte for byte in the Parquet.

Importing checks every file against bundle.json before writing anything, then writes in commit
order: instances, each run's files then its run.json, the release's Parquet, release.json, and the
board's pointer.

Run ids, instance keys and image keys are content addresses, and a bundle is untrusted: a run.json
whose content cannot have its id (the hashes the id is made of, recomputed) is refused, and so is
an image whose bytes are not its name's sha256. A key the target store already holds with other
bytes is never replaced unless ``--overwrite`` is given: a bundle whose hashes were rewritten to
match forged content cannot quietly take the place of a run the store has.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import helmflow
from helmflow import layout, releases, versions
from helmflow.errors import HelmflowError
from helmflow.integrity import CorruptFile, sha256_hex, verify_files
from helmflow.manifests import ReleaseManifest, RunManifest, schema_text
from helmflow.media import media_names, parse_media_key
from helmflow.storage import Store, safe_key

FORMAT = "helmflow-bundle"


class BundleManifest(BaseModel):
    """``bundle.json``."""

    model_config = ConfigDict(extra="allow")

    format: str = FORMAT
    board: str
    release_id: str
    created_at: str
    helmflow_version: str
    files: dict[str, str] = Field(default_factory=dict)  # key inside the bundle -> sha256


@dataclass
class BundleOutcome:
    board: str
    release_id: str
    runs: int
    files: int
    bytes: int
    uri: str


def pick_release(store: Store, board: str, release: str | None) -> ReleaseManifest:
    name = safe_key(board)
    release = release or releases.latest_release_id(store, name)
    if not release:
        raise HelmflowError(f"board {board!r} has no release in {store.root}")
    key = layout.release_json(name, safe_key(release))
    if not store.exists(key):
        raise HelmflowError(f"board {board!r} has no release {release!r} in {store.root}")
    return ReleaseManifest.model_validate(store.read_json(key))


def release_runs(store: Store, info: ReleaseManifest, *, verify: bool = True) -> list[RunManifest]:
    """The release's runs, each checked against the digests its run.json records (``verify=False``: a caller
    that checks each file's bytes itself as it reads them, as ``publish hf`` does)."""
    out = []
    for rid in info.run_ids:
        key = layout.run_json(rid)
        if not store.exists(key):
            raise HelmflowError(f"release {info.release_id} names run {rid}, which is not in {store.root}")
        manifest = RunManifest.model_validate(store.read_json(key))
        if not verify:
            out.append(manifest)
            continue
        try:
            verify_files(store, layout.run_dir(rid), manifest.sha256)
        except CorruptFile as exc:
            raise HelmflowError(str(exc)) from None
        out.append(manifest)
    return out


def _run_keys(store: Store, manifest: RunManifest) -> list[str]:
    """A run's files (run.json last), the instances its pages read and the images both show."""
    keys = [layout.run_file(manifest.run_id, name) for name in sorted(manifest.sha256)]
    keys += [k for k in manifest.files if k not in keys]
    instances = layout.instances(safe_key(manifest.scenario.name), manifest.versions.scenario_version)
    names: set[str] = set()
    if store.exists(instances):
        for row in store.read_parquet(instances, columns=["input_parts", "references"]).to_pylist():
            names.update(media_names(row["input_parts"]))
            names.update(media_names([r["image"] for r in row["references"] or [] if r.get("image")]))
    requests = layout.run_file(manifest.run_id, "requests.parquet")
    if store.exists(requests):  # images resized for a deployment are stored images of their own
        for row in store.read_parquet(requests, columns=["body_json"]).to_pylist():
            names.update(media_names(json.loads(row["body_json"]).get("parts")))
    media = [layout.media_key(*name.rsplit(".", 1)) for name in sorted(names)]
    return media + ([instances] if store.exists(instances) else []) + keys + [layout.run_json(manifest.run_id)]


#: files are hashed and copied in pieces of this size: a bundle's runs never sit in memory whole
CHUNK = 8 << 20


def stream_sha256(store: Store, key: str) -> tuple[str, int]:
    """The sha256 and size of ``key``'s bytes, read a piece at a time."""
    digest, size = hashlib.sha256(), 0
    with store.open(key) as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def copy_checked(src: Store, dst: Store, key: str, expected: str | None = None) -> tuple[str, int]:
    """Copy ``key`` from ``src`` to ``dst`` a piece at a time, atomically (whole or not at all); with
    ``expected``, the copy is abandoned (nothing written) if the bytes read are not those, e.g. a bundle
    changed after it was checked. Returns the sha256 and size copied."""
    digest, size = hashlib.sha256(), 0
    with src.open(key) as fh, dst.writing(key) as out:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
        if expected is not None and digest.hexdigest() != expected:
            raise HelmflowError(f"{src.url(key)} changed while it was imported (sha256 {digest.hexdigest()[:12]}…, "
                                f"checked as {expected[:12]}…); that file was not written")
    return digest.hexdigest(), size


def export_bundle(store: Store, board: str, release: str | None, dest: Store) -> BundleOutcome:
    info = pick_release(store, board, release)
    name = safe_key(info.board)
    try:
        verify_files(store, layout.release_dir(name, info.release_id), info.sha256)
    except CorruptFile as exc:
        raise HelmflowError(str(exc)) from None
    runs = release_runs(store, info)
    keys = [k for m in runs for k in _run_keys(store, m)]
    keys += [layout.release_file(name, info.release_id, n) for n in sorted(info.sha256)]
    keys.append(layout.release_json(name, info.release_id))
    digests: dict[str, str] = {}
    total = 0
    for key in dict.fromkeys(keys):
        digests[key], size = copy_checked(store, dest, key)
        total += size
    for schema in ("run", "release"):
        data = schema_text(schema).encode()
        dest.write_bytes(layout.bundle_schema(schema), data)
        digests[layout.bundle_schema(schema)] = sha256_hex(data)
    manifest = BundleManifest(board=info.board, release_id=info.release_id, created_at=datetime.now(UTC).isoformat(),
                              helmflow_version=helmflow.__version__, files=digests)
    dest.write_json(layout.BUNDLE_MANIFEST, manifest.model_dump(mode="json"))
    return BundleOutcome(info.board, info.release_id, len(runs), len(digests) + 1, total, dest.root)


def read_bundle(bundle: Store) -> tuple[BundleManifest, dict[str, str]]:
    """The bundle's manifest and every file's sha256, each streamed and checked against the manifest's
    (nothing written yet, nothing held in memory but the manifest)."""
    if not bundle.exists(layout.BUNDLE_MANIFEST):
        raise HelmflowError(f"{bundle.root} is not a helmflow bundle (no {layout.BUNDLE_MANIFEST}; "
                            f"write one with `helmflow export BOARD --to DIR`)")
    try:
        manifest = BundleManifest.model_validate(json.loads(bundle.read_bytes(layout.BUNDLE_MANIFEST)))
    except (ValueError, ValidationError) as exc:
        raise HelmflowError(f"{bundle.url(layout.BUNDLE_MANIFEST)} is not a bundle manifest: "
                            f"{' '.join(str(exc).split())[:200]}") from None
    if manifest.format != FORMAT:
        raise HelmflowError(f"{bundle.url(layout.BUNDLE_MANIFEST)}: format {manifest.format!r}, expected {FORMAT!r}")
    problems, digests = [], {}
    for key, expected in manifest.files.items():
        try:
            digest, _ = stream_sha256(bundle, key)
        except FileNotFoundError:
            problems.append(f"{key}: missing")
            continue
        except PermissionError as exc:  # a key that resolves outside the bundle
            problems.append(f"{key}: {exc}")
            continue
        if digest != expected:
            problems.append(f"{key}: sha256 {digest[:12]}…, bundle.json records {expected[:12]}…")
        digests[key] = digest
    if problems:
        raise HelmflowError(f"bundle {bundle.root} is damaged; nothing imported: {'; '.join(problems[:5])}"
                            + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    return manifest, digests


def _checked_bytes(bundle: Store, key: str, digest: str) -> bytes:
    """A small file (run.json, release.json) read whole, and still the bytes that were checked."""
    data = bundle.read_bytes(key)
    if sha256_hex(data) != digest:
        raise HelmflowError(f"bundle {bundle.root}: {key} changed while it was imported; nothing imported")
    return data


def identity_problem(key: str, manifest: RunManifest) -> str | None:
    """Why a run.json at ``key`` cannot be the run its id names (None: it can). The id is recomputed
    from what it is made of: the four versions (and the query and score keys made of them) for a run
    made here, HELM's run name and the source files' sha256 for an imported run."""
    v = manifest.versions
    if key != layout.run_json(manifest.run_id) or v.run_id != manifest.run_id:
        return f"{key}: records run id {manifest.run_id!r} (versions: {v.run_id!r})"
    if manifest.imported is not None:
        name = manifest.imported.run_spec.get("name")
        expected = versions.imported_run_id(name, manifest.imported.sha256) if isinstance(name, str) else None
    else:
        expected = versions.run_id(v.scenario_version, v.prompt_version, v.model_version, v.metric_version)
        query = versions.query_key(v.scenario_version, v.prompt_version, v.model_version)
        if (manifest.lineage.query_key != query
                or manifest.lineage.score_key != versions.score_key(query, v.metric_version)):
            return f"{key}: its query and score keys are not the ones its versions make"
    if expected != manifest.run_id:
        return f"{key}: its content cannot have run id {manifest.run_id} (recomputed: {expected})"
    return None


def _check_content(digests: dict[str, str], run_jsons: dict[str, bytes], bundle: Store) -> None:
    for key, data in run_jsons.items():
        try:
            manifest = RunManifest.model_validate(json.loads(data))
        except (ValueError, ValidationError) as exc:
            raise HelmflowError(f"bundle {bundle.root}: {key} is not a run.json: "
                                f"{' '.join(str(exc).split())[:200]}; nothing imported") from None
        problem = identity_problem(key, manifest)
        if problem is None:
            run_dir = layout.run_dir(manifest.run_id)
            wrong = [n for n, digest in manifest.sha256.items() if digests.get(f"{run_dir}/{n}") != digest]
            if wrong:
                problem = f"{run_dir}/{wrong[0]}: not the bytes its run.json records"
        if problem:
            raise HelmflowError(f"bundle {bundle.root}: {problem}; nothing imported")
    for key, digest in digests.items():
        media = parse_media_key(key)
        if media and digest != media[0]:
            raise HelmflowError(f"bundle {bundle.root}: {key}: its bytes are not the sha256 its name is; "
                                "nothing imported")


def import_bundle(bundle: Store, store: Store, overwrite: bool = False) -> BundleOutcome:
    manifest, files = read_bundle(bundle)  # key -> sha256, every one checked
    name = safe_key(manifest.board)
    release_key = layout.release_json(name, safe_key(manifest.release_id))
    if release_key not in files:
        raise HelmflowError(f"bundle {bundle.root} has no {release_key}")
    info = ReleaseManifest.model_validate(json.loads(_checked_bytes(bundle, release_key, files[release_key])))
    run_jsons = [layout.run_json(rid) for rid in info.run_ids]
    strays = [k for k in files if not _belongs(k, name, info)]
    if strays:
        raise HelmflowError(f"bundle {bundle.root} lists files outside its release, e.g. {strays[0]!r}; "
                            "nothing imported")
    missing = [k for k in run_jsons if k not in files]
    if missing:
        raise HelmflowError(f"bundle {bundle.root} lacks {len(missing)} run(s) of its release, e.g. {missing[0]}")
    schemas = {layout.bundle_schema(s) for s in ("run", "release")}
    markers = set(run_jsons) | {release_key} | schemas
    release_prefix = layout.release_dir(name, info.release_id) + "/"
    ordered = sorted(k for k in files if k not in markers and not k.startswith(release_prefix))  # instances, run files
    ordered += run_jsons + sorted(k for k in files if k.startswith(release_prefix) and k != release_key) + [release_key]
    _check_content(files, {k: _checked_bytes(bundle, k, files[k]) for k in run_jsons}, bundle)
    held = {key for key in ordered if store.exists(key)}
    same = {key for key in held if stream_sha256(store, key)[0] == files[key]}
    differ = [key for key in ordered if key in held - same]
    if differ and not overwrite:
        raise HelmflowError(
            f"{store.url(differ[0])} already holds other bytes than the bundle's"
            + (f" (and {len(differ) - 1} more file(s))" if len(differ) > 1 else "")
            + "; run ids and instance keys are content addresses, so one of the two is not what its key says; "
              "nothing imported (--overwrite replaces the store's files with the bundle's)")
    total = 0
    for key in ordered:  # each a piece at a time, and still the checked bytes
        if key in same:
            continue
        total += copy_checked(bundle, store, key, files[key])[1]
    releases.point(store, name, info, store.url(layout.release_dir(name, info.release_id)))
    return BundleOutcome(manifest.board, manifest.release_id, len(run_jsons), len(ordered), total, store.root)


def _belongs(key: str, board: str, info: ReleaseManifest) -> bool:
    """A key a bundle of this release may hold (bundle.json is untrusted: nothing else is written)."""
    parts = key.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return False
    if key in {layout.bundle_schema(s) for s in ("run", "release")}:
        return True
    if key.startswith(layout.release_dir(board, info.release_id) + "/"):
        return True
    if any(key.startswith(layout.run_dir(rid) + "/") for rid in info.run_ids) or parse_media_key(key):
        return True
    return (len(parts) == 3 and parts[2].endswith(".parquet")
            and key == layout.instances(parts[1], parts[2][: -len(".parquet")]))
