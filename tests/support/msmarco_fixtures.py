"""MS MARCO files in their raw shapes, written by us: passages ``docid\\ttext``, queries ``qid\\ttext``, qrels
``qid\\t0\\tdocid\\trel`` (TREC's space-separated), top-k ``qid\\tdocid\\trank``; made-up text, seeded."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

from helmflow.scenarios.msmarco import URLS

QUOTE = '"Quoted" '
WORDS = ("river", "bank", "loan", "bear", "weigh", "drops", "bottle", "account", "online", "open", "spectacled",
         "pounds", "ml", "eye", "Wells", "café", "naïve", '"quoted"', "rate")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def msmarco_files(seed: int = 7, n_docs: int = 90) -> dict[str, bytes]:
    """Every source file, keyed by the scenario's filenames (the TREC queries gzipped, as upstream)."""
    rng = random.Random(seed)
    docids = rng.sample(range(1000, 9_000_000), n_docs)
    # one passage opens with a quote (csv reads it as a quoted field, as HELM's reader does)
    docs = [f"{d}\t{QUOTE if i == 3 else ''}{_text(rng, 6)} {i}." for i, d in enumerate(docids)]

    def topk(qid: int, n: int) -> list[str]:
        return [f"{qid}\t{d}\t{r}" for r, d in enumerate(rng.sample(docids, n), 1)]

    train_q, train_rels, train_top = [], [], []
    for k in range(8):
        qid = 100 + 7 * k
        train_q.append(f"{qid}\t{_text(rng, 4)}?")
        top = topk(qid, 20 if k != 5 else 15)  # query 5 has too few top-k passages: HELM drops it
        train_top += top
        if k != 6:  # query 6 has no judgement: dropped
            gold = int(top[rng.randrange(0, 10)].split("\t")[1])
            train_rels.append(f"{qid}\t0\t{gold}\t1")
    regular_q, regular_rels, regular_top = [], [], []
    for k in range(7):
        qid = 500 + 11 * k
        regular_q.append(f"{qid}\t{_text(rng, 5)}")
        top = topk(qid, 30 if k != 2 else 12)  # query 2 has 12: kept only when valid_topk <= 12
        regular_top += top
        if k != 4:
            golds = rng.sample(docids, 1 + k % 2) if k != 1 else [int(top[40 % len(top)].split("\t")[1])]
            regular_rels += [f"{qid}\t0\t{g}\t1" for g in golds]
    trec_q, trec_rels, trec_top = [], [], []
    for k in range(5):
        qid = 9000 + k
        trec_q.append(f"{qid}\t{_text(rng, 3)}")
        top = topk(qid, 30)
        trec_top += top
        judged = rng.sample(docids, 8)
        grades = [rng.choice((0, 1)) for _ in judged] if k == 3 else [rng.choice((0, 1, 2, 3)) for _ in judged]
        if k != 3 and not {2, 3} & set(grades):
            grades[0] = 2
        trec_rels += [f"{qid} 0 {d} {g}" for d, g in zip(judged, grades, strict=True)]  # NIST: spaces

    def lines(rows: list[str]) -> bytes:
        return ("\n".join(rows) + "\n").encode("utf-8")

    return {
        "documents.tsv": lines(docs), "train_queries.tsv": lines(train_q), "train_qrels.tsv": lines(train_rels),
        "train_topk.tsv": lines(train_top), "regular_queries.tsv": lines(regular_q),
        "regular_qrels.tsv": lines(regular_rels), "regular_topk.tsv": lines(regular_top),
        "trec_queries.tsv.gz": gzip.compress(lines(trec_q), mtime=0), "trec_qrels.txt": lines(trec_rels),
        "trec_topk.tsv": lines(trec_top),
    }


def write_files(root: Path, files: dict[str, bytes] | None = None) -> dict[str, str]:
    """The files under ``root`` by filename; returns filename -> path (what a scenario's ``load`` reads)."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, data in (files or msmarco_files()).items():
        (root / name).write_bytes(data)
        out[name] = str(root / name)
    return out


def source_tree(root: Path, files: dict[str, bytes] | None = None) -> Path:
    """The files where ``$HELMFLOW_SOURCE_HOST`` serves them: ``<host>/<path of the upstream URL>``. A CodaLab
    bundle URL ends in ``/``, so its file is that folder's ``index.html`` (what a static server answers)."""
    for name, data in (files or msmarco_files()).items():
        path = URLS[name].partition("://")[2]
        target = root / (path + "index.html" if path.endswith("/") else path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root
