"""Fixture files for HELM Classic's own sources, in the upstream shapes, every row written here.

No row comes from the real datasets: passages, questions, comments and answers are generated text. The
shapes are upstream's: BoolQ's JSON Lines ``{question, passage, answer}`` and AllenAI's contrast-set JSON
(``{"data": [<header>, {question, answer: "TRUE"/"FALSE", perturbed_questions: [{perturbed_q, answer}]}]}``),
HellaSwag's JSON Lines (``activity_label, ctx_a, ctx_b, endings, label`` and more), TruthfulQA's seven-column
CSV, and WILDS' CivilComments CSV (an unnamed index column, ``comment_text``, ``toxicity``, ``split`` and the
eight identity columns among others).

:func:`classic_source_tree` writes them, with HELM Lite's shared sources, under ``<root>/<host>/<path>``
(the layout ``$HELMFLOW_SOURCE_HOST`` and ``$HELMFLOW_GITHUB_RAW`` read).
"""

from __future__ import annotations

import io
import json
import random
import tarfile
import zipfile
from pathlib import Path

from helmflow.perturbations import DATA_DIR
from helmflow.scenarios.bbq import COMMIT as BBQ_COMMIT
from helmflow.scenarios.truthful_qa import COMMIT as TRUTHFUL_QA_COMMIT
from tests.support import msmarco_fixtures
from tests.support.lite_fixtures import csv_text, jsonl, source_tree

BOOLQ = "huggingface.co/datasets/stanford-crfm/helm-scenarios/resolve/main/boolq"
CONTRAST = "raw.githubusercontent.com/allenai/contrast-sets/main/BoolQ/boolq_perturbed.json"
HELLASWAG = "raw.githubusercontent.com/rowanz/hellaswag/master/data"
TRUTHFUL_QA = f"raw.githubusercontent.com/sylinrl/TruthfulQA/{TRUTHFUL_QA_COMMIT}/data/v1/TruthfulQA.csv"
QUAC = "s3.amazonaws.com/my89public/quac"
IMDB = "ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
IMDB_ORDER = "worksheets.codalab.org/rest/bundles/0xa75fa6eb8dc24e23a73d3a5ecb674b32/contents/blob/"
IMDB_CONTRAST = "raw.githubusercontent.com/allenai/contrast-sets/main/IMDb/data"
CIVIL = "worksheets.codalab.org/rest/bundles/0x8cd3de0634154aeaad2ee6eb96723c6e/contents/blob/all_data_with_identities.csv"
DATA = Path(__file__).resolve().parents[1] / "data"
TWITTER_AAE = "worksheets.codalab.org/rest/bundles/0x31485f8c37ad481fb9f4e9bf7ccff6e5/contents/blob"
LEGAL_SUPPORT = "docs.google.com/uc"  # HELM's Google Drive URL; the query string (the file id) is not in the path
LSAT = "raw.githubusercontent.com/zhongwanjun/AR-LSAT/main/data"
WIKIFACT = "worksheets.codalab.org/rest/bundles/0x8c3b60eb7c6b462e822a150f194d3b35/contents/blob"
BABI = "www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz"
BLIMP = "github.com/alexwarstadt/blimp/blob/master/BLiMP.zip"  # HELM's URL (?raw=true is its query string)
EM_HOST = "pages.cs.wisc.edu/~anhai/data1/deepmatcher_data"
EM_STATE = "worksheets.codalab.org/rest/bundles/0x4d0a972e99c848d2ab3ecf129bb77d29/contents/blob/"
IMPUTATION = "storage.googleapis.com/crfm-helm-public/source_datasets/scenarios/entity_data_imputation"
PILE = "the-eye.eu/public/AI/pile/test.jsonl.zst"
PILE_INDICES = "raw.githubusercontent.com/EleutherAI/lm_perplexity/main/assets/test_subsample_indices"
EFFICIENCY = "worksheets.codalab.org/rest/bundles/0x17a361bc066b4b0e87d968069759d361/contents/blob"
XSUM_SAMPLED = "storage.googleapis.com/crfm-helm-public/source_datasets/scenarios/summarization_scenario/xsum-sampled.pk"
IDENTITIES = ["male", "female", "LGBTQ", "christian", "muslim", "other_religions", "black", "white"]


# --------------------------------------------------------------------------- BoolQ
def boolq_rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        subject = f"the {split} fixture river {k}"
        # every third passage names a person with a male pronoun, so the fairness perturbations change it
        who = " He said that the river is long." if k % 3 == 0 else ""
        rows.append({"question": f"  is {subject} longer than {rng.randint(2, 90)} KM  ",
                     "title": f"Fixture river {k}", "answer": rng.random() < 0.5,
                     "passage": f"Fixture river {k} flows through a generated valley.{who}"})
    return rows


def boolq_contrast(dev: list[dict], every: int = 2) -> dict:
    """A contrast set for every ``every``-th dev question: two perturbed questions, one flipping the answer,
    one keeping it (HELM drops the latter), and an empty one (dropped too)."""
    items = []
    for k, row in enumerate(dev):
        if k % every:
            continue
        original = "TRUE" if row["answer"] else "FALSE"
        flipped = "FALSE" if row["answer"] else "TRUE"
        items.append({"paragraph": row["passage"], "question": row["question"], "answer": original,
                      "perturbed_questions": [
                          {"perturbed_q": f"is it not the case that {k} flows", "answer": flipped,
                           "perturbation_strategy": "negation"},
                          {"perturbed_q": f"does river {k} still flow", "answer": original,
                           "perturbation_strategy": "paraphrase"},
                          {"perturbed_q": "", "answer": flipped, "perturbation_strategy": "none"}]})
    header = {"paragraph": "", "question": "header row", "answer": "", "perturbed_questions": []}
    return {"data": [header, *items]}


def boolq_files(n_train: int = 12, n_dev: int = 10, seed: int = 5) -> dict[str, bytes]:
    dev = boolq_rows(n_dev, "dev", seed + 1)
    return {f"{BOOLQ}/train.jsonl": jsonl(boolq_rows(n_train, "train", seed)), f"{BOOLQ}/dev.jsonl": jsonl(dev),
            CONTRAST: json.dumps(boolq_contrast(dev)).encode()}


# --------------------------------------------------------------------------- HellaSwag
def hellaswag_rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"ind": k, "activity_label": f"Fixture activity {k % 4}", "ctx_a": f"A person starts {split} task {k}.",
             "ctx_b": "" if k % 5 == 4 else f"then the person picks tool {rng.randint(1, 9)}",
             "ctx": "unused", "split": split, "split_type": "indomain", "source_id": f"fixture~{split}~{k}",
             "endings": [f"and finishes step {j} of task {k}." for j in range(4)], "label": rng.randint(0, 3)}
            for k in range(n)]


def hellaswag_files(n_train: int = 8, n_val: int = 10, seed: int = 6) -> dict[str, bytes]:
    return {f"{HELLASWAG}/hellaswag_train.jsonl": jsonl(hellaswag_rows(n_train, "train", seed)),
            f"{HELLASWAG}/hellaswag_val.jsonl": jsonl(hellaswag_rows(n_val, "val", seed + 1))}


# --------------------------------------------------------------------------- TruthfulQA
TRUTHFUL_QA_HEADER = ["Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers", "Source"]


def truthful_qa_rows(n: int, seed: int = 7) -> list[list[str]]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        best = rng.choice(["Nothing happens", "It depends on the fixture", "Zero fixtures", "Yes, fixture " + str(k)])
        wrong = "; ".join(f"Fixture claim {k}.{j}" for j in range(rng.randint(1, 4)))
        rows.append(["Adversarial", f"Fixture category {k % 3}", f" What happens with fixture {k}? ",
                     best, f"{best}; Another true fixture", wrong + ("; " if k % 4 == 0 else ""),
                     f"https://example.org/fixture/{k}"])
    return rows


def truthful_qa_csv(n: int = 25) -> bytes:
    return csv_text(TRUTHFUL_QA_HEADER, truthful_qa_rows(n))


# --------------------------------------------------------------------------- CivilComments
CIVIL_HEADER = ["", "id", "comment_text", "split", "toxicity", "severe_toxicity", "obscene", "identity_attack",
                "insult", "threat", *IDENTITIES, "identity_any"]


def civil_rows(n: int, seed: int = 8) -> list[list[str]]:
    """``n`` rows: splits cycle train/val/test, every identity column scored in [0, 1] or missing."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        split = ("train", "val", "test")[k % 3]
        toxicity = round(rng.random(), 6)
        scores = ["" if rng.random() < 0.2 else str(round(rng.random(), 6)) for _ in IDENTITIES]
        comment = "NA" if k == 7 else f"Generated comment {k}, about fixture \"{k % 5}\".\nA second line."
        rows.append([str(k), str(100000 + k), comment, split, str(toxicity), "0.0", "0.0", "0.0", "0.0", "0.0",
                     *scores, "1" if any(s and float(s) >= 0.5 for s in scores) else "0"])
    return rows


def civil_csv(n: int = 60) -> bytes:
    return csv_text(CIVIL_HEADER, civil_rows(n))


# --------------------------------------------------------------------------- QuAC
def quac_dialogues(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for k in range(n):
        qas = []
        for j in range(rng.randint(3, 7)):
            unanswerable = rng.random() < 0.25
            text = "CANNOTANSWER" if unanswerable else f"answer {j} of {split} dialogue {k}"
            answers = [{"text": text, "answer_start": 0}] * (2 if j % 2 else 1) + (
                [] if unanswerable else [{"text": f"another answer {j}", "answer_start": 3}])
            qas.append({"question": f"What about point {j} of dialogue {k}?", "id": f"C_{split}_{k}_q#{j}",
                        "orig_answer": {"text": text, "answer_start": 0}, "answers": answers,
                        "followup": "y", "yesno": "x"})
        out.append({"title": f"Fixture page {k}", "background": f"Background of fixture page {k}.",
                    "section_title": f"Section {k}",
                    "paragraphs": [{"context": f"Text of section {k} of the {split} page. CANNOTANSWER",
                                    "id": f"C_{split}_{k}", "qas": qas}]})
    return out


def quac_files(n_train: int = 8, n_val: int = 10, seed: int = 9) -> dict[str, bytes]:
    return {f"{QUAC}/train_v0.2.json": json.dumps({"data": quac_dialogues(n_train, "train", seed)}).encode(),
            f"{QUAC}/val_v0.2.json": json.dumps({"data": quac_dialogues(n_val, "val", seed + 1)}).encode()}


# --------------------------------------------------------------------------- IMDB
def imdb_reviews(n: int, folder: str, label: str) -> dict[str, str]:
    """file name -> review (``<id>_<rating>.txt``, as the archive names them)."""
    return {f"{k}_{(8 if label == 'pos' else 2)}.txt": f"A generated {label} review {k} of the {folder} folder.<br /><br />"
            f"The fixture film {k} was {'great' if label == 'pos' else 'dull'}.\n" for k in range(n)}


def imdb_files(n_train: int = 6, n_test: int = 5) -> dict[str, bytes]:
    """The archive (train/test x pos/neg, plus the unlabelled folder HELM ignores), a pinned order that is not
    the sorted one, and contrast sets for two train reviews (test TSVs) and one test review (dev TSVs)."""
    members: dict[str, bytes] = {}
    order: dict[str, dict[str, list[str]]] = {}
    for split, folder, n in (("train", "train", n_train), ("valid", "test", n_test)):
        order[split] = {}
        for label in ("pos", "neg"):
            reviews = imdb_reviews(n, folder, label)
            for name, text in reviews.items():
                members[f"aclImdb/{folder}/{label}/{name}"] = text.encode()
            order[split][label] = sorted(reviews, reverse=True)
    members["aclImdb/train/unsup/0_0.txt"] = b"unlabelled"
    members["aclImdb/README"] = b"fixture archive"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    def review(folder, label, k):
        return imdb_reviews(k + 1, folder, label)[f"{k}_{8 if label == 'pos' else 2}.txt"].strip()

    def tsv(rows):
        return ("Sentiment\tText\n" + "".join(f"{a}\t{b}\n" for a, b in rows)).encode()

    test_pairs = [(("Positive", review("train", "pos", 1)), ("Negative", "A contrast review: the film 1 was dull.")),
                  (("Negative", review("train", "neg", 2)), ("Positive", "A contrast review: the film 2 was great."))]
    dev_pairs = [(("Negative", review("test", "neg", 0)), ("Positive", "A contrast review: the test film was great."))]
    return {IMDB: buf.getvalue(), IMDB_ORDER: json.dumps(order).encode(),
            f"{IMDB_CONTRAST}/test_original.tsv": tsv([o for o, _ in test_pairs]),
            f"{IMDB_CONTRAST}/test_contrast.tsv": tsv([c for _, c in test_pairs]),
            f"{IMDB_CONTRAST}/dev_original.tsv": tsv([o for o, _ in dev_pairs]),
            f"{IMDB_CONTRAST}/dev_contrast.tsv": tsv([c for _, c in dev_pairs])}


# --------------------------------------------------------------------------- RAFT
RAFT_SETTINGS = "www.dropbox.com/s/a5cyevryzw8rt4f/prompt_construction_settings.json"
RAFT_FIELDS = {"ade_corpus_v2": ["Sentence"], "banking_77": ["Query"],
               "neurips_impact_statement_risks": ["Paper title", "Paper link", "Impact statement"],
               "one_stop_english": ["Article"], "overruling": ["Sentence"],
               "semiconductor_org_types": ["Paper title", "Organization name"],
               "systematic_review_inclusion": ["Title", "Abstract", "Authors", "Journal"],
               "tai_safety_research": ["Title", "Abstract Note", "Url", "Publication Year", "Item Type", "Author",
                                       "Publication Title"],
               "terms_of_service": ["Sentence"], "tweet_eval_hate": ["Tweet"], "twitter_complaints": ["Tweet text"]}


def raft_settings() -> bytes:
    """RAFT's prompt construction settings: two JSON lines, field orderings then instructions."""
    instructions = {subset: f"Fixture instructions for {subset}." for subset in RAFT_FIELDS}
    return (json.dumps(RAFT_FIELDS) + "\n" + json.dumps(instructions) + "\n").encode()


def raft_parquet(subset: str, n: int = 50, seed: int = 11) -> bytes:
    """A subset's labelled train split as the Hub's Parquet conversion writes it: the text fields, ``ID`` and the
    ``Label`` class index, with the ClassLabel names (``Unlabeled`` first) in the ``huggingface`` metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from helmflow.scenarios.raft import TASKS

    rng = random.Random(f"{seed}-{subset}")
    names = ["Unlabeled", *TASKS[subset][1]]
    columns: dict[str, list] = {f: [f"{f} of fixture row {k} ({subset})" for k in range(n)] for f in RAFT_FIELDS[subset]}
    columns["ID"] = list(range(n))
    columns["Label"] = [rng.randint(1, len(names) - 1) for _ in range(n)]
    features = {f: {"dtype": "string", "_type": "Value"} for f in RAFT_FIELDS[subset]}
    features |= {"ID": {"dtype": "int32", "_type": "Value"}, "Label": {"names": names, "_type": "ClassLabel"}}
    table = pa.table(columns).replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def raft_mirror(root: Path, n: int = 50) -> dict[str, str]:
    """The eleven subsets' Parquet files and the prompt settings (read from a mirror only) as ``HELMFLOW_MIRROR_RAFT``
    naming their folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "prompt_construction_settings.json").write_bytes(raft_settings())
    for subset in RAFT_FIELDS:
        (root / f"{subset}-train.parquet").write_bytes(raft_parquet(subset, n))
    return {"HELMFLOW_MIRROR_RAFT": str(root)}


# --------------------------------------------------------------------------- the tree
# --------------------------------------------------------------------------- TwitterAAE
def twitter_aae_csv(demographic: str, n: int = 12) -> bytes:
    """Tweets written for the tests, one CSV row each, no header, CRLF line ends: some quoted (a comma, a quote,
    a line break inside), one with a second field (HELM reads only the first)."""
    rng = random.Random(demographic)
    words = ["finna", "lol", "the", "bus", "late", "again", "tho", "weekend", "vibes", "coffee", "rain", "smh"]
    rows = []
    for k in range(n):
        tweet = " ".join(rng.choice(words) for _ in range(rng.randint(3, 9)))
        if k % 4 == 1:
            tweet = f'"{tweet}, @friend{k} said ""no way"""'
        elif k % 4 == 2:
            tweet = f'"{tweet}\r\nsecond line {k}"'
        elif k % 4 == 3:
            tweet = f"{tweet} #{demographic}{k},extra field"
        rows.append(tweet)
    return ("\r\n".join(rows) + "\r\n").encode()


# --------------------------------------------------------------------------- LegalSupport
def legal_support_rows(split: str, n: int) -> list[dict]:
    """Rows in HELM's shape (``context``, ``citation_a``/``citation_b`` with their ``parenthetical`` and other
    fields, ``label``), every claim and holding made up; one row's two parentheticals are the same text."""
    rng = random.Random(split)
    rows = []
    for k in range(n):
        topic = rng.choice(["a lease", "a fence", "a parking permit", "a bakery licence", "a river easement"])
        a = f"holding that a notice about {topic} must be written ({split} {k})"
        b = f"noting in passing that {topic} may be discussed orally ({split} {k})"
        if k == 2:
            b = a
        rows.append({"context": f"The {split} court held that {topic} dispute {k} turns on written notice.",
                     "citation_a": {"parenthetical": a, "citation": f"Doe v. Roe {k}"},
                     "citation_b": {"parenthetical": b, "citation": f"Roe v. Doe {k}"},
                     "label": rng.choice(["a", "b"])})
    return rows


def legal_support_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for split, n in (("train", 6), ("dev", 3), ("test", 5)):
            z.writestr(f"legal_support/{split}.jsonl", jsonl(legal_support_rows(split, n)).decode())
    return buf.getvalue()


# --------------------------------------------------------------------------- AR-LSAT
LSAT_TAGS = ["simple ordering", "in/out grouping", "grouping (distribution)", "", "determined assignment",
             "relative ordering", "undetermined assignment", "complex ordering"]


def lsat_json(split: str, n_passages: int) -> bytes:
    """AR-LSAT's shape: passages with ``passage`` and ``questions`` (``question``, five ``options``, ``answer``
    letter, ``tags`` whose third is the question type), every game and question made up here."""
    rng = random.Random(split)
    data = []
    for p in range(n_passages):
        people = rng.sample(["Ada", "Ben", "Cy", "Dee", "Eli", "Fay", "Gus"], 5)
        questions = []
        for q in range(3):
            tag = LSAT_TAGS[(p * 3 + q) % len(LSAT_TAGS)]
            questions.append({"id": f"{split}-{p}-{q}", "question": f"Which of the following could be seat {q + 1}?",
                              "options": [f"{name} sits at seat {q + 1}." for name in people],
                              "answer": "ABCDE"[rng.randrange(5)], "tags": ["LSAT", f"game {p}", tag]})
        data.append({"id": f"{split}-{p}", "passage": f"Five friends, {', '.join(people)}, sit in five seats "
                     f"numbered 1 to 5 ({split} game {p}). {people[0]} sits next to {people[1]}.",
                     "questions": questions})
    return json.dumps(data).encode()


def lsat_files() -> dict[str, bytes]:
    return {f"{LSAT}/AR_{name}Data.json": lsat_json(name, n)
            for name, n in (("Training", 3), ("Development", 2), ("Test", 3))}


# --------------------------------------------------------------------------- WikiFact
def wikifact_rows(split: str, n: int) -> list[dict]:
    """WikiFact's shape (``property``, ``template``, nested ``result_names`` and other fields), made-up
    entities; the properties cycle through author (P50), currency (P38) and one no board entry asks for."""
    rows = []
    for k in range(n):
        pid = ["P50", "P38", "P9999"][k % 3]
        names = [[f" Writer {split} {k} "], [f"W. {split} {k}"]] if k % 2 else [f"Writer {split} {k}"]
        rows.append({"subject": f"Book {split} {k}", "property": pid, "object": "Q1",
                     "template": f"The {'author' if pid == 'P50' else 'currency'} of Book {split} {k} is",
                     "result_names": names})
    return rows


def wikifact_files() -> dict[str, bytes]:
    return {f"{WIKIFACT}/{name}.jsonl": jsonl(wikifact_rows(name, n)) for name, n in (("train", 9), ("dev", 6),
                                                                                        ("test", 12))}


# --------------------------------------------------------------------------- bAbI
def babi_text(task: int, split: str) -> str:
    """One file of bAbI's format, made up: two stories, each a few numbered facts and two question lines
    (``<id> <question>\t<answer>\t<supporting ids>``); task 19's answers are paths (``s,w``)."""
    rng = random.Random(f"{task}-{split}")
    rooms = ["kitchen", "garden", "office", "hallway", "cellar"]
    lines = []
    for _ in range(2):
        n = 0
        for who in rng.sample(["Mia", "Tom", "Ana", "Raj"], 2):
            n += 1
            lines.append(f"{n} {who} walked to the {rng.choice(rooms)}.")
            n += 1
            answer = rng.choice(["s,w", "n,e", "e,e"]) if task == 19 else rng.choice(rooms)
            lines.append(f"{n} Where is {who}? \t{answer}\t{n - 1}")
    return "\n".join(lines) + "\n"


def babi_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for task in range(1, 21):
            for split in ("train", "valid", "test"):
                data = babi_text(task, split).encode()
                info = tarfile.TarInfo(f"tasks_1-20_v1-2/en-valid/qa{task}_{split}.txt")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# --------------------------------------------------------------------------- BLiMP
def blimp_zip() -> bytes:
    """``data/<paradigm>.jsonl`` for every paradigm of the four phenomena: minimal pairs written for the tests."""
    from helmflow.scenarios.blimp import PARADIGMS

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for phenomenon, paradigms in PARADIGMS.items():
            for k, paradigm in enumerate(paradigms):
                rows = [{"sentence_good": f"The {n} cats have eaten ({paradigm}).",
                         "sentence_bad": f"The {n} cats have ate ({paradigm}).", "field": "morphology",
                         "linguistics_term": phenomenon, "UID": paradigm, "pairID": str(n)} for n in range(2 + k % 2)]
                z.writestr(f"data/{paradigm}.jsonl", jsonl(rows).decode())
    return buf.getvalue()


# --------------------------------------------------------------------------- entity matching
EM_COLUMNS = {  # DeepMatcher's table columns (after id) for the board's three datasets
    "Beer": ["Beer_Name", "Brew_Factory_Name", "Style", "ABV"],
    "Abt_Buy": ["name", "description", "price"],
    "Dirty_iTunes_Amazon": ["Song_Name", "Artist_Name", "Album_Name", "Genre", "Price", "CopyRight", "Time",
                            "Released"],
}
EM_PATHS = {"Beer": "Structured/Beer", "Abt_Buy": "Textual/Abt-Buy", "Dirty_iTunes_Amazon": "Dirty/iTunes-Amazon"}


def em_tables(dataset: str, n: int = 8) -> dict[str, bytes]:
    """DeepMatcher's five CSVs, every row made up: two tables of ``n`` rows (``id`` first; some empty cells and
    numbers), and pre-blocked pairs ``ltable_id, rtable_id, label``, more non-matches than matches in train, ids
    repeated across pairs."""
    rng = random.Random(dataset)
    columns = EM_COLUMNS[dataset]
    words = ["amber", "lager", "hop", "river", "stone", "north", "gold", "pale", "dark", "brew"]

    def cell(column: str, k: int, side: str) -> str:
        if k % 5 == 3 and column == columns[-1]:
            return ""  # pandas reads an empty cell as NaN: HELM serialises it as "nan"
        if column.lower() in ("price", "abv"):
            return f"{rng.randint(1, 40)}.{rng.randint(0, 99):02d}" if column.lower() == "price" else f"{k + 4}.5 %"
        return f"{rng.choice(words)} {rng.choice(words)} {side}{k}"

    tables = {}
    for side, name in (("a", "tableA.csv"), ("b", "tableB.csv")):
        tables[name] = csv_text(["id", *columns], [[str(k), *(cell(c, k, side) for c in columns)] for k in range(n)])
    for split, count in (("train", 10), ("valid", 5), ("test", 6)):
        rows = [[str(rng.randrange(n)), str(rng.randrange(n)), str(int(k % 3 == 0))] for k in range(count)]
        tables[f"{split}.csv"] = csv_text(["ltable_id", "rtable_id", "label"], rows)
    return tables


def em_zip(dataset: str) -> bytes:
    """The zip as DeepMatcher publishes it: the five CSVs in one top folder (``exp_data/``)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in em_tables(dataset).items():
            z.writestr(f"exp_data/{name}", data)
    return buf.getvalue()


def em_state() -> bytes:
    """HELM's pinned random states' shape: dataset -> [name, 624 words, position, has_gauss, cached_gaussian];
    here states of a seeded numpy generator for Beer and Abt_Buy (Dirty_iTunes_Amazon absent: HELM seeds 0)."""
    import numpy as np

    out = {}
    for dataset, seed in (("Beer", 11), ("Abt_Buy", 12)):
        rs = np.random.RandomState(seed)
        rs.random_sample(seed)  # a state part-way through its block, as after earlier draws
        name, key, pos, has_gauss, cached = rs.get_state()
        out[dataset] = [name, key.tolist(), pos, has_gauss, cached]
    return json.dumps(out).encode()


def em_files() -> dict[str, bytes]:
    return {**{f"{EM_HOST}/{EM_PATHS[d]}/{d.lower()}_exp_data.zip": em_zip(d) for d in EM_COLUMNS},
            EM_STATE: em_state()}


# --------------------------------------------------------------------------- data imputation
def buy_csv(n: int = 24) -> bytes:
    """Abt-Buy's ``Buy.csv`` shape (``id, name, description, manufacturer, price``), made up: some empty
    descriptions (HELM drops those rows), manufacturers and prices (kept, read as NaN)."""
    rng = random.Random("buy")
    makers = ["Acme", "Globex", "Initech", "Umbrella", ""]
    rows = []
    for k in range(n):
        maker = makers[k % len(makers)]
        description = "" if k % 7 == 4 else f"{rng.choice(['compact', 'wireless', 'silver'])} gadget, model {k}"
        price = "" if k % 6 == 5 else f"${rng.randint(5, 400)}.99"
        rows.append([str(2000 + k), f"{maker or 'Generic'} gadget {k}", description, maker, price])
    return csv_text(["id", "name", "description", "manufacturer", "price"], rows)


def buy_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("Abt-Buy/Buy.csv", buy_csv())
        z.writestr("Abt-Buy/Abt.csv", csv_text(["id", "name", "description", "price"], [["1", "x", "y", "z"]]))
    return buf.getvalue()


def fz_arff(n: int = 30) -> str:
    """The Fodors-Zagat restaurants' ARFF shape (``fz.arff``): a header of ``@attribute`` lines, ``@data``, then
    quoted comma-separated rows with the class id last; one row with a missing city (``?`` is not NaN to pandas:
    an empty field is), made up."""
    rng = random.Random("fz")
    cities = ["new york", "los angeles", "atlanta", "san francisco", "las vegas"]
    lines = ["% restaurants", "@relation fz", "", "@attribute name string", "@attribute addr string",
             "@attribute city string", "@attribute phone string", "@attribute type string",
             "@attribute class numeric", "", "@data"]
    for k in range(n):
        city = "" if k == 7 else f"'{rng.choice(cities)}'" if k % 4 == 1 else f'"{rng.choice(cities)}"'
        lines.append(f'"cafe {k}","{k} main st.",{city},"{rng.randint(200, 999)}/555-01{k:02d}",'
                     f'"{rng.choice(["american", "italian", "french"])}",{k}')
        if k == 12:
            lines.append("")
    return "\n".join(lines) + "\n"


def restaurant_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = fz_arff().encode()
        info = tarfile.TarInfo("restaurant/fz.arff")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def imputation_files() -> dict[str, bytes]:
    return {f"{IMPUTATION}/Abt-Buy.zip": buy_zip(), f"{IMPUTATION}/restaurant.tar.gz": restaurant_tar()}


# --------------------------------------------------------------------------- the Pile
PILE_SETS = ["ArXiv", "Github", "Enron Emails", "BookCorpus2", "PubMed Central", "Wikipedia (en)", "FreeLaw"]


def pile_docs(n: int = 42) -> list[dict]:
    """The Pile's JSON Lines shape (``text``, ``meta.pile_set_name``), documents written here: the sets
    interleaved, texts with CRLF and lone CR line ends, quotes, commas and non-ASCII letters."""
    rng = random.Random("pile")
    words = ["theorem", "commit", "meeting", "chapter", "protein", "river", "näive", "“quoted”", "a,b", "x = 1"]
    docs = []
    for k in range(n):
        name = PILE_SETS[k % len(PILE_SETS)]
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 7))) for _ in range(rng.randint(1, 4))]
        end = ["\n", "\r\n", "\r"][k % 3]
        docs.append({"text": f"{name} doc {k}: " + end.join(lines) + ('"' if k % 5 == 0 else ""),
                     "meta": {"pile_set_name": name}})
    return docs


def pile_zst() -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(jsonl(pile_docs()))


def pile_files() -> dict[str, bytes]:
    """The test file and lm_perplexity's index lists (unsorted, one index twice) for the split sets."""
    from helmflow.scenarios.the_pile import SHORT_NAMES, WITHOUT_SPLIT

    out = {PILE: pile_zst()}
    for k, name in enumerate(PILE_SETS):
        short = SHORT_NAMES[name]
        if short not in WITHOUT_SPLIT:
            out[f"{PILE_INDICES}/{short}/group0.json"] = json.dumps([4, 1, k % 3, 4, 5]).encode()
    return out


# --------------------------------------------------------------------------- synthetic efficiency
def efficiency_files() -> dict[str, bytes]:
    """HELM's prompt files for GPT-2's tokenizer and the default sweep, ten each: made-up text of about the
    named number of words, CRLF line ends in some (HELM reads them as text)."""
    from helmflow.scenarios.synthetic_efficiency import NUM_INSTANCES, PROMPT_SWEEP, file_name

    rng = random.Random("efficiency")
    words = ["the", "old", "mill", "stood", "by", "a", "quiet", "stream", "and", "its", "wheel", "turned"]
    out = {}
    for size in PROMPT_SWEEP:
        for k in range(NUM_INSTANCES):
            text = " ".join(rng.choice(words) for _ in range(min(size, 40)))
            if k % 3 == 1:
                text = text.replace(" and ", "\r\nand ", 1)
            out[f"{EFFICIENCY}/{file_name(size, 'huggingface/gpt2', k)}"] = text.encode()
    return out


def classic_files() -> dict[str, bytes]:
    from tests.support.code_fixtures import code_files
    from tests.support.harms_fixtures import harms_files
    from tests.support.instruct_fixtures import github_files as instruct_files
    from tests.support.safety_fixtures import bbq_files
    from tests.support.summarization_fixtures import xsum_sampled_pickle

    return {**boolq_files(), **hellaswag_files(), TRUTHFUL_QA: truthful_qa_csv(), CIVIL: civil_csv(), **quac_files(),
            **imdb_files(), XSUM_SAMPLED: xsum_sampled_pickle(),
            **{f"{TWITTER_AAE}/{d}_tweets.csv": twitter_aae_csv(d) for d in ("aa", "white")},
            LEGAL_SUPPORT: legal_support_zip(), **lsat_files(), **wikifact_files(),
            BABI: babi_archive(), BLIMP: blimp_zip(), **em_files(), **imputation_files(), **pile_files(),
            **code_files(), **efficiency_files(), **harms_files(), **instruct_files(),
            **{f"raw.githubusercontent.com/nyu-mll/BBQ/{BBQ_COMMIT}/data/{n}": d for n, d in bbq_files(95).items()}}


def summarization_mirrors(root: Path) -> dict[str, str]:
    """CNN/DailyMail's and XSum's Parquet files (read from a mirror only) as the ``HELMFLOW_MIRROR_<NAME>``
    variables naming their folders, for ``helmflow mirror`` to copy."""
    from tests.support.summarization_fixtures import write_files

    env = {}
    for name, xsum in (("summarization_cnndm", False), ("summarization_xsum", True)):
        write_files(root / name, xsum)
        env[f"HELMFLOW_MIRROR_{name.upper()}"] = str(root / name)
    return env


def math_mirror(root: Path) -> dict[str, str]:
    """MATH's Parquet conversion (read from a mirror only; few rows) and the HELM source file its official examples
    are read from, as ``HELMFLOW_MIRROR_MATH``."""
    from tests.support.lite_hub_fixtures import math_files, math_helm_source

    root.mkdir(parents=True, exist_ok=True)
    for name, data in math_files(140, 70).items():
        (root / name).write_bytes(data)
    (root / "math_scenario.py").write_text(math_helm_source())
    return {"HELMFLOW_MIRROR_MATH": str(root)}


def classic_source_tree(root: Path) -> Path:
    """HELM Lite's shared sources (small), MS MARCO's and Classic's own, under ``root/<host>/<path>``."""
    source_tree(root, small=True)
    msmarco_fixtures.source_tree(root)
    for path, data in classic_files().items():
        path = path + "index.html" if path.endswith("/") else path  # the local server's answer for a folder URL
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


# --------------------------------------------------------------------------- perturbation assets
ASSETS = "assets"  # $HELMFLOW_ASSETS_URL is <server>/assets: HELM's bucket layout under it


def perturbation_assets(root: Path) -> Path:
    """The three files ``helmflow fetch-assets perturbations`` downloads, in HELM's bucket layout under
    ``root/assets``: an SAE->AAVE mapping of words written for the tests (``dialect_fixture_mapping.json``),
    helmflow's shipped name list (so ``person_name`` behaves as unfetched) and a one-entry synonym table."""
    files = {
        "dialect_perturbation/SAE_to_AAVE_mapping.json": (DATA / "dialect_fixture_mapping.json").read_bytes(),
        "person_name_perturbation/person_names.txt": (DATA_DIR / "person_names.txt").read_bytes(),
        "synonym_perturbation/wordnet_synonyms.json": json.dumps({"good:s": ["dependable"]}).encode(),
    }
    for path, data in files.items():
        (root / ASSETS / path).parent.mkdir(parents=True, exist_ok=True)
        (root / ASSETS / path).write_bytes(data)
    return root


# --------------------------------------------------------------------------- ICE
ICE_TAGGED = ("<ICE-{code}:{name}#1:1:A> <#> The {word} was <O>laughter</O> late again <,> we said\r\n"
              "<$A> <#> <mention>Tuesday</mention> &ersand; the &obrack;old&cbrack; {word} <X>unclear</X> "
              "<->um</-> BBBtag oneRRR <w>hm</w> <quote>fine</quote>\r\n\r\n\r\n  next {word} line é\n")


def ice_text(code: str, name: str, k: int) -> str:
    """One ICE text in its shape: a text code header, ``<#>`` units, speaker marks and the markup HELM strips."""
    return ICE_TAGGED.format(code=code, name=name, word=["bus", "match", "rain", "market"][k % 4])


def _xls(sheets: list[list[list]]) -> bytes:
    import xlwt

    book = xlwt.Workbook()
    for n, rows in enumerate(sheets):
        sheet = book.add_sheet(f"Sheet{n + 1}")
        for i, row in enumerate(rows):
            for j, value in enumerate(row):
                if value is not None:
                    sheet.write(i, j, value)
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def _meta_rows(codes: list[str], genders: list[list[str]], columns: list[int]) -> list[list]:
    """A metadata sheet: header row, then one row per text, its code first and the genders at ``columns``."""
    width = max(columns) + 2
    rows: list[list] = [["Text code", *[f"field {j}" for j in range(1, width)]]]
    for code, gender in zip(codes, genders, strict=True):
        row: list = [code, *[f"v{j}" for j in range(1, width)]]
        for column, g in zip(columns, gender, strict=False):
            row[column] = g
        rows.append(row)
    rows.append([None] * width)  # an empty row: its code is NaN, skipped
    return rows


def ice_subset_files() -> dict[str, dict[str, bytes]]:
    """Each subset's folder as HELM reads it under ``restricted/ice``: corpus texts, and metadata where HELM reads
    gender (Canada's and Hong Kong's .xls, India's and the USA's .hdr), all written here."""
    out: dict[str, dict[str, bytes]] = {}
    for subset, folder, corpus, names in (
            ("can", "ICE-CAN", "Corpus", ["S1A-001.txt", "S2A-002.txt", "W1A-003.txt", "W2B-004.txt"]),
            ("hk", "ICE-HK", "CORPUS", ["S1A-001.txt", "S1A-002.txt", "W1A-010.txt", "W2A-011.txt", "W2A-0110.txt"]),
            ("ind", "ICE India", "Corpus", ["S1A-001.txt", "S2A-005.txt", "W1A-002.txt", "W2C-007.txt"]),
            ("usa", "ICE-USA", "corpus", ["W1A-001.txt", "W2A-002.txt", "W2B-003.txt"])):
        files = {f"{folder}/{corpus}/{n}": ice_text(subset.upper(), n[:-4], k).encode() for k, n in enumerate(names)}
        if subset == "ind":  # one text in Latin-1 (HELM's fallback)
            files[f"{folder}/{corpus}/{names[1]}"] = ice_text("IND", "S2A-005", 1).encode("iso-8859-1")
        codes = [n[:-4] for n in names]
        if subset == "can":
            spoken = _meta_rows(codes[:2], [["M"], ["F"]], [12])
            written = _meta_rows(codes[2:], [["female", "F"], ["male", "F"]], [12, 19])
            files[f"{folder}/Headers/Spoken ICE-CAN metadata.xls"] = _xls([spoken, _meta_rows(codes, [["F"]] * 4, [12])])
            files[f"{folder}/Headers/Written ICE-CAN metadata.xls"] = _xls([written])
        elif subset == "hk":  # every sheet is read; W2A-011 also prefixes W2A-0110
            files[f"{folder}/Headers/HKRecords.xls"] = _xls([_meta_rows(codes[:2], [["Male"], ["f"]], [16]),
                                                            _meta_rows(codes[2:4], [["F"], ["M"]], [16])])
        else:
            for code, genders in zip(codes, [["M"], ["F", "F"], ["M", "F"], ["F"]], strict=False):
                tags = "".join(f"<speaker><gender>{g}</gender><age>30</age></speaker>\n" for g in genders)
                files[f"{folder}/Headers/{code}.hdr"] = f"<text>{code}</text>\n{tags}".encode()
        out[subset] = files
    ea = "ICE-EA/corpus/retagged for wsmith/all east africa"
    out["ea"] = {f"{ea}/{name}": "".join(f"{code}\n" + ice_text("EA", code, k) for k, code in enumerate(codes)).encode()
                 for name, codes in (("conv1k.txt", ["S1A001K", "S1A002K"]), ("BUSLETT.txt", ["W1B003T"]),
                                     ("ppsoc-k.txt", ["W2A004K", "W2A005K"]))}
    return out


def ice_order() -> bytes:
    """HELM's pinned file order's shape (corpus folder -> file names): Hong Kong's and East Africa's unsorted."""
    return json.dumps({
        "restricted/ice/ICE-HK/CORPUS": ["W2A-011.txt", "S1A-002.txt", "W2A-0110.txt", "S1A-001.txt", "W1A-010.txt"],
        "restricted/ice/ICE-EA/corpus/retagged for wsmith/all east africa": ["ppsoc-k.txt", "conv1k.txt",
                                                                              "BUSLETT.txt"],
    }).encode()


def ice_mirror(root: Path) -> dict[str, str]:
    """The ICE folder a user builds: ``ice-<subset>.zip`` of each subset's folder and HELM's pinned file order."""
    root.mkdir(parents=True, exist_ok=True)
    for subset, files in ice_subset_files().items():
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, data in files.items():
                z.writestr(name, data)
        (root / f"ice-{subset}.zip").write_bytes(buf.getvalue())
    (root / "ice_scenario_pinned_file_order.json").write_bytes(ice_order())
    return {"HELMFLOW_MIRROR_ICE": str(root)}


def classic_hub_mirrors(root: Path) -> dict[str, str]:
    """Every Classic source read from a mirror only (the Hub's and the licensed ones), written under ``root``, as
    the ``HELMFLOW_MIRROR_<NAME>`` variables ``helmflow mirror classic`` copies from."""
    from tests.support.harms_fixtures import rtp_mirror
    from tests.support.instruct_fixtures import hub_mirrors

    return {**summarization_mirrors(root), **raft_mirror(root / "raft"), **rtp_mirror(root / "real_toxicity_prompts"),
            **ice_mirror(root / "ice"), **math_mirror(root / "math"), **hub_mirrors(root / "instruct")}
