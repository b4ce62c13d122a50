"""The agent in three layers: ``agent.core`` (foundation), ``agent.app`` (application) and ``agent.cli`` (the top)."""
