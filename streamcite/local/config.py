"""Settings of the embedded local backend (:class:`BackendConfig`) and its model name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from streamcite.local.corpus import stable_id

__all__ = ["DEFAULT_ORGANIZATION_ID", "MODEL", "BackendConfig"]

MODEL = "streamcite-local"
"""The model name the backend answers as (``/v1/models``, every completion)."""
DEFAULT_ORGANIZATION_ID = stable_id("organization", "streamcite-local")
"""Organisation id reported in Wikit documents when none is configured."""


@dataclass(slots=True)
class BackendConfig:
    """Settings of the local backend.

    ``faults`` is the server-wide default fault spec (same syntax as the
    ``X-Streamcite-Fault`` header). ``wikit_org_id`` / ``wikit_api_key``, when set,
    are required on the Wikit endpoints (401 otherwise).
    """

    corpus_dir: Path | None = None
    first_token_delay: float = 0.0
    token_delay: float = 0.0
    wikit_org_id: str | None = None
    wikit_api_key: str | None = None
    store_size: int = 1000
    store_ttl: float = 600.0
    faults: str | None = None
    corpus_strict: bool = False
    """Fail on a file that is not UTF-8 text instead of skipping it."""
    max_body_bytes: int = 1024 * 1024
    """Largest request body (HTTP 413 beyond): a 7 MiB question froze the loop for 2.3 s."""
    max_question_chars: int = 16 * 1024
    """Longest question answered (HTTP 413 beyond); retrieval cost grows with it."""
    answer_cache_bytes: int = 8 * 1024 * 1024
    """Memory the cache of recent answers may hold (measured per answer, not counted)."""
    allow_client_faults: bool = True
    """Take fault injection from requests (``X-Streamcite-Fault``, ``?fault=``). On for
    in-process use (tests, ``ask --demo``, ``bench``); ``serve-local`` turns it off
    unless started with ``--allow-client-faults``."""
    public_url: str | None = None
    """Root of citation and document URLs; default: the address the client connected
    to (``LocalBackend`` sets its own ``root_url``). Never taken from ``Host``."""
    store_bytes: int = 16 * 1024 * 1024
    """Memory the answers kept for the Wikit endpoints may hold (measured, like the
    cache's): 1000 answers to 16 Ki-character questions would otherwise hold 64 MiB."""
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` allow-list (``name[:port]``, ``[v6]:port``, ``.domain``, ``*``): other
    hosts get HTTP 403 (DNS rebinding). Empty: the address the connection arrived on
    and ``localhost``, ``127.0.0.1``, ``::1``, with its port."""
    allowed_origins: tuple[str, ...] = ()
    """Browser ``Origin`` allow-list (``*``: any); empty: the http(s) origins of the
    allowed hosts. Requests without ``Origin`` (not a browser) are not affected."""
    header_timeout: float = 10.0
    """Seconds a connection may take to send a complete request head (after opening or
    after its previous response); closed after (slowloris)."""
    body_timeout: float = 30.0
    """Seconds a request's body may take to arrive whole after its head; closed after."""
    max_check_body_bytes: int = 8 * 1024 * 1024
    """Largest ``:check`` request body (HTTP 413 beyond): Google's own limits (200 facts
    of 10,000 characters) make a legitimate request of 2 to 6 MB of JSON."""

    def __repr__(self) -> str:
        # The API key is a secret: never in a repr or a log line.
        key = "None" if self.wikit_api_key is None else "'***'"
        return (
            f"BackendConfig(corpus_dir={self.corpus_dir!r}, first_token_delay={self.first_token_delay!r}, "
            f"token_delay={self.token_delay!r}, wikit_org_id={self.wikit_org_id!r}, "
            f"wikit_api_key={key}, store_size={self.store_size!r}, store_ttl={self.store_ttl!r}, "
            f"faults={self.faults!r}, allow_client_faults={self.allow_client_faults!r}, "
            f"allowed_hosts={self.allowed_hosts!r}, allowed_origins={self.allowed_origins!r}, "
            f"public_url={self.public_url!r})"
        )
