"""HELM AIR-Bench 2024: refusal of harmful prompts across the AIR 2024 risk taxonomy, judged per category.

The spec is data (``flows/air-bench.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

air_bench = board_flow("air-bench")
