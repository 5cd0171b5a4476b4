"""Vertex AI's streamed function-call arguments, put back together. Sans-I/O.

With ``streamFunctionCallArguments``, Vertex AI sends a call in several ``functionCall``
parts: the first has the ``name`` and ``willContinue: true``; the next ones carry
``partialArgs`` (each a ``jsonPath`` per RFC 9535, such as ``$.location`` or
``$.stops[0].city``, and one of ``stringValue``, ``numberValue``, ``boolValue``,
``nullValue``; a ``stringValue`` with ``willContinue: true`` goes on in the next partial
argument of the same path); the part without ``willContinue`` ends the call (often
``{"functionCall": {}}``). :class:`StreamedArgs` builds the arguments object from them;
what it cannot place is an error message, never a guess.

>>> a = StreamedArgs()
>>> a.add([{"jsonPath": "$.city", "stringValue": "San ", "willContinue": True}])
>>> a.add([{"jsonPath": "$.city", "stringValue": "Francisco"}, {"jsonPath": "$.days[0]",
...        "numberValue": 3}])
>>> a.json(), a.error
('{"city":"San Francisco","days":[3]}', None)
"""

from __future__ import annotations

import re
from typing import Any

from streamcite.core.quote import dump_json, quote

__all__ = ["MAX_ARGUMENT_CHARS", "MAX_PATH_DEPTH", "StreamedArgs", "parse_json_path"]

MAX_PATH_DEPTH = 64
"""Segments of one ``jsonPath`` at most (deeper: an error)."""
MAX_ARGUMENT_CHARS = 8 * 1024 * 1024
"""Characters of string values of one call at most (the answer's own cap)."""

_SEGMENT = re.compile(
    r"""\.([A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*)"""  # .name
    r"""|\[\s*(\d{1,9})\s*\]"""  # [3]
    r"""|\[\s*'((?:[^'\\]|\\.)*)'\s*\]"""  # ['name']
    r"""|\[\s*"((?:[^"\\]|\\.)*)"\s*\]"""  # ["name"]
)
_VALUES = ("stringValue", "numberValue", "boolValue", "nullValue")


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def parse_json_path(path: str) -> list[str | int] | None:
    """A normalized JSON path's segments (member names and array indexes), else None.

    >>> parse_json_path("$.a['b c'][2]"), parse_json_path("$..a"), parse_json_path("$")
    (['a', 'b c', 2], None, [])
    """
    if not path.startswith("$"):
        return None
    segments: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if m is None or len(segments) >= MAX_PATH_DEPTH:
            return None
        name, index, quoted1, quoted2 = m.groups()
        if index is not None:
            segments.append(int(index))
        elif name is not None:
            segments.append(name)
        else:
            segments.append(_unescape(quoted1 if quoted1 is not None else quoted2))
        pos = m.end()
    return segments


class StreamedArgs:
    """The arguments of one streamed call, built from its partial arguments."""

    __slots__ = ("_continuing", "_root", "chars", "error")

    def __init__(self) -> None:
        self._root: dict[str, Any] = {}
        self._continuing: str | None = None
        """The path of a string value still going on (its last part said willContinue)."""
        self.chars = 0
        self.error: str | None = None
        """Why the arguments cannot be trusted (set once; later parts are not read)."""

    def add(self, partial_args: Any) -> None:
        """Place one part's ``partialArgs`` (an error sets :attr:`error`)."""
        if self.error is not None:
            return
        if type(partial_args) is not list:
            self.error = f"partialArgs is not an array: {quote(partial_args, 80)}"
            return
        for arg in partial_args:
            self._add_one(arg)
            if self._failed():  # (a call, not the attribute: mypy, so mypyc, would keep
                return  # it narrowed to None from the check above)

    def _failed(self) -> bool:
        return self.error is not None

    def _add_one(self, arg: Any) -> None:
        path = arg.get("jsonPath") if type(arg) is dict else None
        segments = parse_json_path(path) if type(path) is str else None
        if not segments:
            self.error = f"partial argument with a path not understood: {quote(arg, 80)}"
            return
        assert type(arg) is dict and type(path) is str
        given = [k for k in _VALUES if k in arg]
        if len(given) > 1:
            self.error = f"partial argument with {len(given)} values: {quote(arg, 80)}"
            return
        if not given:  # only a continuation flag: nothing to place
            return
        kind = given[0]
        value = arg[kind]
        if kind == "stringValue":
            if type(value) is not str:
                self.error = f"stringValue is not a string: {quote(arg, 80)}"
                return
            self.chars += len(value)
            if self.chars > MAX_ARGUMENT_CHARS:
                self.error = f"streamed arguments beyond {MAX_ARGUMENT_CHARS:,} characters"
                return
            if self._continuing == path:
                value = self._get(segments) + value
            self._continuing = path if arg.get("willContinue") is True else None
        elif kind == "numberValue":
            if type(value) not in (int, float):
                self.error = f"numberValue is not a number: {quote(arg, 80)}"
                return
        elif kind == "boolValue":
            if type(value) is not bool:
                self.error = f"boolValue is not a boolean: {quote(arg, 80)}"
                return
        else:
            value = None
        self._set(segments, value, arg)

    def _get(self, segments: list[str | int]) -> Any:
        node: Any = self._root
        for seg in segments:
            node = node[seg]
        return node

    def _set(self, segments: list[str | int], value: Any, arg: dict[str, Any]) -> None:
        node: Any = self._root
        for seg, nxt in zip(segments, [*segments[1:], None], strict=True):
            fresh: Any = value if nxt is None else ([] if type(nxt) is int else {})
            if type(seg) is int:
                if type(node) is not list or seg > len(node):
                    self.error = f"partial argument's index not in order: {quote(arg, 80)}"
                    return
                if seg == len(node):
                    node.append(fresh)
                elif nxt is None:
                    node[seg] = fresh
            else:
                if type(node) is not dict:
                    self.error = f"partial argument's path crosses a value: {quote(arg, 80)}"
                    return
                if nxt is None or seg not in node:
                    node[seg] = fresh
            if nxt is not None:
                node = node[seg]
                if type(node) is not (list if type(nxt) is int else dict):
                    self.error = f"partial argument's path crosses a value: {quote(arg, 80)}"
                    return

    def json(self) -> str:
        """The arguments as a JSON object (``{}`` when none came, or when the paths nest
        deeper than JSON can be written: then :attr:`error` says so)."""
        text = dump_json(self._root)
        if text is None:
            self.error = "partial arguments nested too deeply"
            return "{}"
        return text
