"""The chat interpreter's state: the attributes of
:class:`~streamcite.core.chunks.ChunkInterpreter` and of the base classes its cold
paths live in (:mod:`~streamcite.core.chunk_faults`, :mod:`~streamcite.core.chunk_fields`,
:mod:`~streamcite.core.chunk_surrogates`). Declared once, here, so that every part
writes only attributes it declares; set by ``ChunkInterpreter.__init__`` (whose comments say
what each one holds). Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamcite.core.answer import AnswerBuilder
    from streamcite.core.events import UsageEvent
    from streamcite.core.markers import FootnoteDetector, MarkerMode
    from streamcite.core.refs import RefStore
    from streamcite.core.surrogates import SurrogateJoiner
    from streamcite.core.template import ContentTemplate, DeltaTemplate
    from streamcite.core.tool_placer import ToolPlacer

__all__ = ["ChunkState"]


class ChunkState:
    """The attributes of the chat interpreter (no behaviour). Its parts are one chain
    of base classes (state, faults, fields, surrogates, the interpreter): mypyc, which
    compiles them in the optional build, takes single inheritance only."""

    __slots__ = (
        "_builder",
        "_detectors",
        "_disp0",
        "_dtpl",
        "_finished",
        "_last_citations",
        "_meta_seen",
        "_mode",
        "_mode_keep",
        "_raw0",
        "_refs",
        "_surr",
        "_surr_held",
        "_tools",
        "_tpl",
        "_tpl_off",
        "_usage_pending",
        "annotations_dropped",
        "citations_dropped",
        "cut",
        "done",
        "foreign_seen",
        "spans_checked",
    )

    _builder: AnswerBuilder
    _detectors: dict[int, FootnoteDetector]
    _disp0: list[str]
    _dtpl: DeltaTemplate
    _finished: set[int]
    _last_citations: Any
    _meta_seen: bool
    _mode: MarkerMode
    _mode_keep: bool
    _raw0: list[str]
    _refs: RefStore
    _surr: SurrogateJoiner | None
    _surr_held: bool
    _tools: dict[int, ToolPlacer]
    _tpl: ContentTemplate
    _tpl_off: bool
    _usage_pending: UsageEvent | None
    annotations_dropped: int
    citations_dropped: int
    cut: bool
    done: bool
    foreign_seen: bool
    spans_checked: int
