"""Models layer (backends, prompts, LLM modules, serving, training): may import agent.core only, never eval."""
