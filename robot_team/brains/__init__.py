"""Brains: the decision-making behind each robot (protocol brain; LLM brains)."""
