"""Sans-I/O core: SSE decoding, chunk interpretation, footnotes, answer accumulation."""
