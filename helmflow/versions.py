"""The five hashes of design.md: built from declared VERSIONs and data, never from time or git.

Each function takes exactly the inputs its hash is defined over, so a changed field can only move
the hashes that name it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from helmflow.records import AdapterSpec, Deployment, RequestBody

HASH_LEN = 16


def _canonical(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return _canonical(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(_canonical(v) for v in obj)
    return obj


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal inputs give equal bytes in every process."""
    return json.dumps(_canonical(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stable_hash(obj: Any, length: int = HASH_LEN) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def scenario_version(
    name: str, params: dict[str, Any], dataset_revision: str, checksums: dict[str, str], loader_version: str
) -> str:
    return stable_hash(
        {"name": name, "params": params, "revision": dataset_revision, "checksums": checksums, "loader": loader_version}
    )


def prompt_version(adapter: AdapterSpec, template_versions: dict[str, str]) -> str:
    return stable_hash({"adapter": adapter, "templates": template_versions})


def model_version(deployment: Deployment) -> str:
    """``options.images`` (limits, re-encoding) changes the images sent, ``logprobs`` what is asked, and
    ``reasoning`` and ``increase_max_tokens`` the requests themselves, so each is part of it when set:
    a deployment without them keeps its version."""
    fields = {
        "name": deployment.name,
        "client": deployment.client,
        "model": deployment.model,
        "revision": deployment.revision,
        "tokenizer": deployment.tokenizer,
        "context_window": deployment.context_window,
    }
    if deployment.options.get("images"):
        fields["images"] = deployment.options["images"]
    if deployment.logprobs:  # the requests ask for logprobs, so they are other requests
        fields["logprobs"] = True
    if deployment.reasoning is not None:  # how hard it thinks, and how its reasoning is read
        fields["reasoning"] = deployment.reasoning.model_dump(mode="json", exclude_none=True)
    if deployment.max_tokens_increase:
        fields["increase_max_tokens"] = deployment.max_tokens_increase
    return stable_hash(fields)


def metric_version(metric_versions: dict[str, str], judges: dict[str, str] | None = None) -> str:
    """metric name -> VERSION, and judge deployment name -> judge template VERSION."""
    return stable_hash({"metrics": metric_versions, "judges": judges or {}})


def run_id(scenario_v: str, prompt_v: str, model_v: str, metric_v: str) -> str:
    return stable_hash([scenario_v, prompt_v, model_v, metric_v])


def imported_run_id(run_name: str, source_sha256: dict[str, str], tool: str = "helm") -> str:
    """A run imported from another tool's output (HELM's run folders, Inspect's logs): its run name and the
    sha256 of every source file read."""
    return stable_hash({"format": tool, "run": run_name, "sha256": source_sha256})


def query_key(scenario_v: str, prompt_v: str, model_v: str) -> str:
    return stable_hash([scenario_v, prompt_v, model_v])


def score_key(query_k: str, metric_v: str) -> str:
    return stable_hash([query_k, metric_v])


def release_hash(board_version: str, run_ids: list[str]) -> str:
    return stable_hash({"board": board_version, "runs": sorted(run_ids)}, length=8)


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """Lineage only: the commit of the checkout helmflow runs from, if any."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def request_hash(body: RequestBody, sample_index: int) -> str:
    """The journal's key: covers exactly what is sent (no headers, no keys), plus the sample index of
    repeated samples. Full sha256: the journal deduplicates on it.

    An image is covered by its sha256 and MIME type (what is sent), never by where it is stored:
    a moved store or a mirror keeps every key.
    """
    dumped = body.model_dump(mode="json", exclude_none=True)
    for part in dumped.get("parts") or []:
        part.pop("uri", None)
    # a JSON-mode dump is plain JSON already (string keys, lists, no sets or models): sorted keys make
    # the bytes of canonical_json without its walk, which cost three times the dump and the sha256
    payload = json.dumps({"body": dumped, "sample": sample_index}, sort_keys=True, separators=(",", ":"),
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()
