"""HELM MedHELM's Stanford-private suite: CLEAR, the shc_*_med sets and three jury-scored tasks
from the user's own folders.

The spec is data (``flows/medhelm-private.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

medhelm_private = board_flow("medhelm-private")
