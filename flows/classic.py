"""HELM Classic: the core scenarios in seven tables, the accuracy table's mean win rate as the headline.

The spec is data (``flows/classic.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

classic = board_flow("classic")
