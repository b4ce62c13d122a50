"""Application layer (graph, sessions, chat, config, export): may import everything below ui, never ui or agent.cli."""
