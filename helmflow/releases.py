"""A board's release pointers: which release ``latest.json`` (and its siblings) names, in one place.

A board has up to four pointers (``helmflow.layout.POINTERS``), one per kind of release:

- ``latest.json``: the newest complete release of the board as written;
- ``latest-partial.json``: the newest release of the whole board with failed cells;
- ``latest-subset.json`` / ``latest-subset-partial.json``: the same for subset runs (fewer models or
  scenarios, another ``max_instances`` or jury than the board's). A subset never moves the first two.

Pointers are written after ``release.json``. A kill between the two leaves the pointer behind, so
publication ends with :func:`point` on every run, cached or not: it moves the pointer when it names
another release, and writes nothing when it is already in place.
"""

from __future__ import annotations

from pydantic import ValidationError

from helmflow import layout
from helmflow.manifests import LatestPointer, ReleaseManifest
from helmflow.storage import Store


def point(store: Store, board: str, release: ReleaseManifest, uri: str) -> str | None:
    """Make the pointer for this kind of release name it; returns the pointer key if it moved,
    None if it was already in place."""
    key = layout.latest(board, complete=release.status == "complete", subset=release.subset)
    if store.exists(key):
        try:
            if LatestPointer.model_validate(store.read_json(key)).release_id == release.release_id:
                return None
        except (ValueError, ValidationError):  # an unreadable pointer is replaced, not trusted
            pass
    pointer = LatestPointer(release_id=release.release_id, uri=uri, status=release.status,
                            created_at=release.created_at, subset=release.subset, selection=release.selection)
    store.write_json(key, pointer.to_json())
    return key


def latest_release_id(store: Store, board: str) -> str | None:
    """The release a reader shows by default: the newest complete full release, else a partial one,
    else a subset's; None when the board has no readable pointer."""
    for key in layout.pointers(board):
        if store.exists(key):
            try:
                return LatestPointer.model_validate(store.read_json(key)).release_id
            except (ValueError, ValidationError):
                continue
    return None
