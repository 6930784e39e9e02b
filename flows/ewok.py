"""HELM EWoK: eleven world-knowledge domains, the accuracy table's mean win rate as the headline.

The spec is data (``flows/ewok.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

ewok = board_flow("ewok")
