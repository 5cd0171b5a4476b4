"""Keys of Gemini ``groundingSupports``: the same support sent again by cumulative
grounding metadata is the same span, and is recognised without rendering it."""

from __future__ import annotations

from typing import Any

from streamcite.core.quote import quote

__all__ = ["support_key"]

_MAX_INDICES = 64


def support_key(sup: dict[str, Any]) -> Any:
    """What makes a support the same span: its segment's offsets and its chunk indices
    (the segment's text is the answer's slice at those offsets). Plain shapes are keyed
    by value; anything else by its bounded quote.

    >>> support_key({"segment": {"startIndex": 0, "endIndex": 5}, "groundingChunkIndices": [1]})
    (0, 5, None, (1,))
    >>> support_key({"segment": "odd", "groundingChunkIndices": [1]})
    ("'odd'", '[1]')
    """
    seg, ids = sup.get("segment"), sup.get("groundingChunkIndices")
    if type(seg) is dict and type(ids) is list and len(ids) <= _MAX_INDICES:
        a, b, part = seg.get("startIndex"), seg.get("endIndex"), seg.get("partIndex")
        if (
            (a is None or a.__class__ is int)
            and (b is None or b.__class__ is int)
            and (part is None or part.__class__ is int)
            and _ints(ids)
        ):
            return (a, b, part, tuple(ids))
    return (quote(seg, 400), quote(ids, 200))


def _ints(ids: list[Any]) -> bool:
    """Every item of ``ids`` is an ``int`` (not a ``bool``: a key by value must not
    take ``True`` for ``1``)."""
    for i in ids:  # noqa: SIM110 (a loop: no generator per support)
        if i.__class__ is not int:
            return False
    return True
