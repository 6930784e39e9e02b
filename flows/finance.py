"""HELM Finance: FinQA, FinanceBench and BANKING77, the accuracy table's mean win rate as the headline.

The spec is data (``flows/finance.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

finance = board_flow("finance")
