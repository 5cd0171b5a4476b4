"""The embedded local backend: offline chat completions, Wikit sources and grounding."""
