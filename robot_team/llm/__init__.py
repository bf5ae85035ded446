"""LLM brains (OpenAI-compatible endpoints)."""
