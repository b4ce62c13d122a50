"""Policies layer (NLU, policy and NLG kinds and the registry that builds them): may import agent.core and models."""
