"""Files in the raw shapes of HELM Long Context's sources, written by us: SQuAD 2.0's dev JSON, HotpotQA's dev
(distractor) JSON, InfiniteBench's JSON Lines, OpenAI MRCR's Parquet. Every text is generated from seeded words
(no dataset row is copied); ``words`` sets a text's length, so the same builders make small unit-test files and
the ~128k-token prompts the memory measurement (benchmarks/long_context_memory.py) runs."""

from __future__ import annotations

import io
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow.scenarios.infinite_bench import REVISION as INFINITE_BENCH_REVISION
from helmflow.scenarios.openai_mrcr import REVISION as MRCR_REVISION

VOCABULARY = ("river", "stone", "lamp", "orchard", "violet", "harbour", "engine", "winter", "copper", "meadow",
              "signal", "ladder", "marble", "falcon", "garden", "thunder", "velvet", "anchor", "canyon", "ember")


def prose(rng: random.Random, words: int, tag: str = "") -> str:
    """``words`` whitespace-separated words in sentences (a ``tag`` word first, to tell texts apart)."""
    out = [tag] if tag else []
    while len(out) < words:
        n = min(rng.randint(6, 14), words - len(out))
        sentence = [rng.choice(VOCABULARY) for _ in range(n)]
        out += [sentence[0].capitalize(), *sentence[1:-1], sentence[-1] + "."]
    return " ".join(out[:words])


def squad_dev(articles: int, paragraphs: int, words: int = 60, seed: int = 0) -> bytes:
    """SQuAD 2.0's ``dev-v2.0.json``: articles of paragraphs, each with an answerable question (three annotators'
    answers, one of them different) and an unanswerable one (``is_impossible``, ``plausible_answers``)."""
    rng = random.Random(seed)
    data = []
    for a in range(articles):
        paras = []
        for p in range(paragraphs):
            answer = f"answer{a}x{p}"
            context = prose(rng, words, f"Para{a}x{p}") + f" The key is {answer}."
            start = context.index(answer)
            paras.append({"context": context, "qas": [
                {"question": f"What is the key of paragraph {a}-{p}?", "id": f"{a:04d}{p:04d}a",
                 "answers": [{"text": answer, "answer_start": start}, {"text": answer, "answer_start": start},
                             {"text": f"key is {answer}", "answer_start": start - 7}], "is_impossible": False},
                {"plausible_answers": [{"text": answer, "answer_start": start}], "question": f"Who left {a}-{p}?",
                 "id": f"{a:04d}{p:04d}b", "answers": [], "is_impossible": True}]})
        data.append({"title": f"Article_{a}", "paragraphs": paras})
    return json.dumps({"version": "v2.0", "data": data}).encode()


def hotpot_dev(questions: int, words: int = 40, seed: int = 0) -> bytes:
    """HotpotQA's ``hotpot_dev_distractor_v1.json``: questions with ten titled paragraphs (lists of sentences),
    two of them supporting; some paragraphs recur across questions, as distractors do."""
    rng = random.Random(seed)
    pool = [(f"Title {k}", [prose(rng, words // 2, f"T{k}") + " ", prose(rng, words - words // 2) + " "])
            for k in range(questions * 4)]
    rows = []
    for q in range(questions):
        own = [(f"Bridge {q}", [f"Bridge {q} leads to city{q}. ", prose(rng, words)]),
               (f"City {q}", [f"city{q} is where answer{q} lives. ", prose(rng, words)])]
        context = own + rng.sample(pool, 8)
        rng.shuffle(context)
        rows.append({"_id": f"5a{q:022x}", "answer": f"answer{q}", "question": f"Who lives where bridge {q} leads?",
                     "supporting_facts": [[f"Bridge {q}", 0], [f"City {q}", 0]],
                     "context": [[t, list(s)] for t, s in context], "type": "bridge", "level": "hard"})
    return json.dumps(rows).encode()


def infinite_bench_rows(task: str, rows: int, words: int, seed: int = 0) -> bytes:
    """InfiniteBench's ``longbook_choice_eng.jsonl`` (four options, one answer) or ``longbook_sum_eng.jsonl``
    (a summary, no options): a novel of ``words`` words per row."""
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        novel = prose(rng, words, f"Novel{i}")
        if task == "choice":
            options = [f"The {c} of chapter {i}" for c in ("lamp", "river", "stone", "falcon")]
            out.append({"id": i, "context": novel, "input": f"What did the hero carry in book {i}?",
                        "answer": [options[i % 4]], "options": options})
        else:
            out.append({"id": i, "context": novel, "input": "Summarize the book above in about 1,000 words.",
                        "answer": [prose(rng, 30, f"Summary{i}")], "options": []})
    return "".join(json.dumps(r) + "\n" for r in out).encode()


def mrcr_parquet(rows: int, words: int, needles: int = 8, seed: int = 0) -> bytes:
    """OpenAI MRCR's ``<n>needle.parquet``: a conversation of user asks and assistant pieces (about ``words``
    words in all, 37 more each row), ``needles`` of the asks the same, then the ask for one of them after a
    random string."""
    rng = random.Random(seed)
    cols: dict[str, list] = {k: [] for k in ("prompt", "answer", "random_string_to_prepend", "n_needles",
                                             "desired_msg_index", "total_messages", "n_chars", "date_added")}
    for i in range(rows):
        words_i = words + 37 * i  # conversations of different lengths
        pieces = max(2 * needles, words_i // 200)
        messages, needle_at = [], sorted(rng.sample(range(pieces), needles))
        for k in range(pieces):
            topic = "tapirs" if k in needle_at else rng.choice(VOCABULARY)
            messages.append({"role": "user", "content": f"write a poem about {topic}"})
            messages.append({"role": "assistant", "content": prose(rng, max(words_i // pieces - 4, 3), f"Poem{k}")})
        which = rng.randrange(needles)
        key = f"{rng.getrandbits(40):010x}"
        messages.append({"role": "user", "content": f"Prepend {key} to the {which + 1}th poem about tapirs. "
                                                    "Do not include any other text in your response."})
        cols["prompt"].append(json.dumps(messages))
        cols["answer"].append(key + messages[2 * needle_at[which] + 1]["content"])
        cols["random_string_to_prepend"].append(key)
        cols["n_needles"].append(needles)
        cols["desired_msg_index"].append(2 * needle_at[which] + 1)
        cols["total_messages"].append(len(messages))
        cols["n_chars"].append(sum(len(m["content"]) for m in messages))
        cols["date_added"].append("04-12-2025")
    buf = io.BytesIO()
    pq.write_table(pa.table(cols), buf, row_group_size=16)
    return buf.getvalue()


def sources(words: int = 4000, rows: int = 3) -> dict[str, bytes]:
    """Each scenario's source file at its upstream path (host/path, as ``HELMFLOW_SOURCE_HOST`` and a Hub
    endpoint serve them): every prompt of at least about ``words`` words (RULER's: all the paragraphs)."""
    hub = "huggingface.co/datasets"
    return {
        "rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json": squad_dev(6, 4, words=words // 15),
        "curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json": hotpot_dev(6, words=words // 10),
        f"{hub}/xinrongzhang2022/InfiniteBench/resolve/{INFINITE_BENCH_REVISION}/longbook_choice_eng.jsonl":
            infinite_bench_rows("choice", rows, words),
        f"{hub}/xinrongzhang2022/InfiniteBench/resolve/{INFINITE_BENCH_REVISION}/longbook_sum_eng.jsonl":
            infinite_bench_rows("sum", rows, words),
        f"{hub}/openai/mrcr/resolve/{MRCR_REVISION}/8needle.parquet": mrcr_parquet(rows, words),
    }
