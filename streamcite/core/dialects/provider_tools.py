"""The tools a provider runs itself → ``provider_tool`` events, bounded. Sans-I/O.

Anthropic's server tools (``server_tool_use``, ``mcp_tool_use`` and their ``*_tool_result``
blocks), the Responses API's hosted tools (``web_search_call``, ``file_search_call``,
``code_interpreter_call``, ``mcp_call``… items) and Gemini's code execution
(``executableCode`` / ``codeExecutionResult`` parts) each become a
:class:`~streamcite.core.events.ProviderToolEvent` with phase ``call`` when the tool
starts and ``result`` when its result arrives (:mod:`.provider_tool_shapes` reads each
dialect's shapes). :class:`ProviderTools` numbers them and holds every value taken from
upstream to a size: at most ``bounds.max_tool_calls`` tools per answer, inputs and
summaries rendered by :func:`bounded_value` (strings cut with ``…``, lists and objects
shortened, nesting flattened), so a 10 MB tool result gives an event of a few KB. (It is
the structured counterpart of :func:`streamcite.core.quote.quote`, which renders an
upstream value as bounded text for a message: this one keeps it JSON for an event.)

>>> bounded_json({"query": "café " * 2000}, 40)
'{"query":"café café café café café café ca… (9,968 more characters)"}'
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from itertools import chain
from operator import is_not, methodcaller
from typing import Any

import orjson

from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import clip_message
from streamcite.core.events import Event, ProviderToolEvent

__all__ = [
    "MAX_TOOL_INPUT_CHARS",
    "MAX_TOOL_SUMMARY_CHARS",
    "MAX_TOOL_TEXT_CHARS",
    "ProviderTools",
    "bounded_json",
    "bounded_value",
    "clip",
]

MAX_TOOL_INPUT_CHARS = 4096
"""Characters (about) of a provider tool's ``input`` as JSON: a search query, a short
program; longer values are cut."""
MAX_TOOL_SUMMARY_CHARS = 8192
"""Characters (about) of a result's ``summary`` as JSON."""
MAX_TOOL_TEXT_CHARS = 1000
"""Characters of one string of a summary (a URL, a title, stdout, stderr)."""
MAX_TOOL_ITEMS = 20
"""Entries of a list (search results, outputs) or keys of an object a summary shows; the
rest are counted (``"… n more"``). A search result's ``count`` is the full count."""
MAX_NAME_CHARS = 200
"""Characters of an id, a tool or server name, a status."""
MAX_DEPTH = 6
"""Nesting a rendered value keeps; deeper objects and lists are shown as ``"{…}"``/``"[…]"``."""
MAX_PARTIAL_CHARS = 64 * 1024
"""Characters of a streamed input (Anthropic ``input_json_delta``) held until its block
ends; beyond, the rest is not kept and the input is shown cut."""
_BULK = frozenset({"data", "result", "b64_json", "image_url"})
"""Keys whose string values are page contents or files: a summary shows their length
(``<key>_chars``), never the value; ``encrypted_*`` keys (opaque tokens) are left out."""
_STR = {str}
_DICT = {dict}
_NOT_NONE = partial(is_not, None)
_STR_NONE = {str, type(None)}


def clip(text: str, limit: int = MAX_TOOL_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters (``…`` and the count of the rest appended)."""
    return clip_message(text, limit)


def name_of(value: Any) -> str | None:
    """An id, name or status from upstream: a string, cut to :data:`MAX_NAME_CHARS`."""
    return clip(value, MAX_NAME_CHARS) if type(value) is str and value else None


def bounded_value(value: Any, limit: int, *, summary: bool = False) -> Any:
    """A plain-JSON copy of ``value`` whose JSON is about ``limit`` characters at most.

    Strings are cut (:func:`clip`, at most :data:`MAX_TOOL_TEXT_CHARS` each in a
    ``summary``), lists and objects keep their first :data:`MAX_TOOL_ITEMS` entries (the
    rest counted), nesting beyond :data:`MAX_DEPTH` is flattened, integers beyond 64 bits
    become strings. With ``summary``, the bulky keys (page contents, files, encrypted
    tokens) are replaced by their length. Each value visited costs at least one character
    of ``limit``, so the walk is bounded whatever ``value`` holds.

    >>> bounded_value({"encrypted_content": "Eq", "data": "page", "stdout": "x" * 5000}, 40,
    ...               summary=True)
    {'data_chars': 4, 'stdout': 'xxxx… (4,996 more characters)'}
    """
    left = [limit]
    return _walk(value, 0, left, MAX_TOOL_TEXT_CHARS if summary else limit, summary)


def _walk(v: Any, depth: int, left: list[int], text_cap: int, summary: bool) -> Any:
    """``v`` rendered within ``left[0]`` characters (spent as it goes). An object's
    strings are rendered inline (as :func:`_scalar` does), and a summary's list of flat
    objects (search results) all at once by :func:`_rows`: a 10-result search costs a
    few dozen steps, not one call per value."""
    if left[0] <= 0:
        left[0] -= 1
        return "…"
    kind = type(v)
    if kind is dict:
        if depth >= MAX_DEPTH:
            left[0] -= 3
            return "{…}"
        out: dict[str, Any] = {}
        for i, (k, x) in enumerate(v.items()):
            if i >= MAX_TOOL_ITEMS or left[0] <= 0:
                out["…"] = f"{len(v) - i} more"
                break
            key = k if type(k) is str and len(k) <= 100 else clip(str(k), 100)
            left[0] -= len(key) + 3
            if summary and key.startswith("encrypted_"):
                continue
            if summary and key in _BULK and type(x) is str:
                out[f"{key}_chars"] = len(x)
                continue
            if type(x) is str and left[0] > 0:
                n = max(1, min(text_cap, left[0]))
                s = x if len(x) <= n else clip(x, n)
                left[0] -= len(s) + 2
                out[key] = s
            else:
                out[key] = _walk(x, depth + 1, left, text_cap, summary)
        return out
    if kind is list:
        if depth >= MAX_DEPTH:
            left[0] -= 3
            return "[…]"
        if summary and depth + 1 < MAX_DEPTH and (rows := _rows(v, left, text_cap)) is not None:
            return rows
        items: list[Any] = []
        for i, x in enumerate(v):
            if i >= MAX_TOOL_ITEMS or left[0] <= 0:
                items.append(f"… {len(v) - i} more")
                break
            left[0] -= 1
            items.append(_walk(x, depth + 1, left, text_cap, summary))
        return items
    return _scalar(v, kind, left, text_cap)


def _rows(v: list[Any], left: list[int], text_cap: int) -> list[dict[str, Any]] | None:
    """A summary's list of flat objects (search results: short strings and nulls)
    rendered in a few C-level steps over the whole list, or None (the walk then goes
    entry by entry). Exactly what the walk gives: at most :data:`MAX_TOOL_ITEMS` objects
    of at most as many keys, every key a string of at most 100 characters and none a
    bulky one, every value kept a string within ``text_cap`` or null, and ``left[0]``
    still positive once all of it is spent — so it was at every step, and nothing is
    cut or elided."""
    if not v or len(v) > MAX_TOOL_ITEMS or set(map(type, v)) != _DICT:
        return None
    if max(map(len, v)) > MAX_TOOL_ITEMS:
        return None
    keys = set().union(*v)
    if not keys:
        return None
    if set(map(type, keys)) != _STR or max(map(len, keys)) > 100 or not _BULK.isdisjoint(keys):
        return None
    rows = list(map(dict, v))  # copies (the values are strings or null: nothing shared)
    for k in keys:
        if k.startswith("encrypted_"):
            deque(map(methodcaller("pop", k, None), rows), 0)
    values = list(chain.from_iterable(map(dict.values, rows)))
    kinds = set(map(type, values))
    strs = values
    if kinds != _STR:
        if not kinds <= _STR_NONE:
            return None
        strs = list(filter(_NOT_NONE, values))
    if strs and max(map(len, strs)) > text_cap:
        return None
    spent = len(v) + sum(map(len, chain.from_iterable(v))) + 3 * sum(map(len, v))
    spent += sum(map(len, strs)) + 2 * len(strs) + 5 * (len(values) - len(strs))
    if left[0] - spent <= 0:
        return None
    left[0] -= spent
    return rows


def _scalar(v: Any, kind: type, left: list[int], text_cap: int) -> Any:
    """A string, number, boolean or null rendered (``left[0]`` > 0), or another value's
    kind."""
    if kind is str:
        s = clip(v, max(1, min(text_cap, left[0])))
        left[0] -= len(s) + 2
        return s
    if v is None or kind is bool or kind is float:
        left[0] -= 5
        return v
    if kind is int:
        left[0] -= 5
        return v if -(2**63) <= v < 2**64 else str(v)[:40]
    left[0] -= 10
    return clip(str(kind.__name__), 40)  # not a JSON value: its kind only


def bounded_json(value: Any, limit: int = MAX_TOOL_INPUT_CHARS) -> str:
    """``value`` as JSON text of about ``limit`` characters at most (:func:`bounded_value`):
    always valid JSON, long values cut."""
    return orjson.dumps(bounded_value(value, limit)).decode()


def input_json(value: Any) -> str | None:
    """A tool's input from upstream as bounded JSON text: an object as it is, a string
    holding JSON (Responses ``arguments``) parsed first (kept as a JSON string if it is not
    JSON); ``None`` for no input."""
    if value is None or value == "":
        return None
    if type(value) is str:
        if len(value) <= MAX_PARTIAL_CHARS:
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                value = clip(value, MAX_TOOL_INPUT_CHARS)  # not JSON: shown as a string
        else:
            value = clip(value, MAX_TOOL_INPUT_CHARS)
    return bounded_json(value)


class ProviderTools:
    """The provider-run tools of one answer: their numbering, their bounds, their events.

    A tool is known by a key the dialect chooses (Anthropic's block id, a Responses item
    id); its call and its result share a ``tool_index``. Beyond ``bounds.max_tool_calls``
    tools one ``bad_tool_call`` error is reported and the rest are dropped."""

    __slots__ = ("_builder", "_fault", "_tools", "open", "over")

    def __init__(self, builder: AnswerBuilder, fault: Callable[[list[Event], str, str], None]):
        self._builder = builder
        self._fault = fault
        self._tools: dict[Any, list[Any]] = {}
        """key → [tool_index, name, server, result seen]."""
        self.open: list[Any] = []
        """Keys of the calls without a result yet, oldest first (at most the cap): a
        dialect pairs results by order with them (Gemini's code execution parts carry no
        id) or looks for their ids (Responses)."""
        self.over = 0
        """Tools dropped beyond the cap."""

    @property
    def count(self) -> int:
        """Tools seen so far (calls and results without a call)."""
        return len(self._tools)

    def _entry(self, key: Any, name: str | None, server: str | None, out: list[Event]) -> Any:
        """The tool ``key`` names: known (and waiting for its result), or a new one."""
        known = self._tools.get(key)
        if known is not None and not known[3]:
            return known
        cap = self._builder.bounds.max_tool_calls
        if len(self._tools) >= cap:
            if not self.over:
                msg = f"provider tool beyond the {cap:,} of an answer: the rest are dropped"
                self._fault(out, "bad_tool_call", msg)
            self.over += 1
            return None
        if known is not None:  # a second result for one id: a tool of its own
            key = (key, len(self._tools))
        entry = self._tools[key] = [len(self._tools), name, server, False]
        return entry

    def call(
        self,
        out: list[Event],
        key: Any,
        name: Any,
        tool_input: str | None,
        server: Any = None,
        status: Any = None,
    ) -> None:
        """A tool started (``tool_input``: bounded JSON text, :func:`input_json`)."""
        name_s, server_s = name_of(name), name_of(server)
        entry = self._entry(key, name_s, server_s, out)
        if entry is None:
            return
        self.open.append(key)
        ev = ProviderToolEvent(
            tool_index=entry[0],
            id=name_of(key),
            name=name_s,
            phase="call",
            input=tool_input,
            status=name_of(status),
            server=server_s,
        )
        self._emit(ev, out)

    def result(
        self,
        out: list[Event],
        key: Any,
        name: Any,
        status: Any,
        summary: dict[str, Any] | None,
        *,
        tool_input: str | None = None,
        server: Any = None,
    ) -> None:
        """A tool's result (``summary``: already bounded); name and server default to its
        call's."""
        entry = self._entry(key, name_of(name), name_of(server), out)
        if entry is None:
            return
        entry[3] = True
        if key in self.open:
            self.open.remove(key)
        ev = ProviderToolEvent(
            tool_index=entry[0],
            id=name_of(key),
            name=entry[1] or name_of(name),
            phase="result",
            input=tool_input,
            status=name_of(status),
            summary=summary,
            server=entry[2] or name_of(server),
        )
        self._emit(ev, out)

    def _emit(self, ev: ProviderToolEvent, out: list[Event]) -> None:
        out.append(ev)
        self._builder.provider_tools.append(ev)
