"""OpenAI Responses API SSE → events. Sans-I/O.

``response.created`` → ``meta``; ``response.output_text.delta`` → ``token``;
``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta`` →
``reasoning``; a ``function_call`` item (``response.output_item.added``) and its
``response.function_call_arguments.delta`` → ``tool_call``; ``response.refusal.delta`` →
``refusal``; ``response.output_text.annotation.added`` → a ``citations`` event at once
(``url_citation`` and ``container_file_citation`` with their span ``start_index:end_index``
of the content part, ``file_citation`` without one); ``response.completed`` /
``response.incomplete`` → ``usage`` and ``finish``; ``response.failed`` and ``error`` →
``error`` (the answer cut). A hosted tool's item (``web_search_call``, ``file_search_call``,
``code_interpreter_call``, ``image_generation_call``, ``mcp_call``) → ``provider_tool``: its
``call`` at ``response.output_item.added``, its ``result`` (with the input, which some
tools send only then) at ``response.output_item.done``. The ``.done`` / ``.added`` echoes
of what the deltas carried, ``response.in_progress`` and the hosted tools' progress events
are ignored (see docs/provider-streams.md).
"""

from __future__ import annotations

from typing import Any

from streamcite.core.answer import AnswerBuilder
from streamcite.core.bounds import REPEAT_BYTES_PER_CHAR, StreamBounds
from streamcite.core.dialects.base import JSONDecodeError, StreamState, loads
from streamcite.core.dialects.protocol import Method
from streamcite.core.dialects.provider_tool_shapes import HOSTED_ITEMS, responses_item
from streamcite.core.dialects.sequenced import IGNORE, REASON, TEXT, SequencedState, learn
from streamcite.core.events import Event
from streamcite.core.markers import MarkerMode
from streamcite.core.models import Citation
from streamcite.core.quote import quote
from streamcite.core.sse import OVERFLOW, RawEvent

__all__ = ["REPEAT_BYTES_PER_CHAR", "ResponsesInterpreter", "event_limit"]


def event_limit(max_event_size: int, bounds: StreamBounds) -> int:
    """The SSE decoder's per-event limit for a Responses stream.

    ``response.output_text.done``, ``response.output_item.done`` and
    ``response.completed`` each repeat the whole text the deltas carried (the last also
    the usage and the status): an answer within ``bounds.max_answer_chars`` must not
    make them too large to read. So the limit is ``max_event_size`` plus the UTF-8 of
    an answer at the cap; the answer cap bounds what the answer holds, one event at a
    time is held (docs/provider-streams.md "Dialects"). What is parsed is held to less:
    an event beyond ``bounds.max_event_bytes`` is parsed only within
    :meth:`~streamcite.core.bounds.StreamBounds.repeat_limit` of the answer so far.

    >>> event_limit(1 << 16, StreamBounds(max_answer_chars=1000))
    69536
    """
    return max_event_size + REPEAT_BYTES_PER_CHAR * bounds.max_answer_chars


_IGNORED = frozenset(
    {
        "response.in_progress",
        "response.queued",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.function_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.generating",
        "response.image_generation_call.partial_image",
        "response.image_generation_call.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.output_text.logprobs",
    }
)
_SKIM = 1 << 16
"""An event larger than this whose SSE name is an ignored type, and whose data says
so from its first key, is passed without being parsed (``.done`` echoes of a large
answer: orjson's peak is ~13 times the bytes it parses)."""
_MAX_LEARNED = 16
"""Text-delta templates written per stream: one per text part in a plain stream; a stream
whose deltas differ in more than their text stops being learned (parsed as before)."""


def _ignored_repeat(name: bytes, data: bytes) -> bool:
    """``name`` is an ignored event type and ``data`` starts with that ``type``."""
    return name.decode("ascii", "replace") in _IGNORED and data.startswith(b'{"type":"%s"' % name)


_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_MAPPED = frozenset({"type", "url", "title", "filename", "start_index", "end_index"})


def _str(v: Any) -> str | None:
    return v if type(v) is str else None


class ResponsesInterpreter(SequencedState):
    """Interprets one OpenAI Responses stream (``/v1/responses``, ``stream: true``)."""

    __slots__ = ("_data", "_learned", "_parts", "_texts", "error_seen")

    dialect = "responses"

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._parts: dict[tuple[Any, Any], int] = {}
        """(item id, content index) → the character where that text part starts."""
        self._texts = 0
        self._learned = 0
        """Templates written so far (at most :data:`_MAX_LEARNED`)."""
        self._data = b""
        """The bytes of the event being handled (none in a whole body)."""
        self.error_seen: str | None = None

    def event(self, name: bytes, obj: dict[str, Any], out: list[Event]) -> None:
        self.dispatch(_TABLE, _IGNORED, obj, out)

    def _general(self, item: RawEvent, out: list[Event]) -> None:
        """An event the hot loop did not take: parsed and handed to its type's handler
        (with its bytes in :attr:`_data`, for a delta's template), anything else the
        general way of :class:`StreamState`."""
        if item is OVERFLOW or item.__class__ is not tuple:  # (identity first: base.py)
            StreamState.feed_raw(self, [item], out)
            return
        data = item[1]
        if len(data) > _SKIM and (
            _ignored_repeat(item[0], data)
            or self._echo(item[0], data)
            or self._oversized(data, out)
        ):
            return
        try:
            obj = loads(data)
        except JSONDecodeError:
            StreamState.feed_raw(self, [item], out)
            return
        if obj.__class__ is not dict:
            self.fault(out, "bad_chunk", f"event is not a JSON object: {data[:120]!r}")
            return
        kind = obj.get("type")
        handler = _TABLE.get(kind) if kind.__class__ is str else None
        if handler is not None:
            self._data = data
            handler(self, obj, out)
        elif kind.__class__ is not str or kind not in _IGNORED:
            self.event(item[0], obj, out)

    def _oversized(self, data: bytes, out: list[Event]) -> bool:
        """``data`` is larger than an event repeating the answer so far may be (its
        :meth:`~streamcite.core.bounds.StreamBounds.repeat_limit`): not parsed (orjson
        would spend ~13-30 times its bytes), ``event_too_large``, the answer cut."""
        b = self.builder.bounds
        if len(data) <= b.max_event_bytes:
            return False
        limit = b.repeat_limit(self.builder.answer_chars())
        if len(data) <= limit:
            return False
        msg = f"an event of {len(data):,} bytes (beyond {limit:,} for this answer) was not read"
        self.fault(out, "event_too_large", msg, "sse")
        self.cut = True
        return True

    def _echo(self, name: bytes, data: bytes) -> bool:
        """A large ``response.output_item.done`` of no open hosted tool (a message's echo
        of its text): passed unparsed. A hosted tool's item names its id first."""
        if name != b"response.output_item.done":
            return False
        open_ids = self._ptools.open if self._ptools is not None else ()
        head = data[:4096]
        return not any(type(k) is str and k.encode() in head for k in open_ids)

    def _learn(self, obj: dict[str, Any], action: int) -> None:
        """The template of this delta's type (:func:`~.sequenced.learn`) from it and its
        bytes (:attr:`_data`; none in a whole body); a stream whose deltas differ in more
        than their text, sequence number and obfuscation stops being learned after a few
        tries. (Bytes of another event would not match the template written from ``obj``,
        which is exactly ``obj``'s fields: never a wrong template.)"""
        if self._learned < _MAX_LEARNED and self._data:
            self._learned += 1
            if (tpl := learn(obj, self._data, action)) is not None:
                self._tpls[obj["type"].encode()] = tpl

    def _ignored_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        self._learn(obj, IGNORE)  # a template to pass the next ones unparsed

    def _created(self, obj: dict[str, Any], out: list[Event]) -> None:
        r = obj.get("response")
        if type(r) is not dict:
            self.fault(out, "bad_chunk", f"response.created without a response: {quote(obj)}")
            return
        self.meta(r.get("id"), r.get("model"), r.get("created_at"), out)

    def _item_added(self, obj: dict[str, Any], out: list[Event]) -> None:
        item = obj.get("item")
        if type(item) is not dict:
            self.fault(out, "bad_chunk", f"output item is not an object: {quote(obj)}")
            return
        if item.get("type") == "function_call":
            iid, cid, name = item.get("id"), _str(item.get("call_id")), _str(item.get("name"))
            args = item.get("arguments")
            if type(iid) is not str or cid is None or name is None:
                self.fault(out, "bad_tool_call", f"function_call not understood: {quote(item)}")
                return
            self.tool(iid, cid, name, args if type(args) is str else "", out)
        elif item.get("type") in HOSTED_ITEMS:
            name, tool_input, _ = responses_item(item)
            status, server = item.get("status"), item.get("server_label")
            self.ptools().call(out, item.get("id"), name, tool_input, server, status)
        # message and reasoning items: their content comes as deltas

    def _item_done(self, obj: dict[str, Any], out: list[Event]) -> None:
        item = obj.get("item")
        if type(item) is dict and item.get("type") in HOSTED_ITEMS:
            name, tool_input, summary = responses_item(item)
            status, server = item.get("status"), item.get("server_label")
            if type(item.get("error")) is str and item["error"]:
                status = "failed"
            self.ptools().result(
                out, item.get("id"), name, status, summary, tool_input=tool_input, server=server
            )
        # other items: echoes of what their deltas carried

    def _part_key(self, obj: dict[str, Any]) -> tuple[Any, Any]:
        key = (obj.get("item_id"), obj.get("content_index"))
        if key not in self._parts and len(self._parts) < 4096:
            self._parts[key] = self.chars0
        return key

    def _part_added(self, obj: dict[str, Any], out: list[Event]) -> None:
        part = obj.get("part")
        if type(part) is dict and part.get("type") == "output_text":
            self._part_key(obj)

    def _text_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        text = obj.get("delta")
        if type(text) is not str:
            self.fault(out, "bad_chunk", f"output_text delta is not a string: {quote(obj)}")
            return
        if self._texts and (obj.get("item_id"), obj.get("content_index")) in self._parts:
            self._learn(obj, TEXT)  # a delta of a known part: its template
        else:
            self._part_key(obj)
        if text:
            self._texts += 1
            self.token(0, text, out)

    def _annotation(self, obj: dict[str, Any], out: list[Event]) -> None:
        note = obj.get("annotation")
        if type(note) is not dict:
            self.fault(out, "bad_annotation", f"annotation is not an object: {quote(obj)}")
            return
        kind = note.get("type")
        url, title, fid = _str(note.get("url")), _str(note.get("title")), _str(note.get("file_id"))
        start, end = note.get("start_index"), note.get("end_index")
        if kind == "url_citation" and url is not None:
            key: Any = ("url", url)
        elif kind in ("file_citation", "container_file_citation", "file_path") and fid:
            key = ("file", fid)
            title = _str(note.get("filename")) or title
        else:
            self.fault(out, "bad_annotation", f"annotation not understood: {quote(note)}")
            return
        meta = {k: v for k, v in note.items() if k not in _MAPPED}
        if kind != "url_citation":
            meta["type"] = kind
        cit = Citation(document_title=title, source_url=url, provider_metadata=meta or None)
        doc = self.cite(key, cit, out)
        if doc is None:
            return
        if start is not None or end is not None:
            if type(start) is not int or type(end) is not int:
                self.fault(out, "bad_annotation", f"span is not integers: {quote(note)}")
            else:
                base = self._parts.get((obj.get("item_id"), obj.get("content_index")), 0)
                # No quoted passage in any Responses annotation: cited_text stays None.
                self.span(doc, base + start, base + end, out, None, meta)
        self.emit_citations(out)

    def _reasoning_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        text = obj.get("delta")
        if type(text) is not str:
            self.fault(out, "bad_chunk", f"reasoning delta is not a string: {quote(obj)}")
            return
        self._learn(obj, REASON)
        if text:
            self.reasoning(0, text, out)

    def _refusal_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        text = obj.get("delta")
        if type(text) is not str:
            self.fault(out, "bad_chunk", f"refusal delta is not a string: {quote(obj)}")
        elif text:
            self.refusal(0, text, out)

    def _arguments_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        iid, part = obj.get("item_id"), obj.get("delta")
        if type(part) is not str or type(iid) is not str:
            self.fault(out, "bad_tool_call", f"arguments delta not understood: {quote(obj)}")
        elif (0, iid) not in self._tool_keys:
            # No function_call item announced it: no name, no call id. Not a call.
            self.fault(out, "bad_tool_call", f"arguments delta of an unknown item {quote(iid, 60)}")
        elif part:
            self.tool(iid, None, None, part, out)

    def _usage_of(self, r: dict[str, Any], out: list[Event]) -> None:
        u = r.get("usage")
        if type(u) is dict:
            self.usage(u.get("input_tokens"), u.get("output_tokens"), u.get("total_tokens"), out)
        elif u is not None:
            self.fault(out, "bad_chunk", f"usage is not an object: {quote(u)}")

    def _completed(self, obj: dict[str, Any], out: list[Event]) -> None:
        r = obj.get("response")
        if type(r) is not dict:
            self.fault(out, "bad_chunk", f"{obj.get('type')} without a response: {quote(obj)}")
            r = {}
        self.meta(r.get("id"), r.get("model"), r.get("created_at"), out)
        self._usage_of(r, out)
        status = _str(r.get("status")) or "completed"
        details = r.get("incomplete_details")
        why = _str(details.get("reason")) if type(details) is dict else None
        if status == "incomplete" or why:
            self.finish(0, _INCOMPLETE.get(why or "", "length"), why or status, out)
        elif self.has_tools:
            self.finish(0, "tool_calls", status, out)
        elif self.builder.has_refusal() and not self._texts:
            self.finish(0, "refusal", status, out)
        else:
            self.finish(0, "stop", status, out)
        self.end(out)

    def _failed(self, obj: dict[str, Any], out: list[Event]) -> None:
        r = obj.get("response")
        r = r if type(r) is dict else {}
        err = r.get("error")
        if type(err) is dict:
            code = _str(err.get("code")) or "response_failed"
            if code != self.error_seen:
                self.provider_error(code, err.get("message"), None, out)
        elif self.error_seen is None:
            self.provider_error("response_failed", "the response failed", None, out)
        self.cut = True
        self._usage_of(r, out)
        self.finish(0, "error", _str(r.get("status")) or "failed", out)
        self.end(out)

    def _error(self, obj: dict[str, Any], out: list[Event]) -> None:
        # Documented shape: code/message at the top; some servers nest an error object.
        nested = obj.get("error")
        err: dict[str, Any] = nested if type(nested) is dict else obj
        code = _str(err.get("code")) or _str(err.get("type")) or "upstream_error"
        if code == "error":
            code = "upstream_error"
        self.error_seen = code
        self.provider_error(code, err.get("message"), None, out)

    # -- a whole body --------------------------------------------------------------

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """A non-streaming ``response`` body, read as the stream it would have been."""
        if out is None:
            out = []
        if type(obj) is not dict:
            self.fault(out, "bad_chunk", f"response is not a JSON object: {quote(obj)}")
            return out
        if type(obj.get("error")) is dict and obj.get("object") != "response":
            self._error(obj, out)
            self.done = True
            return out
        self._created({"response": obj}, out)
        output = obj.get("output")
        if type(output) is not list:
            self.malformed(out, f"response without an output array: {quote(obj)}")
            output = []
        for item in output:
            if type(item) is not dict:
                self.fault(out, "bad_chunk", f"output item is not an object: {quote(item)}")
                continue
            self._body_item(item, out)
        if obj.get("status") == "failed":
            self._failed({"response": obj}, out)
        else:
            self._completed({"response": obj}, out)
        return out

    def _body_item(self, item: dict[str, Any], out: list[Event]) -> None:
        kind, iid = item.get("type"), item.get("id")
        if kind == "function_call":
            args = item.get("arguments")
            self._item_added({"item": {**item, "arguments": ""}}, out)
            if type(args) is str and type(iid) is str:
                self._arguments_delta({"item_id": iid, "delta": args}, out)
        elif kind in HOSTED_ITEMS:
            self._item_added({"item": item}, out)
            self._item_done({"item": item}, out)
        elif kind == "reasoning":
            for part in item.get("summary") or ():
                if type(part) is dict:
                    self._reasoning_delta({"delta": part.get("text")}, out)
            for part in item.get("content") or ():
                if type(part) is dict and part.get("type") == "reasoning_text":
                    self._reasoning_delta({"delta": part.get("text")}, out)
        elif kind == "message":
            content = item.get("content")
            for i, part in enumerate(content if type(content) is list else ()):
                ptype = part.get("type") if type(part) is dict else None
                if ptype == "output_text":
                    where = {"item_id": iid, "content_index": i}
                    self._text_delta({**where, "delta": part.get("text")}, out)
                    for note in part.get("annotations") or ():
                        self._annotation({**where, "annotation": note}, out)
                elif ptype == "refusal":
                    self._refusal_delta({"delta": part.get("refusal")}, out)
                else:
                    self.unknown(f"content part {ptype}", part, out)


_TABLE: dict[str, Method] = {
    "response.created": ResponsesInterpreter._created,
    "response.output_item.added": ResponsesInterpreter._item_added,
    "response.output_item.done": ResponsesInterpreter._item_done,
    "response.content_part.added": ResponsesInterpreter._part_added,
    "response.output_text.delta": ResponsesInterpreter._text_delta,
    "response.output_text.annotation.added": ResponsesInterpreter._annotation,
    "response.reasoning_summary_text.delta": ResponsesInterpreter._reasoning_delta,
    "response.reasoning_text.delta": ResponsesInterpreter._reasoning_delta,
    "response.function_call_arguments.delta": ResponsesInterpreter._arguments_delta,
    "response.refusal.delta": ResponsesInterpreter._refusal_delta,
    "response.code_interpreter_call_code.delta": ResponsesInterpreter._ignored_delta,
    "response.mcp_call_arguments.delta": ResponsesInterpreter._ignored_delta,
    "response.completed": ResponsesInterpreter._completed,
    "response.incomplete": ResponsesInterpreter._completed,
    "response.failed": ResponsesInterpreter._failed,
    "error": ResponsesInterpreter._error,
}
"""Each event type's handler (built once: a per-stream table of bound methods cost
more than a short stream's text deltas)."""
