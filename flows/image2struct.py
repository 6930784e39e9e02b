"""The Image2Struct board: LaTeX answers rendered in a sandbox and compared with the image.

The spec is data (``flows/image2struct.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

image2struct = board_flow("image2struct")
