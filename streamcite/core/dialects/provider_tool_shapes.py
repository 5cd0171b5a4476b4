"""Each dialect's provider-run tool shapes → what a ``provider_tool`` event says. Sans-I/O.

Pure readers over one block, item or part (the dialect modules call them and hand the
result to :class:`~.provider_tools.ProviderTools`): every value comes back bounded.

>>> anthropic_result({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
...     "content": [{"type": "web_search_result", "url": "https://a.example", "title": "A",
...                  "encrypted_content": "Eq"}]})
('srvtoolu_1', 'web_search', 'completed', {'count': 1, 'results': [{'type': 'web_search_result', 'url': 'https://a.example', 'title': 'A'}]})
"""

from __future__ import annotations

from typing import Any

from streamcite.core.dialects.provider_tools import (
    MAX_TOOL_INPUT_CHARS,
    MAX_TOOL_SUMMARY_CHARS,
    ProviderTools,
    bounded_json,
    bounded_value,
    clip,
    input_json,
)
from streamcite.core.events import Event

__all__ = [
    "ANTHROPIC_CALLS",
    "HOSTED_ITEMS",
    "anthropic_input",
    "anthropic_result",
    "gemini_call",
    "gemini_code_part",
    "gemini_result",
    "responses_item",
]

ANTHROPIC_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
"""Anthropic blocks that start a tool the API runs (their input streams as
``input_json_delta``); the ``*_tool_result`` blocks carry the results."""

HOSTED_ITEMS: dict[str, str | None] = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "mcp_call": None,  # the MCP tool's own name
}
"""Responses output items of the tools OpenAI runs (hosted tools) → the tool's name."""


def summary_of(value: Any) -> dict[str, Any]:
    """A result's content as a bounded summary: a list as its ``count`` and its first
    entries, an object as its fields, a string as ``text`` (page contents, files and
    encrypted tokens as their length only)."""
    if type(value) is list:
        results = bounded_value(value, MAX_TOOL_SUMMARY_CHARS, summary=True)
        return {"count": len(value), "results": results}
    if type(value) is dict:
        out: dict[str, Any] = bounded_value(value, MAX_TOOL_SUMMARY_CHARS, summary=True)
        return out
    if type(value) is str:
        return {"text": clip(value), "chars": len(value)}
    return {} if value is None else {"value": bounded_value(value, 100)}


def anthropic_input(block: dict[str, Any], streamed: list[str] | None, cut: bool) -> str | None:
    """A ``server_tool_use`` / ``mcp_tool_use`` block's input: its ``input_json_delta``
    fragments joined (``cut``: more came than were kept), else the block's ``input``."""
    if streamed:
        raw = "".join(streamed)
        if cut:
            return bounded_json(raw, MAX_TOOL_INPUT_CHARS)  # the beginning, as a string
        return input_json(raw)
    value = block.get("input")
    return input_json(value) if value else None


def anthropic_result(block: dict[str, Any]) -> tuple[Any, str, str, dict[str, Any]]:
    """A ``*_tool_result`` block → (the call's id, tool name, status, summary). The
    status is ``error`` for an ``…_error`` content (its ``error_code`` in the summary) or
    an MCP result with ``is_error``, else ``completed``."""
    kind = block.get("type")
    name = kind[: -len("_tool_result")] if type(kind) is str else "tool"
    content = block.get("content")
    error = type(content) is dict and str(content.get("type", "")).endswith("_error")
    status = "error" if error or block.get("is_error") is True else "completed"
    return block.get("tool_use_id"), name, status, summary_of(content)


def responses_item(item: dict[str, Any]) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """A hosted tool's output item → (tool name, input as bounded JSON, summary of its
    result or ``None`` while it has none)."""
    kind = item.get("type")
    name = item.get("name")
    name = name if type(name) is str else HOSTED_ITEMS.get(str(kind))
    action = item.get("action")
    summary: dict[str, Any] | None = None
    if "arguments" in item:  # mcp_call; xAI's web_search_call
        tool_input = input_json(item.get("arguments"))
    elif type(action) is dict:  # web_search_call: search, open_page, find_in_page
        tool_input = input_json({k: v for k, v in action.items() if k != "sources"})
        if type(action.get("sources")) is list:
            summary = summary_of(action["sources"])
    elif "queries" in item:  # file_search_call
        tool_input = input_json({"queries": item.get("queries")})
    elif "code" in item:  # code_interpreter_call
        tool_input = input_json(
            {"code": item.get("code"), "container_id": item.get("container_id")}
        )
    else:
        tool_input = None
    if kind == "file_search_call" and type(item.get("results")) is list:
        keep = ("file_id", "filename", "score")
        rows = [{k: r.get(k) for k in keep} for r in item["results"][:100] if type(r) is dict]
        summary = {**summary_of(rows), "count": len(item["results"])}
    elif kind == "code_interpreter_call" and item.get("outputs") is not None:
        summary = {"outputs": summary_of(item.get("outputs"))}
    elif kind == "mcp_call" and (item.get("output") is not None or item.get("error") is not None):
        summary = {"output": summary_of(item.get("output")), "error": summary_of(item.get("error"))}
    elif kind == "image_generation_call" and type(item.get("result")) is str:
        summary = {"result_chars": len(item["result"])}
    return name, tool_input, summary


def gemini_call(part: dict[str, Any]) -> str | None:
    """An ``executableCode`` part's input (``language``, ``code``) as bounded JSON."""
    code = part.get("executableCode")
    if type(code) is not dict:
        return input_json(code)
    return input_json({k: code.get(k) for k in ("language", "code") if k in code})


_OUTCOMES = {"OUTCOME_OK": "completed", "OUTCOME_FAILED": "failed"}


def gemini_result(part: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A ``codeExecutionResult`` part → (status, summary: ``outcome``, the clipped
    ``output`` and its length)."""
    res = part.get("codeExecutionResult")
    res = res if type(res) is dict else {}
    outcome = res.get("outcome")
    raw = outcome if type(outcome) is str else "OUTCOME_UNSPECIFIED"
    status = _OUTCOMES.get(raw) or raw.removeprefix("OUTCOME_").lower()[:60]
    output = res.get("output")
    output = output if type(output) is str else ""
    return status, {"outcome": clip(raw, 60), "output": clip(output), "output_chars": len(output)}


def gemini_code_part(tools: ProviderTools, part: dict[str, Any], out: list[Event]) -> None:
    """Gemini's code execution tool: an ``executableCode`` part starts it, the next
    ``codeExecutionResult`` part is its result (neither carries an id: paired by order)."""
    if "executableCode" in part:
        tools.call(out, ("code", tools.count), "code_execution", gemini_call(part))
    else:
        key = tools.open[0] if tools.open else ("code", tools.count)
        status, summary = gemini_result(part)
        tools.result(out, key, "code_execution", status, summary)
