"""What the chat dialect's helper modules use of the interpreter: :class:`ChatState`.

:class:`~streamcite.core.chunks.ChunkInterpreter` owns the chat stream's state and is
the only class that implements this protocol. The free functions of
:mod:`~streamcite.core.deltas`, :mod:`~streamcite.core.fastpath` and
:mod:`~streamcite.core.named_events` receive it as a :class:`ChatState`, so none of
them imports :mod:`~streamcite.core.chunks` (not even for annotations): the core's
import graph has no circle (``tests/test_core_imports_acyclic.py``), as the dialects'
:class:`~streamcite.core.dialects.base.StreamState` keeps theirs. Like httpcore's
``_backends/base.py``, it declares every attribute and method those functions touch,
and nothing else; it exists only for the type checker (never ``isinstance``-checked,
no cost at run time). The keep-mode loop of :mod:`~streamcite.core.fastpath` also reads
the interpreter as its base class :class:`~streamcite.core.chunk_state.ChunkState`,
whose attributes the compiled build reads directly (a protocol's are read by name).
Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from streamcite.core.answer import AnswerBuilder
    from streamcite.core.events import Event
    from streamcite.core.markers import FootnoteDetector
    from streamcite.core.refs import RefStore
    from streamcite.core.sse import RawEvent
    from streamcite.core.template import ContentTemplate, DeltaTemplate
    from streamcite.core.tool_placer import ToolPlacer

__all__ = ["ChatState"]


class ChatState(Protocol):
    """The chat interpreter as its helper modules see it (implemented by
    :class:`~streamcite.core.chunks.ChunkInterpreter`; see its attributes' docs)."""

    # -- read and written by deltas.py ---------------------------------------------
    annotations_dropped: int
    spans_checked: int
    cut: bool
    done: bool
    _tools: dict[int, ToolPlacer]

    # -- read by one_step.py -----------------------------------------------------------
    _meta_seen: bool

    # -- read by fastpath.py (the keep-mode loop) and delta_fastpath.py --------------
    _tpl: ContentTemplate
    _dtpl: DeltaTemplate
    _refs: RefStore
    _detectors: dict[int, FootnoteDetector]
    _raw0: list[str]

    @property
    def builder(self) -> AnswerBuilder: ...

    @property
    def finished(self) -> bool: ...

    def _fault(
        self, out: list[Event], code: str, message: str, stage: str = "chunk"
    ) -> list[Event]: ...

    def _token(self, idx: int, content: str, out: list[Event]) -> None: ...

    def _add_refs(self, idx: int, refs: list[tuple[int, int]], out: list[Event]) -> None: ...

    def _chunk(self, item: RawEvent, out: list[Event]) -> None: ...

    def _interpret(self, obj: dict[str, Any], key: str, out: list[Event]) -> None: ...

    def _meta(self, obj: dict[str, Any], out: list[Event]) -> None: ...

    def _foreign(self, obj: dict[str, Any], out: list[Event]) -> None: ...

    def _done(self, out: list[Event]) -> None: ...

    def _sse_error(self, payload: bytes, out: list[Event]) -> None: ...
