"""HELM Safety v1's five scenarios; judges: the jury for the four judged ones (default: the board's
judges:); toxicity: the scorer deployment for the generation scenarios (default: the board's toxicity:).

The spec is data (``flows/safety.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

safety = board_flow("safety")
