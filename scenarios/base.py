"""What a scenario is: where its data lives, how rows become instances, how it is scored."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from helmflow.records import AdapterSpec, Instance


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataSource(BaseModel):
    """One pinned file: fetched through fsspec, mirrored under datasets/, checked by sha256."""

    model_config = ConfigDict(extra="forbid")
    filename: str
    url: str
    sha256: str | None = None


class ScenarioError(ValueError):
    """Bad scenario input (parameters, data, schema): one sentence naming what and where."""


class Scenario:
    """Subclass, set the class attributes, implement :meth:`load`, and register with ``@scenario``.

    ``VERSION`` is the loader's declared version: bump it whenever the instances it produces can change.
    """

    name: ClassVar[str] = ""
    VERSION: ClassVar[str] = "1"
    Params: ClassVar[type[BaseModel]] = NoParams
    description: ClassVar[str] = ""
    main_metric: ClassVar[str] = "exact_match"
    metrics: ClassVar[list[str]] = ["exact_match"]
    default_adapter: ClassVar[AdapterSpec] = AdapterSpec()

    def __init__(self, **params: Any):
        try:
            self.params = self.Params(**params)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors())
            raise ScenarioError(f"scenario {self.name!r}: bad parameters: {problems}") from None

    @property
    def param_dict(self) -> dict[str, Any]:
        return self.params.model_dump(mode="json")

    @property
    def spec_string(self) -> str:
        items = ",".join(f"{k}={v}" for k, v in sorted(self.param_dict.items()))
        return f"{self.name}:{items}" if items else self.name

    def dataset_revision(self) -> str:
        """The pinned revision of the source data; generated scenarios are pinned by their VERSION."""
        return "generated"

    def sources(self) -> list[DataSource]:
        """Files to mirror before :meth:`load`; empty for generated scenarios."""
        return []

    def load(self, files: dict[str, str]) -> list[Instance]:
        """Instances from the mirrored files (``filename`` -> fsspec URL of the mirrored copy)."""
        raise NotImplementedError
