"""streamcite: citation-aware streaming of LLM answers."""

__version__ = "0.1.0"
