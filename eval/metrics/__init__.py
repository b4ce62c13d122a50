"""Metrics layer (MediTOD scores, matchers, NLG scores, statistics): may import agent.core, models and policies."""
