"""HELM Lite: ten scenario groups, mean win rate of the accuracy table as the headline.

The spec is data (``flows/lite.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

lite = board_flow("lite")
