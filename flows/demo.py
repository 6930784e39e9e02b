"""The demo board: offline scenarios × offline models, runnable anywhere with no key or network.

Its spec is data (``flows/demo.yaml``); this module only names it, so the demo has its own
deployment and flow name in the Prefect UI.
"""

from __future__ import annotations

from prefect import flow

from helmflow.flows.evaluate import evaluate


@flow(name="demo")
def demo(
    models: list[str] | None = None,
    scenarios: list[str] | None = None,
    max_instances: int | None = None,
    storage: str | None = None,
    models_file: str | None = None,
) -> dict:
    return evaluate.fn(
        board="demo", models=models, scenarios=scenarios, max_instances=max_instances,
        storage=storage, models_file=models_file,
    )
