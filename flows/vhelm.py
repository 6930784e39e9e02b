"""The VHELM board (vision-language): MM-Star, MMMU, POPE, A-OKVQA, EXAMS-V.

Its spec is data (``flows/vhelm.yaml``); this module only names it, so it has its own
deployment and flow name in the Prefect UI.
"""

from __future__ import annotations

from prefect import flow

from helmflow.flows.evaluate import evaluate


@flow(name="vhelm")
def vhelm(
    models: list[str] | None = None,
    scenarios: list[str] | None = None,
    max_instances: int | None = None,
    storage: str | None = None,
    models_file: str | None = None,
) -> dict:
    return evaluate.fn(
        board="vhelm", models=models, scenarios=scenarios, max_instances=max_instances,
        storage=storage, models_file=models_file,
    )
