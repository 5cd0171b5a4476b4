"""How :class:`~streamcite.core.answer.AnswerBuilder` keeps what a stream may never use.
Sans-I/O.

A short real answer (a few dozen events) paid about as much for its builder and its
``done`` snapshot as for its text: every list, dict and the citation-ref store made for
every stream, and ``Timings.__init__`` (seven keyword defaults) at each snapshot. The
builder now makes each of those at its first use (:class:`LazyParts`)."""

from __future__ import annotations

from typing import Any

from streamcite.core.events import ClaimEvent, ErrorEvent, ProviderToolEvent
from streamcite.core.models import Timings
from streamcite.core.refs import RefStore
from streamcite.core.sources import QuotedSource

__all__ = ["LazyParts"]


class LazyParts:
    """The parts of :class:`~streamcite.core.answer.AnswerBuilder` a stream may never
    use: each kept in ``_<name>`` (None until used) and made at the first read of its
    public property (assignable). The builder's own methods read ``_<name>`` (None:
    empty) and make nothing. Plain properties, not a descriptor class: mypyc compiles
    them to native attribute reads."""

    # Slots (an answer builder has more attributes than CPython keeps without a dict
    # lookup), set by AnswerBuilder.__init__ (None: not made yet).
    __slots__ = (
        "_chunk_fields",
        "_claims",
        "_errors",
        "_provider_tools",
        "_references",
        "_refs",
        "_sources",
        "_timings",
    )

    _refs: RefStore | None
    _sources: list[QuotedSource] | None
    _errors: list[ErrorEvent] | None
    _timings: Timings | None
    _chunk_fields: dict[str, Any] | None
    _references: list[Any] | None
    _claims: list[ClaimEvent] | None
    _provider_tools: list[ProviderToolEvent] | None

    @property
    def refs(self) -> RefStore:
        """Every choice's citation refs, compactly (the answer's ``citation_refs``)."""
        if self._refs is None:
            self._refs = RefStore()
        return self._refs

    @refs.setter
    def refs(self, value: RefStore) -> None:
        self._refs = value

    @property
    def sources(self) -> list[QuotedSource]:
        """The quoted sources."""
        if self._sources is None:
            self._sources = []
        return self._sources

    @sources.setter
    def sources(self, value: list[QuotedSource]) -> None:
        self._sources = value

    @property
    def errors(self) -> list[ErrorEvent]:
        """Errors kept (see :meth:`~streamcite.core.answer.AnswerBuilder.error`)."""
        if self._errors is None:
            self._errors = []
        return self._errors

    @errors.setter
    def errors(self, value: list[ErrorEvent]) -> None:
        self._errors = value

    @property
    def timings(self) -> Timings:
        """Stage timings (the answer's ``timings``)."""
        if self._timings is None:
            self._timings = Timings()
        return self._timings

    @timings.setter
    def timings(self, value: Timings) -> None:
        self._timings = value

    @property
    def chunk_fields(self) -> dict[str, Any]:
        """Top-level fields (``choices`` excepted) of the first chunk and of the finish
        chunk, first value kept: where providers put ids such as a Wikit query id."""
        if self._chunk_fields is None:
            self._chunk_fields = {}
        return self._chunk_fields

    @chunk_fields.setter
    def chunk_fields(self, value: dict[str, Any]) -> None:
        self._chunk_fields = value

    @property
    def references(self) -> list[Any]:
        """Mistral reference parts."""
        if self._references is None:
            self._references = []
        return self._references

    @references.setter
    def references(self, value: list[Any]) -> None:
        self._references = value

    @property
    def claims(self) -> list[ClaimEvent]:
        """Claims kept (at most MAX_CLAIMS)."""
        if self._claims is None:
            self._claims = []
        return self._claims

    @claims.setter
    def claims(self, value: list[ClaimEvent]) -> None:
        self._claims = value

    @property
    def provider_tools(self) -> list[ProviderToolEvent]:
        """The provider-run tools' events (the dialect holds them to the tool-call cap)."""
        if self._provider_tools is None:
            self._provider_tools = []
        return self._provider_tools

    @provider_tools.setter
    def provider_tools(self, value: list[ProviderToolEvent]) -> None:
        self._provider_tools = value
