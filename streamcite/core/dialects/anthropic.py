"""Anthropic Messages SSE → events. Sans-I/O.

``message_start`` → ``meta`` (and the input tokens); a ``text`` block's ``text_delta`` →
``token``; ``thinking_delta`` → ``reasoning``; a ``tool_use`` block and its
``input_json_delta`` → ``tool_call``; ``citations_delta`` → a ``citations`` event at
once (the new source), and at the block's ``content_block_stop`` its span: the whole
text block the citation belongs to, with that citation's ``cited_text`` and location
(``provider_metadata``) — one span per citation, so a source cited twice keeps both quotes; ``message_delta`` → ``usage`` and ``finish``;
``message_stop`` ends the stream; ``error`` (``overloaded_error``...) → ``error``.
The server tools' blocks (``server_tool_use``, ``mcp_tool_use`` and their
``input_json_delta``, at their ``content_block_stop``; every ``*_tool_result``) →
``provider_tool`` (:mod:`.provider_tools`). Ignored: ``ping``, ``signature_delta``,
``redacted_thinking``, ``container_upload``, ``compaction`` blocks and their
``compaction_delta``. A block,
delta or event type this module does not know (a newer API version's) is skipped with
what belongs to it and counted on the answer (``skipped_types``), never an error.
"""

from __future__ import annotations

from typing import Any

from streamcite.core.answer import AnswerBuilder
from streamcite.core.dialects.base import (
    MAX_SPANS,
    JSONDecodeError,
    StreamState,
    loads,
)
from streamcite.core.dialects.hotloop import TemplatedState
from streamcite.core.dialects.protocol import Method
from streamcite.core.dialects.provider_tool_shapes import anthropic_input, anthropic_result
from streamcite.core.dialects.provider_tools import MAX_PARTIAL_CHARS
from streamcite.core.events import Event
from streamcite.core.markers import MarkerMode
from streamcite.core.models import Citation
from streamcite.core.quote import dump_json, quote
from streamcite.core.sse import OVERFLOW, RawEvent

__all__ = ["AnthropicInterpreter", "finish_reason", "status_of"]

_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
}
_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_IGNORED = frozenset({"ping"})
_TEXT_PADS = frozenset(b"}%s}" % (b" " * n) for n in range(1, 65))
"""The paddings of a text delta's end Anthropic sends (``TemplatedState._PADS``). Made
once here: mypyc makes a class attribute's value anew for each instance."""
_SERVER_TOOL_BLOCKS = frozenset(
    {
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
"""Blocks of the tools Anthropic runs itself (web search and fetch, code execution, tool
search, the MCP connector): their inputs and results, read as ``provider_tool`` events.
Any other ``*_tool_use`` / ``*_tool_result`` block but ``tool_use`` is one too (the API's
naming for server tools)."""
_IGNORED_BLOCKS = _SERVER_TOOL_BLOCKS | {"redacted_thinking", "compaction"}
"""Blocks read as documented ignores: server tools', ``redacted_thinking`` (encrypted) and
``compaction`` (the API's summary of earlier turns, sent back on the next request)."""
_IGNORED_DELTAS = frozenset({"signature_delta", "compaction_delta"})
_SKIPPED = "skipped"
"""The type recorded for a block of an unknown type: its deltas are skipped with it."""
_HEAD = b'{"type":"content_block_delta","index":'
_MID = b',"delta":{"type":"text_delta","text":"'
_THINK = b',"delta":{"type":"thinking_delta","thinking":"'
"""A text delta's bytes, as Anthropic sends them: ``_HEAD``, the block index, ``_MID``,
the text, ``"}}`` (padding spaces before the last brace: dialects/hotloop.py)."""
# Citation fields that have a Citation field of their own (the rest: provider_metadata).
_MAPPED = frozenset({"cited_text", "title", "document_title", "url", "source"})
_CHECKED = ("cited_text", "url", "title", "document_title", "source")
"""A citation's string fields, in the order a wrong one is reported."""
_STR_NONE = frozenset({str, type(None)})


def _ignored_block(kind: Any) -> bool:
    """A block type read as a documented ignore (:data:`_IGNORED_BLOCKS`, or a server
    tool's ``*_tool_use`` / ``*_tool_result`` of a type newer than this list)."""
    if kind in _IGNORED_BLOCKS:
        return True
    return type(kind) is str and kind != "tool_use" and kind.endswith(("_tool_use", "_tool_result"))


def finish_reason(stop_reason: str) -> str:
    """Anthropic's ``stop_reason`` in the chat vocabulary (unknown ones: ``stop``)."""
    return _REASONS.get(stop_reason, "stop")


def status_of(error_type: str) -> int | None:
    """The HTTP status Anthropic documents for an error type (529 for ``overloaded_error``)."""
    return _STATUS.get(error_type)


def _citation_key(c: dict[str, Any]) -> tuple[Any, str | None, Any] | str:
    """A citation object → (its source key, its ``cited_text``, its ``url`` or
    ``source``), or what is wrong (each field read once: a source cited again is
    known by its key before any :class:`Citation` is built)."""
    kind = c.get("type")
    if type(kind) is not str:
        return "type is not a string"
    cited, url, source = c.get("cited_text"), c.get("url"), c.get("source")
    checked = (cited, url, c.get("title"), c.get("document_title"), source)
    if not _STR_NONE.issuperset(map(type, checked)):
        for k, v in zip(_CHECKED, checked, strict=True):
            if v is not None and type(v) is not str:
                return f"{k} is not a string"
    if kind == "web_search_result_location":
        key: Any = ("url", url)
    elif kind == "search_result_location":
        key = ("search", source, c.get("search_result_index"))
        url = url if url is not None else source
    elif kind in ("char_location", "page_location", "content_block_location"):
        fid = c.get("file_id")
        key = ("file", fid) if type(fid) is str else ("doc", c.get("document_index"))
    else:
        return f"citation type {kind[:40]!r} not understood"
    return key, cited, url


class AnthropicInterpreter(TemplatedState):
    """Interprets one Anthropic Messages stream (``/v1/messages``, ``stream: true``)."""

    __slots__ = ("_blocks", "_calls", "_input_tokens")

    dialect = "anthropic"
    _END = b'"}}'
    _PADS = _TEXT_PADS

    def __init__(self, builder: AnswerBuilder | None = None, marker_mode: MarkerMode = "keep"):
        super().__init__(builder, marker_mode)
        self._blocks: dict[int, list[Any]] = {}
        """Per block index: [type, start character, its citations: (document index,
        cited text, provider metadata) each]."""
        self._calls: dict[int, list[Any]] = {}
        """Per block index of a server tool's call: [its block, input fragments, their
        characters] until its ``content_block_stop``."""
        self._input_tokens: Any = None

    def event(self, name: bytes, obj: dict[str, Any], out: list[Event]) -> None:
        self.dispatch(_TABLE, _IGNORED, obj, out)

    def _general(self, item: RawEvent, out: list[Event]) -> None:
        """An event the hot loop did not take, parsed, and handed to what :meth:`event`
        would call for it with no call in between: a block's delta read here (a text or
        thinking delta also writes its block's template for the hot loop; a text delta
        of any block is a token), any other event to its type's handler. A delta whose
        ``index`` is not an integer (``0.0``, ``true``) or whose fields are not of their
        type goes to :meth:`_block_delta`, which refuses it."""
        if item is OVERFLOW or item.__class__ is not tuple:  # (identity first: base.py)
            StreamState.feed_raw(self, [item], out)
            return
        data = item[1]
        try:
            obj = loads(data)
        except JSONDecodeError:
            StreamState.feed_raw(self, [item], out)
            return
        if obj.__class__ is not dict:
            self.fault(out, "bad_chunk", f"event is not a JSON object: {data[:120]!r}")
            return
        kind = obj.get("type")
        if (
            kind == "content_block_delta"
            and (d := obj.get("delta")).__class__ is dict
            and (idx := obj.get("index")).__class__ is int
        ):
            dk = d.get("type")
            if dk == "text_delta" and (t := d.get("text")).__class__ is str:
                if idx in self._blocks:
                    self._pre = b"%s%d%s" % (_HEAD, idx, _MID)
                if t:
                    self.token(0, t, out)
                return
            if dk == "thinking_delta" and (t := d.get("thinking")).__class__ is str:
                self._rpre = b"%s%d%s" % (_HEAD, idx, _THINK)  # the thinking deltas' template
                if t:
                    self.reasoning(0, t, out)
                return
            if dk == "input_json_delta":
                self._json_delta(idx, d.get("partial_json"), obj, out)
                return
            if dk == "citations_delta":
                self._cite(idx, d.get("citation"), out)
                return
            if dk == "signature_delta":
                return  # ignored (a thinking block's signature)
        handler = _TABLE.get(kind) if kind.__class__ is str else None
        if handler is not None:
            handler(self, obj, out)
        elif kind.__class__ is not str or kind not in _IGNORED:
            self.event(item[0], obj, out)

    def _message_start(self, obj: dict[str, Any], out: list[Event]) -> None:
        msg = obj.get("message")
        if type(msg) is not dict:
            self.fault(out, "bad_chunk", f"message_start without a message: {quote(obj)}")
            return
        self.meta(msg.get("id"), msg.get("model"), None, out)
        usage = msg.get("usage")
        if type(usage) is dict:
            self._input_tokens = usage.get("input_tokens")

    def _block_start(self, obj: dict[str, Any], out: list[Event]) -> None:
        idx, block = obj.get("index"), obj.get("content_block")
        if type(idx) is not int or type(block) is not dict:
            self.fault(out, "bad_chunk", f"content_block_start not understood: {quote(obj)}")
            return
        kind = block.get("type")
        self._blocks[idx] = [kind, self.chars0, []]
        if kind == "text":
            # The template of its text deltas written now (as _general would at the first
            # one): its first delta is taken by the hot loop too.
            self._pre = b"%s%d%s" % (_HEAD, idx, _MID)
            text = block.get("text")
            if type(text) is str and text:
                self.token(0, text, out)
            cites = block.get("citations")
            if type(cites) is list:  # a whole body's block carries its citations
                for c in cites:
                    self._cite(idx, c, out)
        elif kind == "thinking":
            self._rpre = b"%s%d%s" % (_HEAD, idx, _THINK)  # (likewise)
            text = block.get("thinking")
            if type(text) is str and text:
                self.reasoning(0, text, out)
        elif kind == "tool_use":
            cid, name, args = block.get("id"), block.get("name"), block.get("input")
            if type(cid) is not str or type(name) is not str:
                self.fault(out, "bad_tool_call", f"tool_use block not understood: {quote(block)}")
                return
            arguments = dump_json(args) if args else ""
            if arguments is None:
                self.fault(
                    out, "bad_tool_call", f"tool_use input nested too deeply: {quote(block)}"
                )
                return
            if not self.tool(idx, cid, name, arguments, out):
                self._blocks[idx][0] = _SKIPPED  # its deltas dropped with it
        elif type(kind) is str and kind.endswith(("_tool_result", "_tool_use")):
            self._server_block(idx, kind, block, out)
        elif not _ignored_block(kind):
            self._blocks[idx][0] = _SKIPPED
            self.unknown(
                f"content block {kind[:40] if type(kind) is str else quote(kind, 40)}", block, out
            )

    def _server_block(self, idx: int, kind: str, block: dict[str, Any], out: list[Event]) -> None:
        """A server tool's block: a result → ``provider_tool`` at once; a call
        (``server_tool_use``, ``mcp_tool_use``) → held until its ``content_block_stop``
        (its input streams as ``input_json_delta``)."""
        if kind.endswith("_tool_result"):
            key, name, status, summary = anthropic_result(block)
            self.ptools().result(out, key, name, status, summary)
        elif len(self._calls) < 4096:
            self._calls[idx] = [block, [], 0]

    def _block_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        idx, delta = obj.get("index"), obj.get("delta")
        if type(idx) is not int or type(delta) is not dict:
            self.fault(out, "bad_chunk", f"content_block_delta not understood: {quote(obj)}")
            return
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if type(text) is not str:
                self.fault(out, "bad_chunk", f"text_delta text is not a string: {quote(obj)}")
            elif text:
                self.token(0, text, out)
        elif kind == "thinking_delta":
            text = delta.get("thinking")
            if type(text) is not str:
                self.fault(out, "bad_chunk", f"thinking_delta is not a string: {quote(obj)}")
            elif text:
                self.reasoning(0, text, out)
        elif kind == "input_json_delta":
            self._json_delta(idx, delta.get("partial_json"), obj, out)
        elif kind == "citations_delta":
            self._cite(idx, delta.get("citation"), out)
        elif kind not in _IGNORED_DELTAS and not self._in_skipped(idx):
            self.unknown(f"delta {str(kind)[:40]}", delta, out)

    def _json_delta(self, idx: int, part: Any, obj: dict[str, Any], out: list[Event]) -> None:
        block = self._blocks.get(idx)
        if type(part) is not str:
            self.fault(out, "bad_chunk", f"partial_json is not a string: {quote(obj)}")
        elif block is not None and block[0] == "tool_use":
            if part:
                self.tool(idx, None, None, part, out)
        elif block is None:
            self.fault(out, "bad_chunk", f"input_json_delta of an unknown block {idx}")
        elif block[0] in ("text", "thinking"):
            msg = f"input_json_delta of {quote(block[0], 40)} block {idx} (not a tool use): dropped"
            self.fault(out, "bad_chunk", msg)
        elif (call := self._calls.get(idx)) is not None and part and call[2] <= MAX_PARTIAL_CHARS:
            call[1].append(part[: MAX_PARTIAL_CHARS + 1 - call[2]])  # a server tool's input:
            call[2] += len(part)  # beyond MAX_PARTIAL_CHARS not kept (shown cut)
        # else a skipped block's: ignored with its block

    def _in_skipped(self, idx: int) -> bool:
        """Block ``idx`` is of a type skipped or ignored (its deltas go with it)."""
        block = self._blocks.get(idx)
        return block is not None and (block[0] == _SKIPPED or _ignored_block(block[0]))

    def _cite(self, idx: int, c: Any, out: list[Event]) -> None:
        block = self._blocks.get(idx)
        if type(c) is not dict or block is None:
            self.fault(out, "bad_citations", f"citation not understood: {quote(c)}")
            return
        got = _citation_key(c)
        if isinstance(got, str):
            self.fault(out, "bad_citations", f"citation {got}: {quote(c)}")
            return
        key, passage, url = got
        meta = {k: v for k, v in c.items() if k not in _MAPPED} or None
        doc = self._cite_keys.get(key)  # a source cited again: no Citation built
        if doc is None:
            title = c.get("title")
            cit = Citation(
                cited_text=passage,
                document_title=title if title is not None else c.get("document_title"),
                source_url=url,
                provider_metadata=meta,
            )
            doc = self.cite(key, cit, out)
            if doc is None:
                return
        cited = (doc, passage, meta)
        if cited in block[2]:
            pass
        elif len(block[2]) < MAX_SPANS:  # each passage of a source cited in this block
            block[2].append(cited)
        else:
            self.span_over(out)
        self.emit_citations(out)  # live: a new source as soon as it is cited (once)

    def _block_stop(self, obj: dict[str, Any], out: list[Event]) -> None:
        idx = obj.get("index")
        block = self._blocks.get(idx) if type(idx) is int else None
        if block is None:
            self.fault(out, "bad_chunk", f"content_block_stop of an unknown block: {quote(obj)}")
            return
        assert idx is not None  # (an int: it names a block)
        call = self._calls.pop(idx, None) if self._calls else None
        if call is not None:
            tool_input = anthropic_input(call[0], call[1], call[2] > MAX_PARTIAL_CHARS)
            b = call[0]
            self.ptools().call(out, b.get("id"), b.get("name"), tool_input, b.get("server_name"))
        if block[2]:
            added = self.spans(block[2], block[1], self.chars0, out)
            block[2] = []
            if added:
                self.emit_citations(out)
        if block[0] != "text":
            del self._blocks[idx]  # stopped: nothing more of it is read (kept: text blocks)
        if len(self._blocks) > 4096:
            self._blocks = {k: v for k, v in self._blocks.items() if v[0] == "tool_use"}

    def _message_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        delta, usage = obj.get("delta"), obj.get("usage")
        if type(delta) is not dict:
            self.fault(out, "bad_chunk", f"message_delta without a delta: {quote(obj)}")
            delta = {}
        if type(usage) is dict:
            prompt = usage.get("input_tokens")
            if prompt is None:
                prompt = self._input_tokens
            self.usage(prompt, usage.get("output_tokens"), None, out)
        elif usage is not None:
            self.fault(out, "bad_chunk", f"usage is not an object: {quote(usage)}")
        reason = delta.get("stop_reason")
        if type(reason) is str:
            self.finish(0, finish_reason(reason), reason, out)
        elif reason is not None:
            self.fault(out, "bad_chunk", f"stop_reason is not a string: {quote(reason, 60)}")

    def _message_stop(self, obj: dict[str, Any], out: list[Event]) -> None:
        self.end(out)

    def _error(self, obj: dict[str, Any], out: list[Event]) -> None:
        err = obj.get("error")
        if type(err) is not dict:
            err = {"type": "upstream_error", "message": quote(err, 300)}
        kind = err.get("type")
        code = kind if type(kind) is str else "upstream_error"
        self.provider_error(code, err.get("message"), status_of(code), out)

    # -- a whole body --------------------------------------------------------------

    def feed_completion(self, obj: Any, out: list[Event] | None = None) -> list[Event]:
        """A non-streaming ``message`` body, read as the stream it would have been."""
        if out is None:
            out = []
        if type(obj) is not dict:
            self.fault(out, "bad_chunk", f"response is not a JSON object: {quote(obj)}")
            return out
        if obj.get("type") == "error":
            self._error(obj, out)
            self.done = True
            return out
        self._message_start({"message": obj}, out)
        content = obj.get("content")
        if type(content) is not list:
            self.fault(out, "bad_chunk", f"content is not an array: {quote(content)}")
            content = []
        for i, block in enumerate(content):
            if type(block) is dict and block.get("type") == "text":
                cites = block.get("citations")
                self._block_start({"index": i, "content_block": {"type": "text"}}, out)
                for c in cites if type(cites) is list else ():
                    self._cite(i, c, out)
                text = block.get("text")
                delta = {"type": "text_delta", "text": text}
                self._block_delta({"index": i, "delta": delta}, out)
            else:
                self._block_start({"index": i, "content_block": block}, out)
            self._block_stop({"index": i}, out)
        delta = {"stop_reason": obj.get("stop_reason")}
        self._message_delta({"delta": delta, "usage": obj.get("usage")}, out)
        self.end(out)
        return out


_TABLE: dict[str, Method] = {
    "message_start": AnthropicInterpreter._message_start,
    "content_block_start": AnthropicInterpreter._block_start,
    "content_block_delta": AnthropicInterpreter._block_delta,
    "content_block_stop": AnthropicInterpreter._block_stop,
    "message_delta": AnthropicInterpreter._message_delta,
    "message_stop": AnthropicInterpreter._message_stop,
    "error": AnthropicInterpreter._error,
}
"""Each event type's handler (built once: a per-stream table of bound methods cost
more than a short stream's text deltas)."""
