"""The data files HELM's perturbations download at run time, fetched into the storage root.

HELM 0.5.16 downloads three files from its public bucket when a perturbation is first built
(``ensure_file_downloaded``): the SAE->AAVE mapping (``DialectPerturbation.MAPPING_DICT_URIS``), the
WordNet synonym table (``SynonymPerturbation.SOURCE_URI``) and its person-name list
(``PersonNamePerturbation``'s default file). ``helmflow fetch-assets perturbations`` downloads them from
``$HELMFLOW_ASSETS_URL`` (default: HELM's bucket) into ``assets/perturbations/`` of the storage root,
where the perturbations read them (:func:`helmflow.perturbations.data_bytes`).

HELM publishes no checksum for them. A file whose sha256 is pinned here is refused when it differs;
one whose sha256 is not known yet (``sha256=None``, printed as UNPINNED) has its sha256 recorded at its
first fetch in ``assets/perturbations/assets.json`` and every later fetch, and every read, must match
that record. A failed or refused download leaves what was stored before as it was.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.storage import Store

KIND = "perturbations"
TIMEOUT_S = 60.0


class AssetError(HelmflowError, ValueError):
    """A download that failed, was empty or did not match its pinned or recorded sha256."""


@dataclass(frozen=True)
class Asset:
    filename: str
    path: str  # under the base URL, as in HELM's source
    used_by: str
    sha256: str | None = None  # None: not known yet; the first fetch records it


ASSETS: tuple[Asset, ...] = (
    Asset("SAE_to_AAVE_mapping.json", "dialect_perturbation/SAE_to_AAVE_mapping.json", "dialect"),
    Asset("wordnet_synonyms.json", "synonym_perturbation/wordnet_synonyms.json", "synonym (not ported yet)"),
    Asset("person_names.txt", "person_name_perturbation/person_names.txt", "person_name"),
)
COMMAND = f"helmflow fetch-assets {KIND}"


@dataclass(frozen=True)
class Fetched:
    asset: Asset
    url: str
    sha256: str
    size: int
    check: str  # "pinned", "recorded" (first fetch of an unpinned file) or "same as first fetch"


def base_url() -> str:
    from helmflow.settings import settings

    return settings().assets_url.rstrip("/")


def recorded(store: Store) -> dict[str, dict]:
    """filename -> {sha256, url, fetched_at} as first fetched into this storage root."""
    key = layout.assets_manifest(KIND)
    return store.read_json(key).get("files", {}) if store.exists(key) else {}


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:  # noqa: S310 - an http(s) URL
            data = response.read()
    except urllib.error.HTTPError as exc:
        raise AssetError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AssetError(f"cannot download {url} ({reason}); offline? set HELMFLOW_ASSETS_URL to a mirror") from None
    if not data:
        raise AssetError(f"{url} is empty (0 bytes); refusing to use it")
    return data


def fetch_assets(store: Store, url: str | None = None) -> list[Fetched]:
    """Download every asset, check it, and store it; the record of first-fetch hashes is written last.
    Every file is downloaded and checked before any is stored, so a bad one changes nothing."""
    root = (url or base_url()).rstrip("/")
    if not root.startswith(("http://", "https://")):
        raise AssetError(f"HELMFLOW_ASSETS_URL must be an http(s) URL, not {root!r}")
    before = recorded(store)
    downloads: list[tuple[Fetched, bytes]] = []
    for asset in ASSETS:
        source = f"{root}/{asset.path}"
        data = _download(source)
        digest = hashlib.sha256(data).hexdigest()
        first = before.get(asset.filename, {}).get("sha256")
        if asset.sha256 and digest != asset.sha256:
            raise AssetError(f"{source}: sha256 {digest} is not the pinned {asset.sha256}; nothing was stored")
        if first and digest != first:
            raise AssetError(f"{source}: sha256 {digest} differs from the first fetch into this storage ({first}); "
                             f"nothing was stored")
        check = "pinned" if asset.sha256 else ("same as first fetch" if first else "recorded")
        downloads.append((Fetched(asset, source, digest, len(data), check), data))
    files = dict(before)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for fetched, data in downloads:
        store.write_bytes(layout.asset_file(KIND, fetched.asset.filename), data)
        files.setdefault(fetched.asset.filename, {"sha256": fetched.sha256, "url": fetched.url, "fetched_at": now})
    store.write_json(layout.assets_manifest(KIND), {"files": files})
    return [f for f, _ in downloads]


def translation_tables() -> tuple[str, ...]:
    from helmflow.perturbations.translations import TRANSLATIONS, translation_file

    return tuple(translation_file(code) for code in TRANSLATIONS.values())


def import_file(store: Store, path: str) -> Fetched:
    """Store a local copy of a data file under its own name: one of :data:`ASSETS` (a copy of HELM's file
    made elsewhere) or a translation table (``google_translate_<code>.json``, a JSON object of English text ->
    translation: HELM's translations come from Google Translate at run time and are published nowhere).
    Its sha256 is recorded, replacing an earlier import's (a new table re-runs the entries it translates);
    for one of HELM's files, a pinned or first-fetched sha256 must still match."""
    import json
    from pathlib import Path

    source = Path(path).expanduser()
    name = source.name
    known = {a.filename: a for a in ASSETS}
    if name not in known and name not in translation_tables():
        raise AssetError(f"{path}: not a perturbation data file; the names are: "
                         f"{', '.join([*known, *translation_tables()])}")
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise AssetError(f"cannot read {path} ({exc.strerror or exc})") from None
    if not data:
        raise AssetError(f"{path} is empty (0 bytes); refusing to use it")
    digest = hashlib.sha256(data).hexdigest()
    before = recorded(store)
    if name in known:
        first = before.get(name, {}).get("sha256")
        if (pin := known[name].sha256 or first) and digest != pin:
            raise AssetError(f"{path}: sha256 {digest} is not the {'pinned' if known[name].sha256 else 'first-fetched'}"
                             f" {pin}; nothing was stored")
        asset = known[name]
    else:
        try:
            table = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise AssetError(f"{path} is not JSON ({exc}); expected an object of English text -> translation") from None
        if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
            raise AssetError(f"{path}: expected a JSON object of English text -> translation (strings)")
        asset = Asset(name, "", "translate_" + name.removeprefix("google_translate_").removesuffix(".json"))
    store.write_bytes(layout.asset_file(KIND, name), data)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    files = dict(before)
    files[name] = {"sha256": digest, "url": source.resolve().as_uri(), "fetched_at": now}
    store.write_json(layout.assets_manifest(KIND), {"files": files})
    return Fetched(asset, source.resolve().as_uri(), digest, len(data), "imported")
