"""Names, units and bucket advice: the OpenTelemetry GenAI semantic conventions
(``gen_ai.*``, semantic-conventions v1.41 / semantic-conventions-genai, status
"Development") and streamcite's own ``streamcite.*`` names. No OpenTelemetry import.
"""

from __future__ import annotations

__all__ = [
    "DURATION_BUCKETS",
    "METRIC_DURATION",
    "METRIC_TIME_TO_FIRST_CHUNK",
    "METRIC_TOKEN_USAGE",
    "STREAMCITE_METRICS",
    "TOKEN_BUCKETS",
    "TTFT_BUCKETS",
    "provider_name",
]

METRIC_DURATION = "gen_ai.client.operation.duration"
"""Request sent → end of the operation (``done``), seconds."""
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
"""Tokens of the usage chunk, ``gen_ai.token.type`` = ``input`` | ``output``."""
METRIC_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
"""Request sent → first answer token, seconds (the client-side TTFT of the conventions;
``gen_ai.server.time_to_first_token`` is the model server's own metric)."""

DURATION_BUCKETS: tuple[float, ...] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The conventions' ``ExplicitBucketBoundaries`` advice for ``operation.duration``."""
TOKEN_BUCKETS: tuple[float, ...] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
"""The conventions' advice for ``token.usage``."""
TTFT_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
)  # fmt: skip
"""The conventions' advice for time to first chunk / token."""

STREAMCITE_METRICS: dict[str, str] = {
    "citations": "streamcite.client.time_to_citations",
    "sources": "streamcite.client.time_to_sources",
    "grounding": "streamcite.client.time_to_grounding",
    "first_claim": "streamcite.client.time_to_first_claim",
}
"""streamcite's own latencies (request sent → that event), seconds, duration buckets."""

_HOSTS = (
    ("api.openai.com", "openai"),
    (".openai.azure.com", "azure.ai.openai"),
    (".services.ai.azure.com", "azure.ai.inference"),
    ("api.anthropic.com", "anthropic"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("aiplatform.googleapis.com", "gcp.vertex_ai"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.deepseek.com", "deepseek"),
    ("api.groq.com", "groq"),
    ("api.perplexity.ai", "perplexity"),
    ("api.x.ai", "x_ai"),
)
_DIALECTS = {
    "chat": "openai",
    "responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "cohere": "cohere",
}


def provider_name(host: str | None, api: str = "chat") -> str:
    """``gen_ai.provider.name``: the well-known value of a provider's API host, else the
    API the request speaks (``chat`` → ``openai``, the OpenAI-compatible API).

    >>> provider_name("api.groq.com"), provider_name("127.0.0.1", "anthropic")
    ('groq', 'anthropic')
    """
    h = (host or "").lower()
    for suffix, name in _HOSTS:
        if h == suffix.lstrip(".") or h.endswith(suffix if suffix[0] == "." else "." + suffix):
            return name
    return _DIALECTS.get(api, "openai")
