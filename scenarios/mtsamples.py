"""MTSamples transcriptions as MedHELM runs them: ``mtsamples_replicate`` (a treatment plan from a transcribed
report; ``mtsamples_replicate_scenario.py``) and ``mtsamples_procedures`` (a plan from an operative note;
``mtsamples_procedures_scenario.py``), both from ``raulista1997/benchmarkdata``.

HELM lists the ``.txt`` files of a folder through the GitHub contents API (``mtsamples_processed`` at commit
``ebc104a4…``; ``mtsample_procedure`` on the default branch, downloaded at commit ``c4c25244…``) and reads each,
stripped. The reference is the rest of the line after ``PLAN:``, else after ``SUMMARY:``, else after
``FINDINGS:`` (a file with none is skipped; the test is on the upper-cased text but the split is not, so a file
with only a lower-case ``Plan:`` fails and HELM skips it too). The input is the text before ``PLAN:``
(replicate) or before each of the three headings (procedures). Generation, 512 tokens, HELM's default stop at a
newline, scored by MedHELM's LLM jury.

This module reads the folder from GitHub's archive of the commit (one zip, pinned by its sha256 at first
fetch), its ``.txt`` files in name order (the contents API's order).
"""

from __future__ import annotations

import io
import zipfile

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation

REPO = "raulista1997/benchmarkdata"
HEADINGS = ("PLAN:", "SUMMARY:", "FINDINGS:")


def reference(text: str) -> str | None:
    """HELM's ``extract_sections``: plan, else summary, else findings (None: the file is skipped)."""
    upper = text.upper()
    found = {}
    for heading in HEADINGS:
        if heading in upper:
            parts = text.split(heading)
            if len(parts) < 2:  # upper-cased only: HELM's split raises and the file is skipped
                return None
            found[heading] = parts[1].split("\n", 1)[0].strip()
    return next((found[h] for h in HEADINGS if found.get(h)), None)


def without(text: str, headings: tuple[str, ...]) -> str:
    for heading in headings:
        if heading in text:
            text = text.split(heading)[0].strip()
    return text


class MTSamples(Scenario):
    COMMIT = ""
    FOLDER = ""
    REMOVED: tuple[str, ...] = ()
    main_metric = ""
    helm_wording = WORDING

    def dataset_revision(self) -> str:
        return self.COMMIT

    @property
    def archive(self) -> str:
        return f"benchmarkdata-{self.COMMIT[:12]}.zip"

    def sources(self) -> list[DataSource]:
        url = f"https://github.com/{REPO}/archive/{self.COMMIT}.zip"
        return [DataSource(filename=self.archive, url=self.web_url(url), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.archive]
        try:
            archive = zipfile.ZipFile(io.BytesIO(read_source(self.name, url)))
        except zipfile.BadZipFile as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a zip: {exc}") from None
        prefix = f"benchmarkdata-{self.COMMIT}/{self.FOLDER}/"
        names = sorted(n for n in archive.namelist() if n.startswith(prefix) and n.endswith(".txt")
                       and "/" not in n[len(prefix):])
        if not names:
            raise ScenarioError(f"scenario {self.name!r}: {url} has no {prefix}*.txt")
        out: list[Instance] = []
        for name in names:
            text = archive.read(name).decode("utf-8", errors="replace").strip()
            ref = reference(text)
            if not ref:
                continue
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=without(text, self.REMOVED)),
                                references=[Reference(text=ref, correct=True)], extra={"file": name[len(prefix):]}))
        return out


@scenario("mtsamples_replicate")
class MTSamplesReplicate(MTSamples):
    VERSION = "1"
    COMMIT = "ebc104a4f96c5b7602242f301e081e9934a23344"
    FOLDER = "mtsamples_processed"
    REMOVED = ("PLAN:",)
    description = "MTSamples: a treatment plan from a transcribed medical report, judged by an LLM jury (MedHELM)."
    main_metric = "mtsamples_replicate_accuracy"
    metrics = ["mtsamples_replicate_accuracy", "efficiency"]
    default_adapter = generation("Given what is known about a patient, write a reasonable treatment plan for them.",
                                 None, "Answer", 512)
    helm_differences = ("mtsamples_replicate: the folder is read from GitHub's zip of HELM's commit (HELM lists it "
                        "through the GitHub API at that commit), pinned by the sha256 recorded at first fetch",)


@scenario("mtsamples_procedures")
class MTSamplesProcedures(MTSamples):
    VERSION = "1"
    COMMIT = "c4c252443fa9c52afb6960f53e51be278639bea2"
    FOLDER = "mtsample_procedure"
    REMOVED = HEADINGS
    description = "MTSamples procedures: a plan from an operative note, judged by an LLM jury (MedHELM)."
    main_metric = "mtsamples_procedures_accuracy"
    metrics = ["mtsamples_procedures_accuracy", "efficiency"]
    default_adapter = generation("Given notes about a patient's procedure, write a reasonable treatment plan for them.",
                                 "Patient Notes", "Answer", 512)
    helm_differences = ("mtsamples_procedures: the folder is read from GitHub's zip of HELM's commit; HELM lists the "
                        "files through the GitHub API on the default branch (so its list can move) and downloads "
                        "them at that commit",)
