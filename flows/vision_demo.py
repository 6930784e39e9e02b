"""The vision demo board: generated images x offline models, no key or network.

The spec is data (``flows/vision-demo.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

vision_demo = board_flow("vision-demo")
