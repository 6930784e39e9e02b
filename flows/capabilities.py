"""HELM Capabilities' core scenarios; judges: the jury for the judged ones (default: the board's judges:).

The spec is data (``flows/capabilities.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

capabilities = board_flow("capabilities")
