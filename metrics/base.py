"""What a metric sees: one evaluated instance with its requests and completions (one per sample)."""

from __future__ import annotations

from dataclasses import dataclass, field

from helmflow.records import AdapterSpec, Annotation, Completion, Instance, Request


@dataclass(frozen=True)
class MetricInput:
    instance: Instance
    requests: list[Request]
    completions: list[Completion]
    adapter: AdapterSpec
    annotations: list[Annotation] = field(default_factory=list)  # judge verdicts on these completions

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.completions]

    @property
    def correct_texts(self) -> list[str]:
        return [r.text for r in self.instance.correct_references]
