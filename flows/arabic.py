"""HELM Arabic: seven Arabic benchmarks over 121 runs, one column each, the accuracy table's mean as the headline.

The spec is data (``flows/arabic.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

arabic = board_flow("arabic")
