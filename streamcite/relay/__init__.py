"""WebSocket/SSE relay between browsers and a citation-aware upstream."""
