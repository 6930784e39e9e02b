"""HELM MedHELM: public medical scenarios in five category tables, each ranked by its mean win rate.

The spec is data (``flows/medhelm.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

medhelm = board_flow("medhelm")
