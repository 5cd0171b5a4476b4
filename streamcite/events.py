"""Every event class of the wire format, and the codec (``Event.to_json()``).

>>> from streamcite.events import TokenEvent
>>> TokenEvent(index=0, text="Hi").to_json()
b'{"type":"token","index":0,"text":"Hi","display":""}'
"""

from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    GroundingEvent,
    MetaEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
    UsageEvent,
    event_to_json,
)

__all__ = [
    "CitationRefEvent",
    "CitationsEvent",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "FinishEvent",
    "GroundingEvent",
    "MetaEvent",
    "ReasoningEvent",
    "RefusalEvent",
    "SourcesEvent",
    "TokenEvent",
    "ToolCallEvent",
    "UsageEvent",
    "event_to_json",
]
