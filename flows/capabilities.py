"""The capabilities board (HELM Capabilities' core scenarios); its spec is data (``flows/capabilities.yaml``).

Like :mod:`helmflow.flows.demo`, this module only names the board, so it has its own deployment
and flow name in the Prefect UI.
"""

from __future__ import annotations

from prefect import flow

from helmflow.flows.evaluate import evaluate


@flow(name="capabilities")
def capabilities(
    models: list[str] | None = None,
    scenarios: list[str] | None = None,
    max_instances: int | None = None,
    storage: str | None = None,
    models_file: str | None = None,
    budget_usd: float | None = None,
    judges: list[str] | None = None,
    no_judge: bool = False,
) -> dict:
    """``judges``: the jury for WildBench and Omni-MATH (default: the board's ``judges:``)."""
    return evaluate.fn(
        board="capabilities", models=models, scenarios=scenarios, max_instances=max_instances,
        storage=storage, models_file=models_file, budget_usd=budget_usd, judges=judges, no_judge=no_judge,
    )
