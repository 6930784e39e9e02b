"""HELM Long Context: RULER SQuAD and HotpotQA, InfiniteBench En.MC and En.Sum, OpenAI MRCR, their mean the headline.

The spec is data (``flows/long-context.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

long_context = board_flow("long-context")
