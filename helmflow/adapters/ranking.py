"""HELM's ``ranking_binary`` (``BinaryRankingAdapter``): ranking reduced to one yes/no question per document.

An instance is a query whose references are the documents to rank. Each reference gets its own request:
``reference_prefix + document + reference_suffix + input_prefix + query + input_suffix + output_prefix``
(right-stripped), after the in-context examples. An example is a train instance with both of its references
(one relevant, one not), each as a block answered ``Yes`` or ``No`` (HELM's ``RANKING_CORRECT_LABEL`` and
``RANKING_WRONG_LABEL``), the blocks joined by ``instance_prefix``. The metric (``metrics/ranking.py``)
orders the documents by the answer and its logprob.
"""

from __future__ import annotations

from helmflow.adapters import LAYOUT_TEXTS, OPTION_TEXTS, AdapterError, adapter, check_text_input
from helmflow.adapters.generation import layout
from helmflow.records import AdapterSpec, ContentPart, Instance, Prompt

CORRECT_LABEL = "Yes"
WRONG_LABEL = "No"


def check_ranking(inst: Instance) -> None:
    """A ranking instance has text documents to rank as its references and a text query."""
    if not inst.references:
        raise AdapterError(f"instance {inst.id!r} has no references: ranking_binary ranks its references")
    if any(ref.image for ref in inst.references):
        raise AdapterError(f"instance {inst.id!r} has image references: ranking_binary ranks text documents")
    check_text_input(inst)


def document_block(spec: AdapterSpec, inst: Instance, index: int, with_answer: bool) -> str:
    ref = inst.references[index]
    text = (spec.reference_prefix + ref.text + spec.reference_suffix
            + spec.input_prefix + (inst.input.text or "") + spec.input_suffix)
    if with_answer:
        return text + spec.output_prefix + (CORRECT_LABEL if ref.correct else WRONG_LABEL) + spec.output_suffix
    return text + spec.output_prefix.rstrip()


@adapter("ranking_binary", version="1", texts=LAYOUT_TEXTS + OPTION_TEXTS, check=check_ranking)
def ranking_binary(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    check_ranking(inst)

    def block(example: Instance, with_answer: bool) -> tuple[str, list[ContentPart]]:
        if with_answer:  # a train instance: every reference, answered
            return spec.instance_prefix.join(document_block(spec, example, i, True)
                                             for i in range(len(example.references))), []
        return document_block(spec, example, 0, False), []

    prompt = layout(spec, inst, train, block)
    variants = [document_block(spec, inst, i, False) + spec.global_suffix for i in range(len(inst.references))]
    return prompt.model_copy(update={"query": variants[0], "variants": variants})
