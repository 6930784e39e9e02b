"""An offline W&B run read back from its ``run-<id>.wandb`` file: the records ``wandb`` wrote, decoded with
wandb's own protobuf messages (``wandb.proto.wandb_internal_pb2.Record``).

The file is W&B's transaction log: a 7-byte header (``:W&B``, magic 0xBEE1, version 0), then LevelDB's log
format in 32 KiB blocks, each record ``crc32 (uint32 LE, seeded with the record type's own crc32) | length
(uint16 LE) | type (uint8: FULL 1, FIRST 2, MIDDLE 3, LAST 4) | data``, a block's tail shorter than a record
header padded with zeros. The SDK of this version ships no Python reader of it (its Go core writes it), so this
module reads the framing and checks every checksum; what each record says is wandb's own message.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK = 32768
HEADER = struct.Struct("<4sHB")
RECORD = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_SEED = {t: zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in (FULL, FIRST, MIDDLE, LAST)}


def records(path: Path) -> list[Any]:
    """Every record of the file, in order, as ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, version = HEADER.unpack_from(data, 0)
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), (ident, magic, version)
    pos, out, parts = HEADER.size, [], b""
    while pos < len(data):
        left = BLOCK - pos % BLOCK
        if left < RECORD.size:
            assert data[pos:pos + left].strip(b"\0") == b"", "a block's padding is not zeros"
            pos += left
            continue
        if pos + RECORD.size > len(data):
            break
        checksum, length, kind = RECORD.unpack_from(data, pos)
        if kind == 0 and length == 0:  # zero padding at a block's end
            pos += left
            continue
        chunk = data[pos + RECORD.size:pos + RECORD.size + length]
        assert zlib.crc32(chunk, _SEED[kind]) & 0xFFFFFFFF == checksum, f"bad checksum at byte {pos}"
        pos += RECORD.size + length
        if kind == FULL:
            parts = chunk
        elif kind == FIRST:
            parts = chunk
            continue
        elif kind == MIDDLE:
            parts += chunk
            continue
        else:
            parts += chunk
        record = wandb_internal_pb2.Record()
        record.ParseFromString(parts)
        out.append(record)
    return out


@dataclass
class OfflineRun:
    """What an offline run holds: its run record, config, summary, history rows, artifacts and exit."""

    folder: Path
    run: Any = None
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[Any] = field(default_factory=list)
    exit_code: int | None = None
    kinds: list[str] = field(default_factory=list)


def _key(item: Any) -> str:
    return item.key or "/".join(item.nested_key)


def read_run(folder: Path) -> OfflineRun:
    """The offline run in ``folder`` (``<dir>/wandb/offline-run-<stamp>-<id>/``)."""
    [log] = folder.glob("run-*.wandb")
    out = OfflineRun(folder)
    for record in records(log):
        kind = record.WhichOneof("record_type")
        out.kinds.append(kind)
        if kind == "run":
            out.run = record.run
            for item in record.run.config.update:
                out.config[_key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                out.config[_key(item)] = json.loads(item.value_json)
        elif kind == "summary":
            for item in record.summary.update:
                out.summary[_key(item)] = json.loads(item.value_json)
        elif kind == "history":
            out.history.append({_key(item): json.loads(item.value_json) for item in record.history.item})
        elif kind == "artifact":
            out.artifacts.append(record.artifact)
        elif kind == "exit":
            out.exit_code = record.exit.exit_code
    return out
