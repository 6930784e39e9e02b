"""The chat adapter: requests as messages (HELM's ``chat`` passes ``Input.messages`` through).

A chat instance's messages are sent as they are. A text instance becomes one user turn
(``input_prefix + text + input_suffix``, stripped). Instructions become a system message, and
few-shot examples become user/assistant turn pairs before the instance, so a chat model sees the
same demonstrations a completion model would.
"""

from __future__ import annotations

from helmflow.adapters import adapter, input_text
from helmflow.adapters.generation import first_correct
from helmflow.records import AdapterSpec, ChatMessage, Instance, Prompt


def user_turns(spec: AdapterSpec, inst: Instance) -> list[ChatMessage]:
    if inst.input.messages is not None:
        return list(inst.input.messages)
    text = (spec.global_prefix + spec.input_prefix + input_text(inst) + spec.input_suffix + spec.global_suffix).strip()
    return [ChatMessage(role="user", content=text)]


@adapter("chat", version="1", texts=("global_prefix", "instructions", "input_prefix", "input_suffix", "global_suffix"))
def chat(spec: AdapterSpec, inst: Instance, train: list[Instance]) -> Prompt:
    messages: list[ChatMessage] = []
    if spec.instructions:
        messages.append(ChatMessage(role="system", content=spec.instructions))
    for example in train:
        if example.id == inst.id:
            continue
        messages += user_turns(spec, example)
        messages.append(ChatMessage(role="assistant", content=first_correct(example)))
    messages += user_turns(spec, inst)
    return Prompt(instance_id=inst.id, split=inst.split, messages=messages)
