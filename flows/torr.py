"""HELM ToRR: table reasoning under seven table serialisations and five augmentations, with performance
and robustness tables averaged (HELM's mean aggregation).

The spec is data (``flows/torr.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

torr = board_flow("torr")
