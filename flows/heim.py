"""HEIM: HELM's text-to-image board, aspect tables with mean win rates, images stored by content.

The spec is data (``flows/heim.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

heim = board_flow("heim")
