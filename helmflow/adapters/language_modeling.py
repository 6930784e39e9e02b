"""HELM's ``language_modeling`` (``LanguageModelingAdapter``): the instance's text is scored whole, nothing is
generated and no examples are shown. The request builder cuts the text into windows of the deployment's context
window (its tokenizer's tokens) and echoes each with logprobs; ``global_prefix`` is the conditioning prefix HELM
takes from the model's tokenizer (e.g. ``<|endoftext|>`` for GPT-2's), empty by default. The metric
``bits_per_byte`` (``metrics/language_modeling.py``) reads the scored tokens."""

from __future__ import annotations

from helmflow.adapters import AdapterError, adapter, input_text
from helmflow.records import AdapterSpec, Instance, Prompt


def check_document(inst: Instance) -> None:
    if inst.input.text is None or inst.input.parts is not None:
        raise AdapterError(f"instance {inst.id!r}: language_modeling scores a text input")
    if not inst.input.text:
        raise AdapterError(f"instance {inst.id!r} has an empty text: language_modeling has nothing to score")


@adapter("language_modeling", version="1", few_shot=False, texts=("global_prefix",), check=check_document)
def language_modeling(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    check_document(inst)
    return Prompt(instance_id=inst.id, split=inst.split, head=spec.global_prefix, document=input_text(inst))
