"""Access tokens for Google APIs: static, caller-provided, or Application Default Credentials.

ADC needs ``google-auth`` (``pip install 'streamcite[google]'``). Its refresh is
blocking (it does HTTP with ``requests``, or reads the metadata server), so it runs
in a worker thread and the event loop keeps serving other streams meanwhile; one
refresh at a time, however many checks are waiting for a token.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from streamcite.core.errors import StreamciteError
from streamcite.enrich._http import Secret

__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "DISCOVERYENGINE_SCOPE",
    "ApplicationDefaultToken",
    "AuthSetupError",
    "ProviderToken",
    "StaticToken",
    "TokenSource",
    "make_token_source",
]

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DISCOVERYENGINE_SCOPE = "https://www.googleapis.com/auth/discoveryengine.readwrite"

TokenProvider = Callable[[], str | Awaitable[str]]


class AuthSetupError(StreamciteError):
    """No usable credentials (google-auth missing, no ADC found, provider failed)."""

    code = "google_auth_setup"


@runtime_checkable
class TokenSource(Protocol):
    """Gives a bearer token; ``invalidate()`` after a 401 forces a fresh one next time."""

    async def token(self) -> str: ...

    def invalidate(self) -> None: ...

    @property
    def quota_project(self) -> str | None: ...


class StaticToken:
    """A token fixed at construction (e.g. from ``gcloud auth print-access-token``)."""

    __slots__ = ("_token",)

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("token must be a non-empty string")
        self._token = Secret(token)

    async def token(self) -> str:
        return self._token.get()

    def invalidate(self) -> None:
        """A static token cannot be renewed."""

    @property
    def quota_project(self) -> str | None:
        return None

    def __repr__(self) -> str:
        return "StaticToken('***')"


class ProviderToken:
    """Asks a caller's function for the token on every request.

    The function may be ``async`` or plain; a plain one runs in a worker thread,
    since it may well do blocking I/O (a secrets manager, a file, a subprocess).
    """

    __slots__ = ("_provider",)

    def __init__(self, provider: TokenProvider) -> None:
        if not callable(provider):
            raise TypeError("token_provider must be callable")
        self._provider = provider

    async def token(self) -> str:
        try:
            if inspect.iscoroutinefunction(self._provider):
                value: Any = await self._provider()
            else:
                value = await asyncio.to_thread(self._provider)
                if inspect.isawaitable(value):
                    value = await value
        except StreamciteError:
            raise
        except Exception as e:
            # The provider's own message may quote a credential; name the type only.
            raise AuthSetupError(
                f"token_provider failed ({type(e).__name__})", retryable=False
            ) from e
        if not isinstance(value, str) or not value:
            raise AuthSetupError("token_provider must return a non-empty string")
        return value

    def invalidate(self) -> None:
        """The provider is asked again on every request anyway."""

    @property
    def quota_project(self) -> str | None:
        return None

    def __repr__(self) -> str:
        return f"ProviderToken({getattr(self._provider, '__qualname__', 'provider')})"


class ApplicationDefaultToken:
    """Application Default Credentials through ``google-auth``, refreshed off the loop.

    ``credentials`` may be passed (any ``google.auth.credentials.Credentials``, or an
    object with ``valid``, ``token``, ``refresh(request)`` and optionally
    ``quota_project_id``); otherwise ``google.auth.default(scopes=...)`` finds them
    (``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth application-default login``,
    the metadata server).
    """

    __slots__ = ("_credentials", "_lock", "_project", "_request_factory", "_scopes", "_stale")

    def __init__(
        self,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
        *,
        credentials: Any = None,
        request_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._scopes = tuple(scopes)
        self._credentials = credentials
        self._request_factory = request_factory
        self._project: str | None = None
        self._lock: asyncio.Lock | None = None
        self._stale = False

    def __repr__(self) -> str:
        return f"ApplicationDefaultToken(scopes={list(self._scopes)!r})"

    @property
    def quota_project(self) -> str | None:
        """The credentials' quota project (``gcloud auth application-default set-quota-project``)."""
        qp = getattr(self._credentials, "quota_project_id", None)
        return qp if isinstance(qp, str) and qp else None

    @property
    def project_id(self) -> str | None:
        """The project ``google.auth.default()`` reported, if any."""
        return self._project

    def invalidate(self) -> None:
        self._stale = True

    async def token(self) -> str:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._credentials is None:
                self._credentials, self._project = await asyncio.to_thread(self._load_default)
            creds = self._credentials
            if self._stale or not getattr(creds, "valid", False) or not creds.token:
                await asyncio.to_thread(self._refresh, creds)
                self._stale = False
            token = creds.token
        if not isinstance(token, str) or not token:
            raise AuthSetupError("the credentials gave no access token after refresh")
        return token

    def _load_default(self) -> tuple[Any, str | None]:
        try:
            import google.auth
            import google.auth.exceptions
        except ImportError as e:
            raise AuthSetupError(
                "Application Default Credentials need google-auth: "
                "pip install 'streamcite[google]' (or pass token= / token_provider=)"
            ) from e
        try:
            creds, project = google.auth.default(scopes=list(self._scopes))
        except google.auth.exceptions.DefaultCredentialsError as e:
            raise AuthSetupError(
                "no Application Default Credentials found: run "
                "`gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS "
                "to a service-account key file, or pass token= / token_provider="
            ) from e
        return creds, project

    def _refresh(self, creds: Any) -> None:
        factory = self._request_factory
        if factory is None:
            try:
                from google.auth.transport.requests import Request
            except ImportError as e:
                raise AuthSetupError(
                    "refreshing Google credentials needs google-auth and requests: "
                    "pip install 'streamcite[google]'"
                ) from e
            factory = Request
        try:
            creds.refresh(factory())
        except StreamciteError:
            raise
        except Exception as e:
            # google-auth's RefreshError text can carry the token endpoint's body;
            # keep the type and a hint, not the payload.
            raise AuthSetupError(
                f"refreshing the Google access token failed ({type(e).__name__}); "
                "check the credentials (expired user login? revoked key?) and that "
                f"they allow the scope {self._scopes[0]}",
                retryable=False,
            ) from e


def make_token_source(
    token: str | None = None,
    token_provider: TokenProvider | TokenSource | None = None,
    *,
    scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
    credentials: Any = None,
) -> TokenSource:
    """Pick the token source: a static token, a provider, else Application Default Credentials."""
    if token is not None and token_provider is not None:
        raise ValueError("pass token= or token_provider=, not both")
    if token is not None:
        return StaticToken(token)
    if token_provider is not None:
        if isinstance(token_provider, TokenSource):
            return token_provider
        return ProviderToken(token_provider)
    return ApplicationDefaultToken(scopes, credentials=credentials)
