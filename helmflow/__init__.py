"""helmflow: holistic, reproducible language-model evaluation as Prefect flows."""

__version__ = "0.1.0"
