"""HELM ThaiExam: five Thai examinations, one column each, their mean as the headline.

The spec is data (``flows/thai.yaml``); this line gives the board its own flow and deployment.
"""

from helmflow.flows.evaluate import board_flow

thai = board_flow("thai")
