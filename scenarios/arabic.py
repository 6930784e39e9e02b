"""What HELM Arabic's multiple-choice scenarios share (``arabic_run_specs.py``): the Arabic option letters, the
pattern that finds the letter in an answer, the adapter spec, and reading a Hub Parquet file's rows.

HELM's run spec letters the options ``أ``, ``ب``, ``ج``, ``د``, ``هـ`` (``reference_prefix_characters``; the last is
HEH followed by TATWEEL, two code points), writes ``السؤال:`` before the question and ``الإجابة:`` before the
answer, asks for up to 100 tokens with no stop sequence, and maps the answer to an option through the first
match of ``(أ|ب|ج|د|هـ)`` in it (``output_mapping_pattern``; an answer naming no letter picks no option). Every
entry of HELM's ``run_entries_arabic.conf`` is zero-shot (``max_train_instances=0``) with the ``arabic_mcqa``
output-format instruction before the run spec's own. The instruction sentences here are our own Arabic wording of
HELM's (a prompts file replaces them: ``<scenario>.instructions``); the layout, letters and pattern are HELM's.
Text is never normalised: Arabic combining marks (harakat, shadda, hamza) reach the prompt as the file has them.
"""

from __future__ import annotations

import io
import re
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from helmflow.records import AdapterSpec, GenerationParams
from helmflow.scenarios import ScenarioError
from helmflow.scenarios.base import read_source

LETTERS = ["أ", "ب", "ج", "د", "هـ"]  # HELM's _ARABIC_REFERENCE_PREFIX_CHARACTERS
PATTERN = "(أ|ب|ج|د|هـ)"  # HELM's _ARABIC_OUTPUT_MAPPING_PATTERN
INPUT_PREFIX = "السؤال: "  # HELM's input noun, "the question"
OUTPUT_PREFIX = "الإجابة: "  # HELM's output noun, "the answer"
# our wording of HELM's arabic_mcqa output-format instruction: answer with the option's letter alone
ANSWER_FORMAT = "أجب بحرف الخيار الصحيح وحده، من غير أي كلام آخر."
# our wording of HELM's two instruction lines: "the following question has several options: choose the right
# one" (ArabicMMLU, MadinahQA, Arabic EXAMS, the translated MMLU) and "the following questions have several
# options, with the right answer" (AlGhafa, AraTrust)
ONE_QUESTION = "السؤال الآتي له عدة خيارات، فاختر الخيار الصحيح منها."
QUESTIONS = "فيما يلي أسئلة متعددة الخيارات، ولكل منها إجابة صحيحة واحدة."
ARABIC_WORDING = ("the السؤال:/الإجابة: layout, the Arabic option letters أ ب ج د هـ, the letter pattern, 100 tokens "
                  "and zero-shot prompts follow HELM's run spec and conf; the output-format instruction and the "
                  "instruction line after it are helmflow's own Arabic sentences (HELM's say the same in other "
                  "words); <scenario>.instructions replaces both")


def arabic_mcqa_spec(instructions: str) -> AdapterSpec:
    """HELM's Arabic multiple-choice run spec with the ``arabic_mcqa`` output-format instruction first and
    ``max_train_instances=0`` (every entry of its conf)."""
    return AdapterSpec(
        method="multiple_choice_joint", instructions=f"{ANSWER_FORMAT}\n\n{instructions}",
        input_prefix=INPUT_PREFIX, input_suffix="\n", reference_prefix="A. ", reference_suffix="\n",
        reference_prefix_characters=LETTERS, output_prefix=OUTPUT_PREFIX, output_suffix="\n", instance_prefix="\n",
        output_mapping_pattern=PATTERN, max_train_instances=0,
        generation=GenerationParams(max_tokens=100, temperature=0.0, stop=[], num_outputs=1),
    )


def flat_name(name: str, split: str) -> str:
    """A mirror file name for one subset's split: the subset's letters, digits and ``_`` (``Accounting_(University)``
    gives ``Accounting_University-test.parquet``)."""
    return f"{re.sub(r'[^A-Za-z0-9_-]', '', name)}-{split}.parquet"


def hub_rows(scenario: str, url: str, needed: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """A Hub Parquet file's column names and rows, the ``needed`` columns checked present (their types vary:
    ArabicMMLU's numeric options, AlGhafa's label)."""
    try:
        table = pq.read_table(io.BytesIO(read_source(scenario, url)))
    except pa.ArrowInvalid as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable Parquet file: {exc}") from None
    missing = [c for c in needed if c not in table.schema.names]
    if missing:
        raise ScenarioError(f"scenario {scenario!r}: {url} has no column {missing[0]!r}; it has: "
                            f"{', '.join(table.schema.names) or 'no columns'}")
    return table.schema.names, table.to_pylist()


def text_cell(scenario: str, where: str, row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if not isinstance(value, str):
        raise ScenarioError(f"scenario {scenario!r}: {where}: {column!r} is {value!r}, expected text")
    return value


def context_and_question(scenario: str, where: str, row: dict[str, Any]) -> str:
    """ArabicMMLU's and MadinahQA's input: the reading passage (``Context``), a blank line and the ``Question``
    when the row has a non-blank passage, else the question alone (HELM's rule, as ArabicMMLU's own code)."""
    question = text_cell(scenario, where, row, "Question")
    context = row.get("Context")
    return f"{context}\n\n{question}" if context and isinstance(context, str) and context.strip() else question


def numbered_options(scenario: str, where: str, row: dict[str, Any], stringify: bool) -> list[tuple[str, bool]]:
    """``Option 1`` to ``Option 5`` with the keyed one (``Answer Key``, a letter) marked, as HELM reads them: an
    option whose cell is empty, null or zero is left out; ``stringify``: numeric cells become Python's ``str``
    of the number (ArabicMMLU's Math (Primary School) options are floats)."""
    key = row.get("Answer Key")
    if not isinstance(key, str) or len(key) != 1:
        raise ScenarioError(f"scenario {scenario!r}: {where}: 'Answer Key' is {key!r}, expected one letter")
    correct = ord(key) - ord("A") + 1
    out = []
    for index in range(1, 6):
        value = row.get(f"Option {index}")
        if not value:
            continue
        if not stringify and not isinstance(value, str):
            raise ScenarioError(f"scenario {scenario!r}: {where}: 'Option {index}' is {value!r}, expected text")
        out.append((str(value), index == correct))
    if not any(right for _, right in out):
        raise ScenarioError(f"scenario {scenario!r}: {where}: 'Answer Key' {key!r} names none of its options")
    return out
