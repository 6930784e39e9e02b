"""The web report: a board's leaderboard, every prompt and answer of every run, lineage and plots.

``helmflow serve`` renders these pages live from the object store; ``helmflow report`` writes the
same pages as static files into the release's ``report/``. Nothing here imports Prefect.
"""
