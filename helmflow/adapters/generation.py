"""The generation adapter: input/output blocks, examples answered with their first correct reference."""

from __future__ import annotations

from helmflow.adapters import adapter, head, input_text
from helmflow.records import AdapterSpec, Instance, Prompt


@adapter("generation", version="1")
def generation(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    def block(example: Instance) -> str:
        answer = example.correct_references[0].text if example.correct_references else ""
        return (
            spec.instance_prefix
            + spec.input_prefix + input_text(example) + spec.input_suffix
            + spec.output_prefix + answer + spec.output_suffix
        )

    query = spec.instance_prefix + spec.input_prefix + input_text(inst) + spec.input_suffix + spec.output_prefix.rstrip()
    return Prompt(
        instance_id=inst.id,
        split=inst.split,
        head=head(spec),
        examples=[block(e) for e in train if e.id != inst.id],
        query=query + spec.global_suffix,
    )
