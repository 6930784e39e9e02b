"""HELM Safety v1's five scenarios; the selection's judges: the jury for the four judged ones (default: the
board's judges:); its board_wide: the scorer of the generation scenarios' board-wide metric (default: the board's).

The spec is data (``flows/safety.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

safety = board_flow("safety")
