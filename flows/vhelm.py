"""The VHELM board (vision-language): MM-Star, MMMU, POPE, A-OKVQA, EXAMS-V.

The spec is data (``flows/vhelm.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

vhelm = board_flow("vhelm")
