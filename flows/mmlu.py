"""HELM MMLU: all 57 subjects, one column each, their mean as the headline.

The spec is data (``flows/mmlu.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

mmlu = board_flow("mmlu")
