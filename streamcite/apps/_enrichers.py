"""The after-the-stream enrichers asked for on a command line (`ask`, `bench`, `relay`).

One place decides what `--wikit-*`, `--grounding` and `--google-*` mean, and how they
default when the upstream is the embedded backend (which speaks Wikit's and Google's
APIs too, and checks no credentials unless configured).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from streamcite.enrich.base import Enricher

__all__ = [
    "LOCAL_GOOGLE_CONFIG",
    "LOCAL_WIKIT_APP",
    "LOCAL_WIKIT_ORG",
    "EnricherOptions",
    "build_enrichers",
]

# The values of WikitSources' own defaults against the embedded backend (not imported:
# the Wikit client loads aiohttp, which the CLI loads only when a command needs it).
LOCAL_WIKIT_APP = "streamcite-demo"
LOCAL_WIKIT_ORG = "streamcite-local"
LOCAL_GOOGLE_CONFIG = (
    "projects/streamcite-local/locations/global/groundingConfigs/default_grounding_config"
)


@dataclass(slots=True, repr=False)
class EnricherOptions:
    sources: bool = False
    """Fetch Wikit quoted sources."""
    wikit_app: str | None = None
    wikit_org: str | None = None
    wikit_api_key: str | None = None
    wikit_base_url: str | None = None
    grounding: str = "none"
    """``none``, ``local``, ``google`` or ``azure``."""
    grounding_facts: str = "citations"
    google_config: str | None = None
    google_endpoint: str | None = None
    google_token: str | None = None
    claim_level_scores: bool = False
    wikit_headers: dict[str, str] | None = None
    """Extra headers of the Wikit calls (``bench --fault`` sends its fault spec there)."""

    def __repr__(self) -> str:  # holds secrets: never shown
        return f"<EnricherOptions sources={self.sources} grounding={self.grounding}>"


QUOTELESS_APIS = frozenset({"responses"})
"""APIs whose citations quote nothing (OpenAI Responses' ``url_citation``: a URL and a
title): a grounding check against the citations alone has no facts."""


def default_facts(api: str, sources: bool) -> str:
    """The grounding facts when none were asked for: the citations' quoted text, or, for
    an API whose citations quote nothing, the Wikit sources too (when they are fetched)."""
    return "both" if api in QUOTELESS_APIS and sources else "citations"


def build_enrichers(opts: EnricherOptions, local_root: str | None) -> list[Enricher]:
    """The enrichers ``opts`` asks for; ``local_root`` is the embedded backend's root URL
    when it is the upstream (then Wikit and Google default to its endpoints)."""
    out: list[Any] = []
    if opts.sources:
        from streamcite.enrich.wikit import DEFAULT_BASE_URL, WikitSources

        out.append(
            WikitSources(
                opts.wikit_app or LOCAL_WIKIT_APP,
                opts.wikit_org or LOCAL_WIKIT_ORG,
                api_key=opts.wikit_api_key,
                base_url=opts.wikit_base_url or local_root or DEFAULT_BASE_URL,
                headers=opts.wikit_headers,
            )
        )
    if opts.grounding == "local":
        from streamcite.grounding.checker import LocalGrounding

        out.append(LocalGrounding(facts_from=opts.grounding_facts))
    elif opts.grounding == "google":
        from streamcite.enrich.google import GoogleGrounding

        local = local_root is not None and opts.google_endpoint is None
        if opts.google_config is None and not local:
            raise click.UsageError("--grounding google needs --google-config")
        kwargs: dict[str, Any] = {
            "token": opts.google_token or ("local" if local else None),
            "facts_from": opts.grounding_facts,
            "claim_level_scores": opts.claim_level_scores,
        }
        endpoint = opts.google_endpoint or local_root
        if endpoint:
            kwargs["endpoint"] = endpoint
        out.append(GoogleGrounding(opts.google_config or LOCAL_GOOGLE_CONFIG, **kwargs))
    elif opts.grounding == "azure":
        out.append(_azure(opts, local_root))
    return out


AZURE_ENDPOINT_ENV = "CONTENT_SAFETY_ENDPOINT"
AZURE_KEY_ENV = "CONTENT_SAFETY_KEY"


def _azure(opts: EnricherOptions, local_root: str | None) -> Any:
    """Azure groundedness detection: the resource named by ``CONTENT_SAFETY_ENDPOINT`` and
    ``CONTENT_SAFETY_KEY`` (Azure's sample names), else the embedded backend's endpoint."""
    import os

    from streamcite.enrich.azure import AzureGroundedness

    endpoint = os.environ.get(AZURE_ENDPOINT_ENV) or local_root
    key = os.environ.get(AZURE_KEY_ENV) or ("local" if endpoint == local_root else None)
    if not endpoint or not key:
        raise click.UsageError(
            f"--grounding azure needs {AZURE_ENDPOINT_ENV} and {AZURE_KEY_ENV} in the environment"
        )
    return AzureGroundedness(endpoint, key, facts_from=opts.grounding_facts)
