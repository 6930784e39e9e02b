"""The demo board: offline scenarios x offline models, runnable anywhere with no key or network.

The spec is data (``flows/demo.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

demo = board_flow("demo")
