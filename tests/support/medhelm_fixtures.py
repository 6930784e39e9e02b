"""MedHELM fixtures, written here in each dataset's raw schema (never real rows): MedCalc-Bench's Parquet
test split, MEDEC's test CSV, PubMedQA's ori_pqal.json, EHRSQL's eICU JSON files with its schema file and a
tiny sqlite database. Markers ``[ans:...]`` in a task's text tell the dev-server policy what to answer."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MEDCALC_SCHEMA = pa.schema([
    ("Row Number", pa.int64()), ("Calculator ID", pa.int64()), ("Calculator Name", pa.string()),
    ("Category", pa.string()), ("Output Type", pa.string()), ("Note ID", pa.string()), ("Note Type", pa.string()),
    ("Patient Note", pa.string()), ("Question", pa.string()), ("Relevant Entities", pa.string()),
    ("Ground Truth Answer", pa.string()), ("Lower Limit", pa.string()), ("Upper Limit", pa.string()),
    ("Ground Truth Explanation", pa.string()),
])  # fmt: skip

# (category, output type, answer, lower, upper)
MEDCALC_ITEMS = [
    ("risk", "integer", "3", "3", "3"),
    ("physical", "decimal", "24.5", "23.275", "25.725"),
    ("lab", "decimal", "140.0", "133.0", "147.0"),
    ("date", "date", "03/15/2024", "03/15/2024", "03/15/2024"),
    ("date", "weeks and days", "('14 weeks', '2 days')", "('14 weeks', '2 days')", "('14 weeks', '2 days')"),
    ("dosage conversion", "decimal", "7.5", "7.125", "7.875"),
]


def medcalc_parquet(items=MEDCALC_ITEMS) -> bytes:
    rows = [{
        "Row Number": 100 + k, "Calculator ID": k, "Calculator Name": f"Fixture calculator {k}", "Category": cat,
        "Output Type": kind, "Note ID": f"note-{k}", "Note Type": "Fixture",
        "Patient Note": f"Fixture patient {k} is a 50-year-old with fixture findings. [ans:{answer}]",
        "Question": f"What is fixture value {k}?", "Relevant Entities": "{}",
        "Ground Truth Answer": answer, "Lower Limit": lower, "Upper Limit": upper,
        "Ground Truth Explanation": "Fixture explanation.",
    } for k, (cat, kind, answer, lower, upper) in enumerate(items)]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=MEDCALC_SCHEMA), buf)
    return buf.getvalue()


MEDEC_COLUMNS = ["Text ID", "Text", "Sentences", "Error Flag", "Error Type", "Error Sentence ID",
                 "Error Sentence", "Corrected Sentence", "Corrected Text"]


def medec_csv() -> bytes:
    """Four notes: two correct, two with an error (sentence 1 and sentence 2); one row without Sentences."""
    def note(k: int, answer: str) -> str:
        return f"0 Fixture patient {k} presents with a cough. [ans:{answer}]\n1 Fixture drug A was given.\n2 Fixture follow-up in a week."

    rows = [
        {"Text ID": "ms-test-0", "Sentences": note(0, "CORRECT"), "Error Flag": "0", "Error Sentence ID": "-1",
         "Corrected Sentence": "NA"},
        {"Text ID": "ms-test-1", "Sentences": note(1, "1 Fixture drug B was given."), "Error Flag": "1",
         "Error Type": "pharmacotherapy", "Error Sentence ID": "1", "Error Sentence": "Fixture drug A was given.",
         "Corrected Sentence": "Fixture drug B was given."},
        {"Text ID": "ms-test-2", "Sentences": note(2, "CORRECT"), "Error Flag": "1", "Error Type": "diagnosis",
         "Error Sentence ID": "2", "Error Sentence": "Fixture follow-up in a week.",
         "Corrected Sentence": "Fixture follow-up in a day."},
        {"Text ID": "ms-test-3", "Sentences": note(3, "CORRECT"), "Error Flag": "0",
         "Error Sentence ID": "-1", "Corrected Sentence": "NA"},
        {"Text ID": "ms-test-4", "Sentences": "", "Error Flag": "0", "Error Sentence ID": "-1", "Corrected Sentence": "NA"},
    ]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=MEDEC_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: row.get(c, "") for c in MEDEC_COLUMNS})
    return buf.getvalue().encode()


def pubmed_json(answers=("yes", "no", "maybe", "yes")) -> bytes:
    """ori_pqal.json: an object keyed by PubMed id; the model is told (by marker) to answer A (yes) each time."""
    out = {}
    for k, answer in enumerate(answers):
        out[str(21645374 + k)] = {
            "QUESTION": f"Does fixture treatment {k} help? [ans:A]",
            "CONTEXTS": [f"Fixture background {k}.", f"Fixture results {k}."],
            "LABELS": ["BACKGROUND", "RESULTS"], "MESHES": ["Fixture"], "YEAR": "2020",
            "reasoning_required_pred": answer, "reasoning_free_pred": answer, "final_decision": answer,
            "LONG_ANSWER": f"Fixture conclusion {k}.",
        }
    return json.dumps(out).encode()


EICU_SQL = """DROP TABLE IF EXISTS patient;
CREATE TABLE patient
(
    uniquepid VARCHAR(10) NOT NULL,
    patientunitstayid INT NOT NULL PRIMARY KEY,
    gender VARCHAR(25) NOT NULL,
    age VARCHAR(10) NOT NULL
) ;

DROP TABLE IF EXISTS lab;
CREATE TABLE lab
(
    labid INT NOT NULL PRIMARY KEY,
    patientunitstayid INT NOT NULL,
    labname VARCHAR(256) NOT NULL,
    labresult NUMERIC(11,4) NOT NULL
) ;
"""
PATIENTS = [("002-1", 1, "female", "70"), ("002-2", 2, "male", "45"), ("002-3", 3, "female", "33")]
LABS = [(1, 1, "sodium", 140.0), (2, 1, "potassium", 4.1), (3, 2, "sodium", 135.0)]


def eicu_sqlite() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "eicu.sqlite"
        conn = sqlite3.connect(path)
        conn.executescript(EICU_SQL)
        conn.executemany("INSERT INTO patient VALUES (?, ?, ?, ?)", PATIENTS)
        conn.executemany("INSERT INTO lab VALUES (?, ?, ?, ?)", LABS)
        conn.commit()
        conn.close()
        return path.read_bytes()


GOLD_FEMALE = "SELECT uniquepid FROM patient WHERE gender = 'female'"
GOLD_SODIUM = "SELECT labresult FROM lab WHERE patientunitstayid = 1 AND labname = 'sodium'"
# (split file, question, gold query, value, is_impossible, the model's answer)
EHRSQL_ENTRIES = {
    "train": [("Fixture training question?", "SELECT COUNT(*) FROM patient", {}, False, "")],
    "valid": [
        ("Which patients are female?", GOLD_FEMALE, {}, False,
         "<sql>SELECT uniquepid FROM patient WHERE gender = 'female' ORDER BY uniquepid DESC</sql>"),
        ("What was patient 1's sodium?", GOLD_SODIUM, {"patientunitstayid": "1"}, False,
         "```sql\nSELECT labresult FROM lab WHERE labname = 'sodium'\n```"),
    ],
    "test": [
        ("What is patient 9's favourite colour?", "null", {}, True, ""),
        ("How many patients are there?", "SELECT COUNT(*) FROM patient", {}, False, "DROP TABLE patient;"),
        ("Which patients are male?", "SELECT uniquepid FROM patient WHERE gender = 'male'", {}, False,
         "SELECT uniquepid FROM patient WHERE gender = 'male'"),
    ],
}


def ehrsql_json(split: str) -> bytes:
    return json.dumps([{
        "db_id": "eicu", "id": f"{split}-{k}", "question": f"{q} [ans:{k}:{split}]", "template": "fixture",
        "query": gold, "value": value, "is_impossible": impossible,
    } for k, (q, gold, value, impossible, _) in enumerate(EHRSQL_ENTRIES[split])]).encode()


def ehrsql_answer(prompt: str) -> str | None:
    """The scripted model's SQL for an EHRSQL prompt (by its ``[ans:k:split]`` marker), None for other prompts."""
    import re

    found = re.search(r"\[ans:(\d+):(\w+)\]", prompt)
    if not found:
        return None
    return EHRSQL_ENTRIES[found.group(2)][int(found.group(1))][4]


def ehrsql_files() -> dict[str, bytes]:
    return {**{f"{s}.json": ehrsql_json(s) for s in EHRSQL_ENTRIES}, "eicu.sql": EICU_SQL.encode(),
            "eicu.sqlite": eicu_sqlite()}


# --------------------------------------------------------------------------- more multiple choice
HEADQA_SCHEMA = pa.schema([
    ("name", pa.string()), ("year", pa.string()), ("category", pa.string()), ("qid", pa.int64()),
    ("qtext", pa.string()), ("ra", pa.int64()), ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
    ("answers", pa.list_(pa.struct([("aid", pa.int64()), ("atext", pa.string())]))),
])  # fmt: skip


def headqa_parquet() -> bytes:
    """Four questions (one with an image, which HELM skips); the model is told to answer B, right on two."""
    rows = [{
        "name": "Cuaderno_2013_1_B", "year": "2013", "category": "biology" if k % 2 else "medicine", "qid": k + 1,
        "qtext": f"Fixture HEAD-QA question {k}? [ans:B]", "ra": ra,
        "image": {"bytes": b"\x89PNG fixture", "path": "q.png"} if k == 2 else None,
        "answers": [{"aid": a, "atext": f"fixture option {a} of {k}"} for a in (1, 2, 3, 4)],
    } for k, ra in enumerate((2, 3, 2, 1))]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=HEADQA_SCHEMA), buf)
    return buf.getvalue()


def medbullets_csv() -> bytes:
    """Three vignettes (one row without answer_idx, which HELM skips); the model answers C, right once of two."""
    rows = [("A fixture 60-year-old presents with chest pain. [ans:C]", "C"),
            ("A fixture 30-year-old presents with a rash. [ans:C]", "E"), ("Fixture row without an answer.", "")]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["question", "answer", "opa", "opb", "opc", "opd", "ope", "answer_idx", "link", "explanation"])
    for k, (question, idx) in enumerate(rows):
        writer.writerow([question, "fixture", *(f"fixture choice {c} {k}" for c in "ABCDE"), idx, "", "Fixture."])
    return buf.getvalue().encode()


def medmcqa_dev_jsonl() -> bytes:
    """Four dev questions (JSON Lines in a .json file); the model answers A, right on the two whose cop is 1."""
    rows = [{"id": f"fixture-{k}", "question": f"Fixture MedMCQA question {k}?", "opa": f"a{k}", "opb": f"b{k}",
             "opc": f"c{k}", "opd": f"d{k}", "cop": cop, "choice_type": "single", "exp": "Fixture.",
             "subject_name": "Fixture", "topic_name": None} for k, cop in enumerate((1, 2, 1, 4))]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


# --------------------------------------------------------------------------- judged generation
# Markers: [ans:<text>] is the model's answer ([ans:] an empty one); [judge-x:a,c,k] the accuracy, completeness
# and clarity scores judge-x gives; a judge with no marker replies with prose that does not parse.
MEDICATION_ROWS = [
    ("How should I take fixture drug A? [ans:With food.] [judge-a:5,4,4] [judge-b:3,3,3]", "With food."),
    ("Can I drink alcohol with fixture drug B? [ans:] [judge-a:5,5,5]", "Better not."),
    ("What is fixture drug C for?", None),  # no answer: HELM drops the row
    ("How often do I take fixture drug D? [ans:Twice daily.] [judge-a:2,2,2] [judge-c:4,4,4]", "Twice a day."),
]


def medication_xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Question", "Focus (Drug)", "Question Type", "Answer", "Section Title", "URL"])
    for question, answer in MEDICATION_ROWS:
        sheet.append([question, "fixture drug", "usage", answer, "Fixture", "https://example.org/fixture"])
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def src_tgt(pairs: list[tuple[str, str]]) -> bytes:
    return json.dumps({"data": [{"src": s, "tgt": t} for s, t in pairs]}).encode()


MED_DIALOG = {
    "healthcaremagic": [("Patient: fixture cough for a week. Doctor: fixture advice. [ans:Fixture summary.] "
                         "[judge-a:4,4,4] [judge-b:4,4,4] [judge-c:4,4,4]", "A patient asks about a cough."),
                        ("Patient: fixture headache. Doctor: fixture advice. [ans:Another summary.] [judge-a:1,2,3]",
                         "A patient asks about a headache.")],
    "icliniq": [("Patient: fixture rash. Doctor: fixture advice. [ans:Summary.] [judge-a:5,5,5] [judge-b:5,5,5] "
                 "[judge-c:5,5,5]", "A patient asks about a rash.")],
}
ACI_FILES = {
    "train_full.json": [("[doctor] fixture training visit", "FIXTURE TRAINING NOTE")],
    "clinicalnlp_taskB_test1_full.json": [("[doctor] fixture visit one [ans:] [judge-a:5,5,5]", "FIXTURE NOTE ONE")],
    "clef_taskC_test3_full.json": [("[doctor] fixture visit three [ans:Note.] [judge-a:3,3,3] [judge-b:3,3,3] "
                                    "[judge-c:3,3,3]", "FIXTURE NOTE THREE")],
    "clinicalnlp_taskC_test2_full.json": [("[doctor] fixture visit two [ans:Note two.]", "FIXTURE NOTE TWO")],
}


# --------------------------------------------------------------------------- the dev server policy
_JUDGE_MARK = r"\[{judge}:(\d),(\d),(\d)\]"


def judge_reply(judge: str, prompt: str) -> str:
    import re

    found = re.search(_JUDGE_MARK.format(judge=re.escape(judge)), prompt)
    if not found:
        return "The response seems reasonable overall; I would not change much."
    a, c, k = found.groups()
    return (f'{{"accuracy": {{"score": {a}, "explanation": "fixture"}}, "completeness": {{"score": {c}, '
            f'"explanation": "fixture"}}, "clarity": {{"score": {k}, "explanation": "fixture"}}}}')


def policy(prompt: str, payload: dict) -> str:
    """The scripted model and judges: a judge (model ``judge-*``) replies from its marker; the model gives
    EHRSQL's scripted SQL, else the ``[ans:...]`` marker's text, else ``A``."""
    import re

    model = str(payload.get("model", ""))
    if model.startswith("judge"):
        return judge_reply(model, prompt)
    sql = ehrsql_answer(prompt)
    if sql is not None:
        return sql
    found = re.search(r"\[ans:(.*?)\]", prompt)
    return found.group(1) if found else "A"


# --------------------------------------------------------------------------- credential-gated: MIMIC-IV billing codes
BILLING_ROWS = [("Discharge summary: fixture hypertension and diabetes. [ans:**I10**, E11.9, and Z79.4.]",
                 ["I10", "E11.9", "N18.3"]),
                ("Discharge summary: fixture pneumonia. [ans:J18.9]", ["J18.9"])]


def billing_feather() -> bytes:
    import pyarrow.feather as feather

    table = pa.table({"text": [t for t, _ in BILLING_ROWS], "target": [c for _, c in BILLING_ROWS],
                      "hadm_id": [20000001, 20000002]})
    buf = io.BytesIO()
    feather.write_feather(table, buf)
    return buf.getvalue()


# --------------------------------------------------------------------------- more research assistance
def medhallu_parquet() -> bytes:
    """Two rows, so four instances (ground truth 0, hallucinated 1); the model always answers 0."""
    rows = [{"Question": f"Does fixture gene {k} matter? [ans:0]", "Knowledge": f"Fixture abstract {k}.",
             "Ground Truth": f"Yes, fixture gene {k} matters.", "Hallucinated Answer": f"No, fixture gene {k} is fake.",
             "Category of Hallucination": "Fixture", "Difficulty Level": "easy"} for k in range(2)]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def race_docx() -> bytes:
    """The supplement's shape: ``Run k: question`` paragraphs, each followed by response paragraphs, some in red.
    The third run repeats the first (same question and response): one instance."""
    import docx
    from docx.shared import RGBColor

    document = docx.Document()
    document.add_paragraph("Supplementary fixture table")
    for k, (question, lines, red) in enumerate([
        ("How do I calculate eGFR? [ans:A]", ["Use the fixture formula.", "Adjust by race."], True),
        ("What is the normal lung capacity? [ans:A]", ["It depends on fixture factors."], False),
        ("How do I calculate eGFR? [ans:A]", ["Use the fixture formula.", "Adjust by race."], True),
    ]):
        document.add_paragraph(f"Run {k + 1}: {question}")
        for n, line in enumerate(lines):
            run = document.add_paragraph().add_run(line)
            if red and n == len(lines) - 1:
                run.font.color.rgb = RGBColor(0xFF, 0x00, 0x00)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def mediqa_xml() -> bytes:
    """Two questions; the reference is the answer ranked 1 (the second one listed for the first question)."""
    def answer(aid: str, rank: int, text: str) -> str:
        return (f'<Answer AID="{aid}" SystemRank="{rank}" ReferenceRank="{rank}" ReferenceScore="{4 - rank}">'
                f"<AnswerURL>https://example.org/{aid}</AnswerURL><AnswerText>{text}</AnswerText></Answer>")

    questions = [
        ("1", "What helps a fixture hangover? [ans:Drink water.] [judge-a:4,4,4] [judge-b:2,2,2]",
         [answer("1_Answer1", 2, "Sleep it off."), answer("1_Answer2", 1, "Water and rest.")]),
        ("2", "Is fixture tiredness serious? [ans:Rest.] [judge-c:5,5,5]", [answer("2_Answer1", 1, "Usually not.")]),
    ]
    body = "".join(f'<Question QID="{qid}"><QuestionText>{text}</QuestionText><AnswerList>{"".join(answers)}'
                   "</AnswerList></Question>" for qid, text, answers in questions)
    return f'<?xml version="1.0" encoding="UTF-8"?><MEDIQA2019-Task3-QA>{body}</MEDIQA2019-Task3-QA>'.encode()


# --------------------------------------------------------------------------- MTSamples (GitHub's zip of a commit)
MTSAMPLES_REPLICATE = {
    "001_cough.txt": "HISTORY: fixture patient with a cough. [ans:] [judge-a:4,4,4]\nPLAN: Rest and fluids.\nSIGNED.",
    "002_lower.txt": "HISTORY: fixture patient.\nPlan: only a lower-case heading, which HELM fails on and skips.",
    "003_rash.txt": "HISTORY: fixture rash. [ans:Cream.] [judge-b:2,2,2]\nFINDINGS: A red rash.\n",
    "004_none.txt": "HISTORY: no heading at all.",
    "notes.md": "not a transcription",
}
MTSAMPLES_PROCEDURES = {
    "knee.txt": "PROCEDURE: fixture knee arthroscopy. [ans:Physio.] [judge-a:5,5,5]\nSUMMARY: Surgery went well.\n"
                "FINDINGS: Torn meniscus.",
}


def mtsamples_zip(commit: str, folder: str, files: dict[str, str]) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"benchmarkdata-{commit}/README.md", "fixture")
        z.writestr(f"benchmarkdata-{commit}/eicu.sqlite", b"not read")
        for name, text in files.items():
            z.writestr(f"benchmarkdata-{commit}/{folder}/{name}", text)
    return buf.getvalue()


# --------------------------------------------------------------------------- a configured benchmark's stub jury
def configured_policy(prompt: str, payload: dict) -> str:
    """A judge (model ``judge-*``) scores the criteria of the prompt's ``<rubric_criteria>`` block, in order,
    from its ``[judge-x:s1,s2,...]`` marker (prose without one); the model answers its ``[ans:...]`` marker."""
    import re

    model = str(payload.get("model", ""))
    if model.startswith("judge"):
        found = re.search(rf"\[{re.escape(model)}:([\d,]+)\]", prompt)
        block = re.search(r"<rubric_criteria>\s*(\{.*?\})\s*</rubric_criteria>", prompt, re.DOTALL)
        if not found or not block:
            return "A fine answer, I think."
        criteria = list(json.loads(block.group(1)))
        scores = found.group(1).split(",")
        return json.dumps({c: {"score": int(s), "explanation": "fixture"} for c, s in zip(criteria, scores, strict=True)})
    found = re.search(r"\[ans:(.*?)\]", prompt)
    return found.group(1) if found else "A"


# --------------------------------------------------------------------------- credential-gated: EHRSHOT (MEDS)
def _ts(day: str | None):
    import datetime

    return None if day is None else datetime.datetime.fromisoformat(day)


#: MEDS events (subject_id, time, code), in file order: not sorted, two events at one time, one without a time
EHRSHOT_EVENTS = [(2, "2019-05-05", "RxNorm/FIXTURE-D"), (1, "2020-06-01", "ICD10CM/FIXTURE-C"),
                  (1, "2020-01-01", "SNOMED/FIXTURE-A"), (1, "2020-01-01", "LOINC/FIXTURE-B"),
                  (1, None, "Gender/FIXTURE"), (1, "2021-01-01", "ICD10CM/FIXTURE-LATE"),
                  (4, "2018-01-01", "SNOMED/FIXTURE-UNLABELLED")]
#: labels (subject_id, prediction_time, boolean_value) in file order (not sorted); patient 3 has no events
EHRSHOT_LABELS = [(2, "2020-01-01", True), (1, "2020-07-01", False), (1, "2020-01-01", True), (3, "2020-01-01", False)]


def ehrshot_release(root, subjects=("guo_readmission",), labels=EHRSHOT_LABELS) -> None:
    """An EHRSHOT MEDS release folder: data/data.parquet, labels/<task>/labels.parquet, metadata/subject_splits."""
    import pyarrow.parquet as pq

    events = pa.table({
        "subject_id": pa.array([s for s, _, _ in EHRSHOT_EVENTS], pa.int64()),
        "time": pa.array([_ts(t) for _, t, _ in EHRSHOT_EVENTS], pa.timestamp("us")),
        "code": pa.array([c for _, _, c in EHRSHOT_EVENTS], pa.string()),
        "numeric_value": pa.array([None, None, 1.5, None, None, None, None], pa.float32()),
        "text_value": pa.array([None] * len(EHRSHOT_EVENTS), pa.string()),
    })
    (root / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(events, root / "data" / "data.parquet")
    (root / "metadata").mkdir(exist_ok=True)
    pq.write_table(pa.table({"subject_id": pa.array([1, 2, 3, 4], pa.int64()),
                             "split": ["train", "tuning", "held_out", "train"]}),
                   root / "metadata" / "subject_splits.parquet")
    for subject in subjects:
        (root / "labels" / subject).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({
            "subject_id": pa.array([s for s, _, _ in labels], pa.int64()),
            "prediction_time": pa.array([_ts(t) for _, t, _ in labels], pa.timestamp("us")),
            "boolean_value": pa.array([v for _, _, v in labels], pa.bool_()),
            "integer_value": pa.array([None] * len(labels), pa.int64()),
            "float_value": pa.array([None] * len(labels), pa.float64()),
            "categorical_value": pa.array([None] * len(labels), pa.string()),
        }), root / "labels" / subject / "labels.parquet")


# --------------------------------------------------------------------------- credential-gated: MedAlign
MEDALIGN_EHR = {  # person_id -> an EHR file's text (Windows newlines: HELM reads them as \n)
    101: '<record person_id="101">\r\n<visit date="2020-01-01">Fixture visit: aspirin started.</visit>\r\n</record>\r\n',
    102: "<record person_id=\"102\">\n" + "".join(f"<event n=\"{i}\">Fixture event {i} café.</event>\n"
                                                   for i in range(60)) + "</record>\n",
}
MEDALIGN_INSTRUCTIONS = [  # a row per reviewed model response: instruction 1 twice; 3 has no Annotator_1 response
    ("instruction_id", "question", "person_id", "model_name", "model_response", "is_selected_ehr"),
    (1, "Which fixture medicine was started? [ans:Aspirin.]", 101, "fixture-a", "Aspirin.", "yes"),
    (1, "Which fixture medicine was started? [ans:Aspirin.]", 101, "fixture-b", "None.", "yes"),
    (2, "Summarise the fixture events.", 102, "fixture-a", "Many events.", "no"),
    (3, "Unanswered fixture question.", 101, "fixture-a", "-", "yes"),
]
MEDALIGN_RESPONSES = [  # the stub judges read their scores from the references' markers
    ("instruction_id", "annotator_num", "clinician_response", "evidence"),
    (2, "Annotator_1", "Sixty fixture events. [judge-a:2,2,2]", "all"),
    (1, "Annotator_2", "Aspirin (second reader).", "visit"),
    (1, "Annotator_1", "Aspirin. [judge-a:5,5,5] [judge-b:3,3,3]", "visit"),
]


def medalign_release(root) -> None:
    def tsv(rows) -> str:
        return "".join("\t".join(str(v) for v in row) + "\n" for row in rows)

    (root / "medalign_ehr_xml").mkdir(parents=True, exist_ok=True)
    for person, text in MEDALIGN_EHR.items():
        (root / "medalign_ehr_xml" / f"{person}.xml").write_bytes(text.encode("utf-8"))
    (root / "clinician-reviewed-model-responses.tsv").write_text(tsv(MEDALIGN_INSTRUCTIONS))
    (root / "clinician-instruction-responses.tsv").write_text(tsv(MEDALIGN_RESPONSES))
