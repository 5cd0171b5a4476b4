"""``ask --provider NAME``: the API, base URL and key variable of a vendor, as its own SDK
reads them, so that ``--provider anthropic -m claude-sonnet-4-5 "…"`` is all it takes.

A preset only fills what the command line leaves out: an explicit ``--api``,
``--base-url`` or ``--api-key-env`` wins. The key is read from the first variable of
the preset's list that is set, in the SDK's own order (the google-genai SDK prefers
``GOOGLE_API_KEY`` to ``GEMINI_API_KEY``; Cohere's reads ``CO_API_KEY``, then
``COHERE_API_KEY``).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["KEY_ENVS", "PRESETS", "Preset", "is_loopback", "key_from_env", "presets_help"]


@dataclass(slots=True, frozen=True)
class Preset:
    api: str
    base_url: str
    key_envs: tuple[str, ...]
    """Variables the vendor's SDK reads its key from, in its order (empty: no key)."""


LOCAL_ROOT = "http://127.0.0.1:8765"
"""``streamcite serve-local``'s address (its default port)."""

PRESETS: dict[str, Preset] = {
    "openai": Preset("chat", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    "anthropic": Preset("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
    "gemini": Preset(
        "gemini",
        "https://generativelanguage.googleapis.com",
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    ),
    "cohere": Preset("cohere", "https://api.cohere.com", ("CO_API_KEY", "COHERE_API_KEY")),
    "perplexity": Preset("chat", "https://api.perplexity.ai", ("PERPLEXITY_API_KEY",)),
    "openrouter": Preset("chat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "local": Preset("chat", LOCAL_ROOT + "/v1", ()),
}
"""``--provider`` -> its API, base URL and key variables. ``local`` is a running
``streamcite serve-local`` (its endpoint for ``--api`` when one is given)."""

KEY_ENVS: dict[str, tuple[str, ...]] = {
    "chat": ("OPENAI_API_KEY",),
    "responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": PRESETS["gemini"].key_envs,
    "cohere": PRESETS["cohere"].key_envs,
}
"""``--api`` -> the key variables read when neither ``--provider`` nor ``--api-key-env``
says otherwise (the vendor SDK's, in its order)."""


def presets_help() -> str:
    """The presets for ``--help``'s epilog, two lines each (a URL never broken by the
    help's wrapping: click leaves a ``\\b`` paragraph as it is)::

        anthropic   anthropic API, key ANTHROPIC_API_KEY
                    https://api.anthropic.com
    """
    lines = ["\b", "Providers (--provider NAME): API, key variable(s), base URL"]
    for name, p in PRESETS.items():
        key = " or ".join(p.key_envs) if p.key_envs else "none (streamcite serve-local)"
        lines.append(f"  {name:<11} {p.api} API, key {key}")
        lines.append(f"  {'':<11} {p.base_url}")
    return "\n".join(lines)


def key_from_env(names: tuple[str, ...]) -> str | None:
    """The value of the first variable of ``names`` that is set and not empty."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def is_loopback(url: str) -> bool:
    """The URL's host is this machine (``localhost``, 127.0.0.0/8, ``::1``): a server
    there (serve-local, Ollama, vLLM) rarely wants a key, so none is asked for."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
