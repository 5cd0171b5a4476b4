"""Every event class of the wire format, and the codec both ways.

``event.to_json()`` / :func:`event_to_json` write an event; :func:`event_from_json` /
:func:`event_from_dict` read one back (a relay frame, a logged event, ``--json`` output).

>>> from streamcite.events import TokenEvent
>>> TokenEvent(index=0, text="Hi").to_json()
b'{"type":"token","index":0,"text":"Hi","display":""}'
"""

from streamcite.core.events import (
    CitationRefEvent,
    CitationsEvent,
    ClaimEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    FinishEvent,
    GroundingEvent,
    MetaEvent,
    ProviderToolEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
    UsageEvent,
    answer_from_dict,
    event_from_dict,
    event_from_json,
    event_to_json,
)

__all__ = [
    "CitationRefEvent",
    "CitationsEvent",
    "ClaimEvent",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "FinishEvent",
    "GroundingEvent",
    "MetaEvent",
    "ProviderToolEvent",
    "ReasoningEvent",
    "RefusalEvent",
    "SourcesEvent",
    "TokenEvent",
    "ToolCallEvent",
    "UsageEvent",
    "answer_from_dict",
    "event_from_dict",
    "event_from_json",
    "event_to_json",
]
