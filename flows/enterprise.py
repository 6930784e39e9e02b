"""HELM Enterprise: finance and legal scenarios, the accuracy table's mean win rate as the headline.

The spec is data (``flows/enterprise.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

enterprise = board_flow("enterprise")
