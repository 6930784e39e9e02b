"""Fixture files for HELM Lite's web sources, in the upstream formats and layouts, rows written here.

No row comes from the real datasets: every question, passage and answer is generated text. The
containers match what upstream ships (reference §B.2): the GitHub archive zip of narrativeqa
(``narrativeqa-master/...``: summaries.csv, qaps.csv), the gzipped JSON Lines of NaturalQuestions
dev (HTML page, tokens, annotations with byte offsets), AI2's OpenBookQA zip
(``OpenBookQA-V1-Sep2018/Data/Main/*.jsonl``), the MMLU ``data.tar`` (``data/{dev,val,test}/<subject>_<split>.csv``,
headerless) and the MedQA zip (``data_clean/questions/US/4_options/phrases_no_exclude_*.jsonl``).

:func:`source_tree` writes them under ``<root>/<host>/<path>``, the layout ``$HELMFLOW_SOURCE_HOST``
reads, and :func:`serve` serves such a folder over real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import csv
import gzip
import http.server
import io
import json
import os
import random
import tarfile
import threading
import urllib.parse
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from helmflow.scenarios.mmlu import LITE_SUBJECTS

# --------------------------------------------------------------------------- containers


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def csv_text(header: list[str] | None, rows: list[list[str]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")  # the csv module's default, as the real files
    if header:
        writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode()


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


# --------------------------------------------------------------------------- NarrativeQA
NARRATIVE_DOCS = {"train": 1102, "valid": 115, "test": 355}  # the real story counts per set


def narrativeqa_members(docs: dict[str, int] = NARRATIVE_DOCS, seed: int = 1) -> dict[str, bytes]:
    rng = random.Random(seed)
    summaries, qaps = [], []
    n = 0
    for split, count in docs.items():
        for _ in range(count):
            doc = f"{n:04x}fixture{n:06d}"
            n += 1
            summaries.append([doc, split, f"Fixture story {doc}, with a comma, and \"quotes\".\nSecond line.  ",
                              f"fixture story {doc} tokenized"])
            for q in range(rng.randint(2, 40)):  # the real files have ~30 questions per story
                question = f" What happens in part {q} of story {doc}" + ("?" if q % 3 else "")
                qaps.append([doc, split, question, f"answer one {doc} {q}", f"Answer two, {q}.",
                             question.lower(), f"answer one {doc} {q}", f"answer two , {q} ."])
    rng.shuffle(qaps)  # rows of a document are not contiguous in every file: grouping must not assume it
    return {
        "narrativeqa-master/README.md": b"fixture\n",
        "narrativeqa-master/third_party/wikipedia/summaries.csv": csv_text(["document_id", "set", "summary", "summary_tokenized"], summaries),
        "narrativeqa-master/qaps.csv": csv_text(["document_id", "set", "question", "answer1", "answer2", "question_tokenized",
                                                 "answer1_tokenized", "answer2_tokenized"], qaps),
    }


# --------------------------------------------------------------------------- NaturalQuestions
def nq_example(k: int, rng: random.Random) -> dict:
    """One NQ example: an HTML page with a long-answer paragraph and short-answer spans at byte offsets."""
    pieces, tokens = ["<html><body><h1>Fixture page</h1>"], []
    annotations = []
    shorts_wanted = rng.choice([0, 0, 1, 1, 2, 3])  # about half the dev examples have no short answer
    para_start = len("".join(pieces).encode())
    words = [f"w{k}x{j}" for j in range(12)]
    para = "<p>Fixture&nbsp;paragraph " + " ".join(f"<b>{w}</b>" if j % 4 == 0 else w for j, w in enumerate(words)) + " caf\u00e9 &amp; more.</p>"
    pieces.append(para)
    page = "".join(pieces) + "</body></html>"
    data = page.encode()
    para_end = para_start + len(para.encode())
    for t in page.split(" "):
        tokens.append({"token": t, "start_byte": 0, "end_byte": 0, "html_token": t.startswith("<")})
    for a in range(5):  # dev examples carry five annotations
        spans = []
        if a < shorts_wanted:
            w = words[(a * 3 + 1) % len(words)]
            start = data.index(w.encode(), para_start)
            spans.append({"start_byte": start, "end_byte": start + len(w.encode()), "start_token": 0, "end_token": 0})
        long_answer = ({"start_byte": para_start, "end_byte": para_end, "start_token": 1, "end_token": 20, "candidate_index": 0}
                       if spans or a == 4 else {"start_byte": -1, "end_byte": -1, "start_token": -1, "end_token": -1, "candidate_index": -1})
        annotations.append({"annotation_id": 1000 + a, "long_answer": long_answer, "short_answers": spans, "yes_no_answer": "NONE"})
    return {
        "example_id": 5_000_000 + k,
        "document_title": f"Fixture page {k}",
        "document_url": f"https://en.wikipedia.org/w/index.php?title=Fixture_{k}",
        "document_html": page,
        "document_tokens": tokens,
        "question_text": f"what is the FIXTURE answer number {k}" + ("?" if k % 7 == 0 else ""),
        "question_tokens": ["what", "is", "the", "fixture", "answer", "number", str(k)],
        "long_answer_candidates": [{"start_byte": para_start, "end_byte": para_end, "start_token": 1, "end_token": 20, "top_level": True}],
        "annotations": annotations,
    }


def nq_files(per_file: int = 1566, seed: int = 2) -> dict[str, bytes]:
    """Five gzipped dev files of ``per_file`` examples (the real dev set: 7,830 in five files)."""
    rng = random.Random(seed)
    out, k = {}, 0
    for i in range(5):
        rows = []
        for _ in range(per_file):
            rows.append(nq_example(k, rng))
            k += 1
        out[f"nq-dev-{i:02d}.jsonl.gz"] = gzip.compress(jsonl(rows), mtime=0)
    return out


# --------------------------------------------------------------------------- OpenbookQA
def obqa_rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        key = rng.choice("ABCD")
        rows.append({"id": f"{split}-{i}", "question": {"stem": f"Fixture science stem {split} {i} asks which",
                     "choices": [{"text": f"choice {c} of {split} {i}", "label": c} for c in "ABCD"]}, "answerKey": key})
    return rows


def obqa_zip(n_train: int = 4957, n_dev: int = 500, n_test: int = 500) -> bytes:
    top = "OpenBookQA-V1-Sep2018/Data"
    return zip_bytes({
        f"{top}/Main/openbook.txt": b'"fixture fact"\n',
        f"{top}/Main/train.jsonl": jsonl(obqa_rows(n_train, "train", 1)),
        f"{top}/Main/dev.jsonl": jsonl(obqa_rows(n_dev, "dev", 2)),
        f"{top}/Main/test.jsonl": jsonl(obqa_rows(n_test, "test", 3)),
        f"{top}/Additional/train_complete.jsonl": b"{}\n",
    })


# --------------------------------------------------------------------------- MMLU
MMLU_SIZES = {"abstract_algebra": (11, 100), "college_chemistry": (8, 100), "computer_security": (11, 100),
              "econometrics": (12, 114), "us_foreign_policy": (11, 100), "anatomy": (14, 135)}  # (val, test) as the real files


def mmlu_tar(sizes: dict[str, tuple[int, int]] = MMLU_SIZES, seed: int = 4) -> bytes:
    rng = random.Random(seed)
    members = {"data/auxiliary_train/arc_easy.csv": csv_text(None, [["aux q", "a", "b", "c", "d", "A"]])}
    for subject, (n_val, n_test) in sizes.items():
        for folder, n in (("dev", 5), ("val", n_val), ("test", n_test)):
            rows = []
            for i in range(n):
                options = [f"{subject} {folder} {i} option {j}, text" for j in range(4)]
                if i % 17 == 3:
                    options[2] = options[0]  # a duplicated option: both copies are correct, as in HELM
                rows.append([f"Fixture {subject} question {folder} {i}:\nwhich?", *options, rng.choice("ABCD")])
            members[f"data/{folder}/{subject}_{folder}.csv"] = csv_text(None, rows)
    return tar_bytes(members)


# --------------------------------------------------------------------------- MedQA
def medqa_rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        keys = ["A", "B", "C", "D"]
        options = {k: f"fixture treatment {k} for {split} {i}" + ('\n"' if i % 11 == 0 and k == "B" else "") for k in keys}
        idx = rng.choice(keys)
        rows.append({"question": f"A fixture patient {split} {i} presents. Which is best?", "answer": options[idx],
                     "options": options, "meta_info": "step1", "answer_idx": idx, "metamap_phrases": ["fixture"]})
    return rows


def medqa_zip(n_train: int = 10178, n_dev: int = 1272, n_test: int = 1273) -> bytes:
    folder = "data_clean/questions/US/4_options"
    return zip_bytes({
        f"{folder}/phrases_no_exclude_train.jsonl": jsonl(medqa_rows(n_train, "train", 5)),
        f"{folder}/phrases_no_exclude_dev.jsonl": jsonl(medqa_rows(n_dev, "dev", 6)),
        f"{folder}/phrases_no_exclude_test.jsonl": jsonl(medqa_rows(n_test, "test", 7)),
        "data_clean/questions/US/train.jsonl": b"{}\n",
        "__MACOSX/._data_clean": b"\0",
    })


# --------------------------------------------------------------------------- GSM8K
GSM_URL = "raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data"


def gsm_rows(n: int, seed: int) -> list[dict]:
    """Word problems with worked answers in GSM8K's format (calculator annotations, a final ``#### N`` line)."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        total = a * b
        answer = f"Each box holds {a} pens and there are {b} boxes.\n{a} * {b} = <<{a}*{b}={total}>>{total} pens.\n#### {total:,}"
        rows.append({"question": f"Fixture problem {k}: {b} boxes hold {a} pens each. How many pens are there?", "answer": answer})
    return rows


def gsm_files(n_train: int = 7473, n_test: int = 1319) -> dict[str, bytes]:
    return {"train.jsonl": jsonl(gsm_rows(n_train, 8)), "test.jsonl": jsonl(gsm_rows(n_test, 9))}


# --------------------------------------------------------------------------- the source host
def source_tree(root: Path, small: bool = False) -> Path:
    """Every Lite web source under ``root/<host>/<path>`` (``small``: a few rows each, for board runs)."""
    files = {
        "github.com/deepmind/narrativeqa/archive/master.zip": zip_bytes(
            narrativeqa_members({"train": 12, "valid": 6, "test": 10} if small else NARRATIVE_DOCS)),
        "ai2-public-datasets.s3.amazonaws.com/open-book-qa/OpenBookQA-V1-Sep2018.zip":
            obqa_zip(20, 5, 12) if small else obqa_zip(),
        "people.eecs.berkeley.edu/~hendrycks/data.tar": mmlu_tar({s: (3, 8) for s in LITE_SUBJECTS} if small else MMLU_SIZES),
        "drive.google.com/uc": medqa_zip(20, 6, 8) if small else medqa_zip(),
        **{f"storage.googleapis.com/natural_questions/v1.0/dev/{n}": d for n, d in nq_files(12 if small else 1566).items()},
        **{f"{GSM_URL}/{n}": d for n, d in (gsm_files(12, 10) if small else gsm_files()).items()},
    }
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


class _Quiet(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - the http.server hook
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        super().do_GET()

    def translate_path(self, path: str) -> str:
        """The file for ``path``; for a URL that names its file in the query string (Google Drive's ``?id=``),
        a fixture saved as ``<path>?<query>`` when there is one."""
        base = super().translate_path(path)
        query = urllib.parse.urlsplit(path).query
        return f"{base}?{query}" if query and os.path.isfile(f"{base}?{query}") else base


@contextmanager
def serve(root: Path) -> Iterator[http.server.ThreadingHTTPServer]:
    """``root`` over real HTTP on 127.0.0.1 (no Range support, like GitHub's archive host); the server's
    ``requests`` lists the paths asked for and ``url`` is its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    server.requests = []  # type: ignore[attr-defined]
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
