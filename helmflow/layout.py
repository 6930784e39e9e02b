"""The storage contract: every key helmflow reads or writes, as functions over strings.

One home for design.md's storage table, so a writer and its readers (pipeline, journal, operations,
tasks, the web report) cannot drift apart. Keys are relative to the storage root (see
:class:`helmflow.storage.Store`); the names that go into them are already storage-safe (scenario
keys, run ids, board names) or made so here (revisions, deployment names).

```
datasets/<scenario>/<revision>/…            mirrored source files + manifest.json
instances/<scenario>/<scenario_version>.parquet
media/<sha256>.<ext>                        images, content-addressed
renders/<renderer>-<version>/<xx>/<key>.json what a renderer drew for a completion (image in media/), once
work/prompts|query|score/…                  per-task working files (the task cache's payload)
responses/<deployment>/<xx>/part-*.parquet  the request journal (successes only)
batches/<deployment>/<batch id>.json        a provider batch: its id and request hashes, written before it is polled
batches/<deployment>/ended/<batch id>.json  the same once its answers are journaled (never read again by a run)
prefect-results/<cache key>                 Prefect's persisted task results
quarantine/<key>                            objects that failed their check (corrupt journal parts, foreign results)
runs/<run_id>/…, run.json last              a published run (references.parquet: its gold answers)
leaderboards/<board>/<release>/…            a release: leaderboard.parquet, runs.parquet, release.json, report/,
                                            comparisons/<A>__<B>.parquet (helmflow compare),
                                            agreement.parquet (helmflow agreement)
leaderboards/<board>/latest.json            newest complete release (latest-partial.json: with failed cells)
leaderboards/<board>/latest-subset.json     the same for subset runs (latest-subset-partial.json)
leases/<board>.json                         the holder of a board's run lease (helmflow.lease)
assets/<kind>/<file>, assets.json           files HELM downloads at run time (helmflow fetch-assets), their sha256
_counters/offline/<deployment>/<id>.count   calls an offline deployment answered (read by tests in another process)
```
A bundle (``helmflow export``) is a root of its own holding one release under the keys above, plus
``bundle.json`` (sha256 of every file, written last) and ``schemas/<name>.schema.json``.
"""

from __future__ import annotations

from helmflow.storage import safe_key

# The flow labels its Prefect flow run with the storage root it resolved, so a run whose ``storage``
# parameter was empty (a deployment: the worker's $HELMFLOW_STORAGE decided) still says where it wrote.
STORAGE_LABEL = "helmflow.storage"

# --------------------------------------------------------------------------- source data
DATASET_MANIFEST = "manifest.json"


def dataset_dir(scenario_key: str, revision: str) -> str:
    return f"datasets/{scenario_key}/{safe_key(revision)}"


def dataset_file(scenario_key: str, revision: str, filename: str) -> str:
    """The stored copy of one source file."""
    return f"{dataset_dir(scenario_key, revision)}/{safe_key(filename)}"


def dataset_manifest(scenario_key: str, revision: str) -> str:
    """The sha256 of each mirrored file, pinned the first time it was downloaded."""
    return f"{dataset_dir(scenario_key, revision)}/{DATASET_MANIFEST}"


def instances(scenario_key: str, scenario_version: str) -> str:
    return f"instances/{scenario_key}/{scenario_version}.parquet"


MEDIA_PREFIX = "media"


def media_key(sha256: str, ext: str) -> str:
    """``media/<sha256>.<ext>``: an image, content-addressed (helmflow.media checks a key's shape)."""
    return f"{MEDIA_PREFIX}/{sha256}.{ext}"


RENDERS_PREFIX = "renders"


def render_record(renderer: str, version: str, render_key: str) -> str:
    """``renders/<renderer>-<version>/<xx>/<key>.json``: what a renderer drew for one completion (the image
    itself is in the media store), written once; a rerun with the same key reads it instead of rendering."""
    return f"{RENDERS_PREFIX}/{safe_key(renderer)}-{safe_key(version)}/{render_key[:2]}/{render_key}.json"


# --------------------------------------------------------------------------- working files of the tasks
def prompts(scenario_key: str, scenario_version: str, prompt_version: str) -> str:
    return f"work/prompts/{scenario_key}/{scenario_version}-{prompt_version}.parquet"


def query_dir(query_key: str) -> str:
    """``requests.parquet`` and ``completions.parquet`` of one (scenario, prompt, model) query."""
    return f"work/query/{query_key}"


def score_dir(score_key: str) -> str:
    """``stats.parquet``, ``summary.parquet`` (and ``annotations.parquet``) of one scoring."""
    return f"work/score/{score_key}"


STAGE_MARKER = "outcome.json"


def stage_marker(stage_dir: str) -> str:
    """The outcome of a finished, error-free query or scoring in ``query_dir``/``score_dir``, written
    last: a run task finding it reuses that stage (a metric change re-scores without re-querying)."""
    return f"{stage_dir}/{STAGE_MARKER}"


# --------------------------------------------------------------------------- the request journal
JOURNAL_ROOT = "responses"


def journal_dir(deployment: str) -> str:
    return f"{JOURNAL_ROOT}/{safe_key(deployment)}"


def journal_part(journal_prefix: str, partition: str, part_id: str) -> str:
    """One part of a journal partition (``partition``: the first two hex digits of the request hash)."""
    return f"{journal_prefix}/{partition}/part-{part_id}.parquet"


# --------------------------------------------------------------------------- provider batches
BATCHES_ROOT = "batches"


def batches_dir(deployment: str) -> str:
    """The deployment's provider batches (:mod:`helmflow.batches`), one JSON record each."""
    return f"{BATCHES_ROOT}/{safe_key(deployment)}"


def batch_record(deployment: str, batch_id: str, ended: bool = False) -> str:
    """A live batch's record; an ended one's moves under ``ended/`` (a run lists only the live ones)."""
    return f"{batches_dir(deployment)}{'/ended' if ended else ''}/{safe_key(batch_id)}.json"


# --------------------------------------------------------------------------- offline call counts
OFFLINE_COUNTERS = "_counters/offline"


def offline_counters(deployment: str) -> str:
    """Where an offline deployment writes how many calls it answered (one file per flush, summed by readers)."""
    return f"{OFFLINE_COUNTERS}/{safe_key(deployment)}"


# --------------------------------------------------------------------------- Prefect's task results
RESULTS_PREFIX = "prefect-results"


def result(cache_key: str) -> str:
    """Where Prefect persists the result of the task run with this cache key."""
    return f"{RESULTS_PREFIX}/{cache_key}"


QUARANTINE_PREFIX = "quarantine"


def quarantined(key: str) -> str:
    """Where a stored object that failed its check is moved (kept for inspection, never read again):
    a corrupt journal part, a task result record helmflow did not write."""
    return f"{QUARANTINE_PREFIX}/{key}"


def prepare_cache_key(scenario_key: str, scenario_version: str, prompt_version: str) -> str:
    """The ``prepare <scenario>`` task: download + adapt."""
    return f"prepare-{scenario_key}-{scenario_version}-{prompt_version}"


def run_cache_key(run_id: str) -> str:
    """The ``run <scenario> x <deployment>`` task: query → score → publish."""
    return f"run-{run_id}"


def release_cache_key(board_version: str, release_hash: str) -> str:
    return f"release-{board_version}-{release_hash}"


# --------------------------------------------------------------------------- published runs
RUN_JSON = "run.json"


def run_dir(run_id: str) -> str:
    return f"runs/{run_id}"


def run_file(run_id: str, name: str) -> str:
    return f"{run_dir(run_id)}/{name}"


def run_json(run_id: str) -> str:
    """The run's commit marker, written last: no run.json, no run."""
    return run_file(run_id, RUN_JSON)


RUN_FILES = ("requests.parquet", "completions.parquet", "stats.parquet", "summary.parquet")  # every run has these
RUN_TRAJECTORY = "trajectory.parquet"  # adaptive runs only: one row per asked item, in asking order
RUN_ANNOTATIONS = "annotations.parquet"  # judged runs only: one row per (completion, judge)
# The gold answers are not in RUN_FILES: runs published before they existed stay complete without
# them (their references are in the scenario's instances file).
RUN_REFERENCES = "references.parquet"
RUN_RENDERS = "renders.parquet"  # runs whose metrics render completions: one row per rendered completion


def run_references(run_id: str) -> str:
    """The gold answers of the instances the run evaluated (``records.REFERENCE_SCHEMA``; docs/analysis.md)."""
    return run_file(run_id, RUN_REFERENCES)


# --------------------------------------------------------------------------- releases
RELEASE_JSON = "release.json"
LATEST = "latest.json"
LATEST_PARTIAL = "latest-partial.json"
# A subset run (narrower models, scenarios, max_instances or jury than the board's) has its own two
# pointers and never moves the two above.
LATEST_SUBSET = "latest-subset.json"
LATEST_SUBSET_PARTIAL = "latest-subset-partial.json"
POINTERS = (LATEST, LATEST_PARTIAL, LATEST_SUBSET, LATEST_SUBSET_PARTIAL)  # in the order a reader prefers them


LEADERBOARDS = "leaderboards"


def board_dir(board: str) -> str:
    return f"{LEADERBOARDS}/{board}"


def release_dir(board: str, release_id: str) -> str:
    return f"{board_dir(board)}/{release_id}"


def release_file(board: str, release_id: str, name: str) -> str:
    return f"{release_dir(board, release_id)}/{name}"


def release_json(board: str, release_id: str) -> str:
    return release_file(board, release_id, RELEASE_JSON)


COMPARISONS = "comparisons"


def comparison(board: str, release_id: str, a: str, b: str) -> str:
    """Two models of a release compared cell by cell (``helmflow compare``; ``compare.COMPARISON_SCHEMA``)."""
    return release_file(board, release_id, f"{COMPARISONS}/{safe_key(a)}__{safe_key(b)}.parquet")


AGREEMENT = "agreement.parquet"


def agreement(board: str, release_id: str) -> str:
    """The judges' agreement on every juried cell of a release, with human labels when given
    (``helmflow agreement``; ``agreement.AGREEMENT_SCHEMA``)."""
    return release_file(board, release_id, AGREEMENT)


def report_dir(board: str, release_id: str) -> str:
    """The static report of a release (``helmflow report``)."""
    return release_file(board, release_id, "report")


def latest(board: str, complete: bool = True, subset: bool = False) -> str:
    """The pointer to a board's newest complete release (or newest partial one); ``subset``: the
    same for subset runs."""
    names = (LATEST_SUBSET, LATEST_SUBSET_PARTIAL) if subset else (LATEST, LATEST_PARTIAL)
    return f"{board_dir(board)}/{names[0] if complete else names[1]}"


def pointers(board: str) -> list[str]:
    """The board's pointers, the one a reader prefers first."""
    return [f"{board_dir(board)}/{p}" for p in POINTERS]


# --------------------------------------------------------------------------- run leases
def lease(board: str) -> str:
    """The board's run lease (one run of a board per storage root at a time: ``helmflow.lease``)."""
    return f"leases/{safe_key(board)}.json"


# --------------------------------------------------------------------------- downloaded assets
# Files HELM downloads at run time (``helmflow fetch-assets``): ``assets/<kind>/<filename>``, and the
# sha256 of each as first fetched (``assets/<kind>/assets.json``, written after the files).
ASSETS_MANIFEST = "assets.json"


def asset_file(kind: str, filename: str) -> str:
    """``assets/<kind>/<filename>``, e.g. ``assets/perturbations/SAE_to_AAVE_mapping.json``."""
    return f"assets/{safe_key(kind)}/{safe_key(filename)}"


def assets_manifest(kind: str) -> str:
    return f"assets/{safe_key(kind)}/{ASSETS_MANIFEST}"


# --------------------------------------------------------------------------- export bundles
# A bundle (``helmflow export``) is a storage root of its own holding one release and every run
# behind it under the keys above, plus these two: its manifest, written last, and the JSON Schemas.
BUNDLE_MANIFEST = "bundle.json"


def bundle_schema(name: str) -> str:
    """``schemas/<name>.schema.json``: the JSON Schema of run.json / release.json, shipped with a bundle."""
    return f"schemas/{name}.schema.json"


def item_easiness(scenario_key: str, scenario_version: str, version: str) -> str:
    """A scenario's Rasch item easiness (``instance_id``, ``z``) fitted by ``helmflow calibrate-items``
    from published runs; ``version`` is the hash of the runs it was fitted from."""
    return f"items/{scenario_key}/{scenario_version}/easiness-{version}.parquet"


def item_easiness_latest(scenario_key: str, scenario_version: str) -> str:
    """Which :func:`item_easiness` version adaptive runs of the scenario use (``{"version": ...}``)."""
    return f"items/{scenario_key}/{scenario_version}/latest.json"
