"""CNN/DailyMail and XSum rows in the Hub's Parquet shapes (``article``/``highlights``/``id``;
``document``/``summary``/``id``), made-up news text, seeded: train articles around HELM's 50-150 word window,
test articles past its 512-word cut, newlines and runs of spaces, and XSum rows for each rule of HELM's filter."""

from __future__ import annotations

import io
import pickle
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow.scenarios.summarization import CNNDailyMail, XSum

WORDS = ("council", "river", "flood", "minister", "said", "on", "Tuesday", "the", "town", "would", "rebuild",
         "bridge", "£2m", "residents", "don't", "agree", "U.K.", "well-known", "club", "match", "2-1", "win")


def _words(rng: random.Random, n: int) -> str:
    out = []
    for k in range(n):
        out.append(rng.choice(WORDS) + (".\n" if k % 13 == 12 else "  " if k % 7 == 6 else " "))
    return "".join(out).strip()


def rows(seed: int, xsum: bool) -> dict[str, list[dict[str, str]]]:
    """{HF split: rows}; XSum's train rows include one for each rule of HELM's ``_xsum_filter``."""
    rng = random.Random(seed)
    article, summary = ("document", "summary") if xsum else ("article", "highlights")

    def row(k: int, n_article: int, n_summary: int, extra: str = "") -> dict[str, str]:
        return {article: extra + _words(rng, n_article), summary: _words(rng, n_summary), "id": f"{seed}-{k}"}

    train = [row(k, n, 14) for k, n in enumerate((30, 49, 50, 80, 120, 150, 151, 400, 60, 70, 90))]
    if xsum:
        train += [row(20, 80, 14, "Media playback is unsupported on your device "), row(21, 80, 14, "Last updated at 10:00 "),
                  row(22, 80, 10), row(23, 55, 12), row(24, 60, 11)]  # 12/55 > 0.2 is dropped; 11/60 is kept
    valid = [row(100 + k, n, 20) for k, n in enumerate((40, 300, 700))]
    test = [row(200 + k, n, 25) for k, n in enumerate((10, 513, 900, 120))]
    test.append({article: "{Braced article text here.}", summary: "{Braced summary.}", "id": f"{seed}-299"})
    return {"train": train, "validation": valid, "test": test}


def parquet(rows_: list[dict[str, str]]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows_), buf)
    return buf.getvalue()


def files(xsum: bool, seed: int = 3) -> dict[str, bytes]:
    """The scenario's files by filename (CNN/DailyMail's train split over its three shards)."""
    data = rows(seed, xsum)
    if xsum:
        return {name: parquet(data[split]) for name, (_, split) in XSum.FILES.items()}
    train = data["train"]
    shards = [train[:4], train[4:7], train[7:]]
    out = {f"train-{i:05d}.parquet": parquet(shard) for i, shard in enumerate(shards)}
    return out | {"validation.parquet": parquet(data["validation"]), "test.parquet": parquet(data["test"])}


def write_files(root: Path, xsum: bool, seed: int = 3) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, data in files(xsum, seed).items():
        (root / name).write_bytes(data)
        out[name] = str(root / name)
    return out


def mirror_tree(root: Path, seed: int = 3) -> Path:
    """Both scenarios' files where ``$HELMFLOW_MIRROR`` reads them: ``<scenario>/<revision>/<filename>``."""
    for cls, xsum in ((CNNDailyMail, False), (XSum, True)):
        write_files(root / cls.name / cls.HUB_REVISION, xsum, seed)
    return root


def xsum_sampled_pickle(seed: int = 4) -> bytes:
    """``xsum-sampled.pk`` as HELM reads it: ``{"train", "validation", "test"}`` -> lists of ``{document,
    summary, id}`` dicts, plain data only (the real file's shape is [unverified]: HELM indexes it so)."""
    return pickle.dumps(rows(seed, True), protocol=4)
