"""A Gemini support's key: plain offsets and indices keyed by value (``int`` or ``None``,
never a ``bool``: ``True`` is not chunk 1), anything else by its bounded quote, the
same whatever the values."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.core.quote import quote
from streamcite.core.support_keys import support_key

_VALUE: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.integers(-3, 3), st.booleans(), st.floats(0, 2), st.text(max_size=2)
)


def _by_types(sup: dict[str, Any]) -> Any:
    """The key as the sets of types define it (the reference)."""
    seg, ids = sup.get("segment"), sup.get("groundingChunkIndices")
    if type(seg) is dict and type(ids) is list and len(ids) <= 64:
        a, b, part = seg.get("startIndex"), seg.get("endIndex"), seg.get("partIndex")
        plain = {int, type(None)}
        if {type(a), type(b), type(part)} <= plain and {type(i) for i in ids} <= {int}:
            return (a, b, part, tuple(ids))
    return (quote(seg, 400), quote(ids, 200))


@settings(max_examples=400, deadline=None)
@given(
    seg=st.one_of(
        st.dictionaries(st.sampled_from(["startIndex", "endIndex", "partIndex"]), _VALUE),
        _VALUE,
    ),
    ids=st.one_of(st.lists(_VALUE, max_size=4), st.lists(st.integers(0, 9), max_size=70), _VALUE),
)
def test_key_by_value_or_by_quote(seg: Any, ids: Any) -> None:
    sup = {"segment": seg, "groundingChunkIndices": ids}
    assert support_key(sup) == _by_types(sup)


def test_a_bool_index_is_not_a_chunk_number() -> None:
    plain = {"segment": {"startIndex": 0, "endIndex": 5}, "groundingChunkIndices": [1]}
    odd = {"segment": {"startIndex": 0, "endIndex": 5}, "groundingChunkIndices": [True]}
    assert support_key(plain) == (0, 5, None, (1,))
    assert support_key(odd) != support_key(plain)
    assert support_key({**odd, "segment": {"startIndex": False, "endIndex": 5}}) == (
        "{'startIndex': False, 'endIndex': 5}",
        "[True]",
    )
