"""Evaluation in two layers: ``eval.metrics`` (pure scores, below the application) and ``eval.runs`` (application)."""
