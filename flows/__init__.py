"""One module per board over the generic :func:`helmflow.flows.evaluate.evaluate` flow."""
