"""The vision demo board: generated images x offline models, runnable anywhere with no key or network.

Its spec is data (``flows/vision_demo.yaml``); this module only names it, so it has its own
deployment and flow name in the Prefect UI.
"""

from __future__ import annotations

from prefect import flow

from helmflow.flows.evaluate import evaluate


@flow(name="vision-demo")
def vision_demo(
    models: list[str] | None = None,
    scenarios: list[str] | None = None,
    max_instances: int | None = None,
    storage: str | None = None,
    models_file: str | None = None,
) -> dict:
    return evaluate.fn(
        board="vision-demo", models=models, scenarios=scenarios, max_instances=max_instances,
        storage=storage, models_file=models_file,
    )
