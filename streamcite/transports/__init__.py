"""HTTP transports (httpx + httpx-sse, aiohttp) that feed the sans-I/O core."""
