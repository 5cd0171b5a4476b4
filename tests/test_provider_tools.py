"""Tools the provider runs itself become ``provider_tool`` events (call and result), bounded.

Streams: the project's own fixtures (tests/fixtures/dialects, provenance in its
SOURCES.md) and streams built here from the APIs' documented shapes; the holdout
recordings (../shared/dialects/holdout) where present.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from streamcite import answer_from_response
from streamcite.core.api import ChatStreamParser
from streamcite.core.bounds import StreamBounds
from streamcite.core.dialects.provider_tools import bounded_json, bounded_value
from streamcite.events import (
    DoneEvent,
    ProviderToolEvent,
    answer_from_dict,
    event_from_dict,
    event_from_json,
    event_to_json,
)
from tests._dialect_sse import sse

FIXTURES = Path(__file__).parent / "fixtures" / "dialects"
HOLDOUT = Path(__file__).resolve().parents[3] / "shared" / "dialects" / "holdout"
if not HOLDOUT.is_dir():
    HOLDOUT = Path("/work/shared/dialects/holdout")


def run(data: bytes, dialect: str = "auto", **kw: Any) -> tuple[list[ProviderToolEvent], Any]:
    parser = ChatStreamParser(dialect=dialect, **kw)  # type: ignore[arg-type]
    events = [*parser.feed(data), *parser.close(), parser.done_event()]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    tools = [e for e in events if isinstance(e, ProviderToolEvent)]
    assert tools == done.answer.provider_tools  # the answer keeps every event, in order
    return tools, done.answer


def by_phase(tools: list[ProviderToolEvent]) -> dict[tuple[int, str], ProviderToolEvent]:
    return {(t.tool_index, t.phase): t for t in tools}


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_server_tools_each_give_a_call_and_a_result() -> None:
    tools, answer = run((FIXTURES / "anthropic__server_tools.sse").read_bytes())
    assert answer.complete and answer.errors == [] and answer.skipped_types == {}
    got = by_phase(tools)
    call, result = got[(0, "call")], got[(0, "result")]
    assert (call.id, call.name, call.server) == ("srvtoolu_1", "web_search", None)
    assert orjson.loads(call.input or "") == {"query": "café Tel Aviv horaires"}
    assert call.status is None and call.summary is None
    assert (result.id, result.name, result.status) == ("srvtoolu_1", "web_search", "completed")
    assert result.summary == {
        "count": 1,
        "results": [
            {
                "type": "web_search_result",
                "url": "https://example.org/cafe-tel-aviv",
                "title": "Le café — תל אביב",
                "page_age": None,
            }
        ],
    }  # no encrypted_content
    bash = got[(1, "result")]
    assert bash.name == "bash_code_execution" and bash.summary is not None
    assert (bash.summary["return_code"], bash.summary["stdout"]) == (0, "480\n")
    assert orjson.loads(got[(1, "call")].input or "") == {"command": "python3 -c 'print(8*60)'"}
    assert got[(2, "result")].summary["content"] == "8 h – 18 h"  # type: ignore[index]
    assert got[(3, "result")].summary["stdout"] == "10\n"  # type: ignore[index]
    mcp_call, mcp_result = got[(4, "call")], got[(4, "result")]
    assert (mcp_call.name, mcp_call.server, mcp_call.id) == ("horaires", "cafes", "mcptoolu_1")
    assert orjson.loads(mcp_call.input or "") == {"ville": "תל אביב"}
    assert (mcp_result.name, mcp_result.server, mcp_result.status) == (
        "horaires",
        "cafes",
        "completed",
    )
    # A result whose call is not in this stream: a tool of its own, named by its block.
    fetch = got[(5, "result")]
    assert (fetch.id, fetch.name) == ("srvtoolu_5", "web_fetch") and (5, "call") not in got
    assert fetch.summary is not None
    assert fetch.summary["url"] == "https://example.org/cafe-tel-aviv"
    assert fetch.summary["content"]["source"]["data_chars"] == 20  # the page: its length only
    assert "Le café ouvre" not in orjson.dumps(fetch).decode()
    assert [t.phase for t in tools].count("call") == 5 and len(tools) == 11


def _anthropic(blocks: list[dict[str, Any]]) -> bytes:
    out = [
        sse({"type": "message_start", "message": {"id": "msg_t", "model": "claude-t",
             "content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}}, "message_start"),
    ]  # fmt: skip
    for i, (block, deltas) in enumerate((b.pop("_deltas", []), b)[::-1] for b in blocks):
        start = {"type": "content_block_start", "index": i, "content_block": block}
        out.append(sse(start, "content_block_start"))
        for d in deltas:
            delta = {"type": "content_block_delta", "index": i, "delta": d}
            out.append(sse(delta, "content_block_delta"))
        out.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    out.append(sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 5}}, "message_delta"))  # fmt: skip
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return b"".join(out)


def test_anthropic_error_results_say_error_with_their_code() -> None:
    data = _anthropic([
        {"type": "server_tool_use", "id": "srvtoolu_e", "name": "web_search", "input": {},
         "_deltas": [{"type": "input_json_delta", "partial_json": '{"query":"x"}'}]},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_e",
         "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
        {"type": "mcp_tool_use", "id": "mcptoolu_e", "name": "t", "server_name": "s", "input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_e", "is_error": True,
         "content": "the server said no"},
        {"type": "text", "text": "Done."},
    ])  # fmt: skip
    tools, answer = run(data)
    assert answer.complete and answer.errors == [] and answer.text == "Done."
    got = by_phase(tools)
    assert got[(0, "result")].status == "error"
    assert got[(0, "result")].summary == {
        "type": "web_search_tool_result_error",
        "error_code": "max_uses_exceeded",
    }
    assert got[(1, "call")].input is None  # no input at all: null, never ""
    assert got[(1, "result")].status == "error"
    assert got[(1, "result")].summary == {"text": "the server said no", "chars": 18}


def test_anthropic_whole_body_gives_the_same_events_as_its_stream() -> None:
    block_use = {"type": "server_tool_use", "id": "srvtoolu_b", "name": "web_search",
                 "input": {"query": "Tel Aviv café"}}  # fmt: skip
    block_result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_b",
                    "content": [{"type": "web_search_result", "url": "https://a.example/",
                                 "title": "A", "encrypted_content": "Eq"}]}  # fmt: skip
    body = {"id": "msg_b", "type": "message", "role": "assistant", "model": "claude-t",
            "content": [block_use, block_result, {"type": "text", "text": "Open at 8."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 4}}  # fmt: skip
    whole = answer_from_response(body, dialect="anthropic")
    streamed, _ = run(_anthropic([dict(block_use, input={}, _deltas=[
        {"type": "input_json_delta", "partial_json": '{"query": "Tel Aviv café"}'}]),
        block_result, {"type": "text", "text": "Open at 8."}]))  # fmt: skip
    assert whole.provider_tools == streamed
    assert [t.phase for t in streamed] == ["call", "result"]
    assert streamed[1].summary == {
        "count": 1,
        "results": [{"type": "web_search_result", "url": "https://a.example/", "title": "A"}],
    }


# -- Responses ---------------------------------------------------------------------------


def _responses(items: list[tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]]) -> bytes:
    seq = iter(range(10_000))
    out = [sse({"type": "response.created", "sequence_number": next(seq),
                "response": {"id": "resp_t", "model": "gpt-t", "created_at": 1}},
               "response.created")]  # fmt: skip
    for i, (added, middle, done) in enumerate(items):
        for kind, item in (("response.output_item.added", added), (None, None),
                           ("response.output_item.done", done)):  # fmt: skip
            if kind is None:
                for ev in middle:
                    out.append(sse({**ev, "sequence_number": next(seq)}, ev["type"]))
                continue
            ev = {"type": kind, "sequence_number": next(seq), "output_index": i, "item": item}
            out.append(sse(ev, kind))
    out.append(sse({"type": "response.completed", "sequence_number": next(seq), "response": {
        "id": "resp_t", "status": "completed", "usage": {"input_tokens": 1, "output_tokens": 2,
        "total_tokens": 3}}}, "response.completed"))  # fmt: skip
    return b"".join(out)


def _message(text: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    added = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 9,
             "content_index": 0, "delta": text}  # fmt: skip
    return added, [delta], {**added, "content": [{"type": "output_text", "text": text}]}


def test_responses_hosted_tools_each_give_a_call_and_a_result() -> None:
    ws = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    ws_done = {**ws, "status": "completed", "action": {"type": "search", "query": "café",
               "sources": [{"type": "url", "url": f"https://s{i}.example/"} for i in range(30)]}}  # fmt: skip
    mcp = {"id": "mcp_1", "type": "mcp_call", "status": "in_progress", "name": "lookup",
           "server_label": "cafes", "arguments": "", "output": None, "error": None}  # fmt: skip
    mcp_args = {"type": "response.mcp_call_arguments.delta", "item_id": "mcp_1",
                "output_index": 1, "delta": '{"ville":"תל אביב"}'}  # fmt: skip
    mcp_done = {**mcp, "status": "completed", "arguments": '{"ville":"תל אביב"}',
                "output": "ouvert 8 h – 18 h"}  # fmt: skip
    ci = {"id": "ci_1", "type": "code_interpreter_call", "status": "in_progress", "code": "",
          "container_id": "cntr_1", "outputs": None}  # fmt: skip
    ci_done = {**ci, "status": "completed", "code": "print(18 - 8)",
               "outputs": [{"type": "logs", "logs": "10\n"}]}  # fmt: skip
    fs = {"id": "fs_1", "type": "file_search_call", "status": "in_progress", "queries": []}
    fs_done = {**fs, "status": "completed", "queries": ["horaires"], "results": [
        {"file_id": "file_1", "filename": "h.txt", "score": 0.9, "text": "SECRET PAGE TEXT"}]}  # fmt: skip
    data = _responses([(ws, [], ws_done), (mcp, [mcp_args], mcp_done), (ci, [], ci_done),
                       (fs, [], fs_done), _message("Ouvert de 8 h à 18 h.")])  # fmt: skip
    tools, answer = run(data)
    assert answer.complete and answer.errors == [] and answer.skipped_types == {}
    assert answer.text == "Ouvert de 8 h à 18 h." and answer.finish_reason == "stop"
    got = by_phase(tools)
    assert [(t.tool_index, t.phase) for t in tools] == [
        (i, p) for i in range(4) for p in ("call", "result")
    ]
    assert (got[(0, "call")].id, got[(0, "call")].name) == ("ws_1", "web_search")
    assert got[(0, "call")].status == "in_progress" and got[(0, "call")].input is None
    web = got[(0, "result")]
    assert orjson.loads(web.input or "") == {"type": "search", "query": "café"}
    assert web.status == "completed" and web.summary is not None
    assert web.summary["count"] == 30 and len(web.summary["results"]) == 21  # 20 + "… 10 more"
    mcp_r = got[(1, "result")]
    assert (mcp_r.name, mcp_r.server, mcp_r.status) == ("lookup", "cafes", "completed")
    assert orjson.loads(mcp_r.input or "") == {"ville": "תל אביב"}
    assert mcp_r.summary == {"output": {"text": "ouvert 8 h – 18 h", "chars": 17}, "error": {}}
    code = got[(2, "result")]
    assert orjson.loads(code.input or "") == {"code": "print(18 - 8)", "container_id": "cntr_1"}
    assert code.summary == {"outputs": {"count": 1, "results": [{"type": "logs", "logs": "10\n"}]}}
    files = got[(3, "result")]
    assert files.summary == {
        "count": 1,
        "results": [{"file_id": "file_1", "filename": "h.txt", "score": 0.9}],
    }
    assert "SECRET PAGE TEXT" not in orjson.dumps(tools).decode()


def test_responses_failed_mcp_call_and_a_whole_body() -> None:
    mcp = {"id": "mcp_f", "type": "mcp_call", "status": "in_progress", "name": "t",
           "server_label": "s", "arguments": "{}", "output": None, "error": None}  # fmt: skip
    done = {**mcp, "status": "failed", "error": "tool crashed"}
    tools, answer = run(_responses([(mcp, [], done), _message("Sorry.")]))
    assert answer.errors == [] and answer.text == "Sorry."
    assert tools[-1].status == "failed" and tools[-1].summary is not None
    assert tools[-1].summary["error"] == {"text": "tool crashed", "chars": 12}
    body = orjson.loads((FIXTURES / "responses__body.json").read_bytes())
    whole = answer_from_response(body, dialect="responses")
    assert [(t.phase, t.name, t.id) for t in whole.provider_tools] == [
        ("call", "web_search", "ws_dcore_1"),
        ("result", "web_search", "ws_dcore_1"),
    ]


def test_responses_large_message_echo_is_still_passed_unparsed_but_a_large_tool_result_is_read() -> (
    None
):
    big = "x" * 200_000
    mcp = {"id": "mcp_big", "type": "mcp_call", "status": "in_progress", "name": "t",
           "server_label": "s", "arguments": "{}", "output": None, "error": None}  # fmt: skip
    done = {**mcp, "status": "completed", "output": big}
    tools, answer = run(_responses([(mcp, [], done), _message("ok")]))
    assert answer.errors == [] and tools[-1].summary is not None
    assert tools[-1].summary["output"]["chars"] == len(big)
    assert len(event_to_json(tools[-1])) < 2_000


# -- Gemini -------------------------------------------------------------------------------


def test_gemini_code_execution_parts_give_a_call_and_its_result() -> None:
    def chunk(parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return sse({"candidates": [cand], "modelVersion": "gemini-t"})

    data = b"".join([
        chunk([{"text": "Je calcule."}]),
        chunk([{"executableCode": {"language": "PYTHON", "code": "print(18 - 8)"}}]),
        chunk([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "10\n"}}]),
        chunk([{"executableCode": {"language": "PYTHON", "code": "1/0"}}]),
        chunk([{"codeExecutionResult": {"outcome": "OUTCOME_FAILED",
                                        "output": "ZeroDivisionError"}}]),
        chunk([{"text": " 10 heures."}], "STOP"),
    ])  # fmt: skip
    tools, answer = run(data)
    assert answer.complete and answer.errors == [] and answer.text == "Je calcule. 10 heures."
    assert [(t.tool_index, t.phase, t.name, t.id) for t in tools] == [
        (0, "call", "code_execution", None),
        (0, "result", "code_execution", None),
        (1, "call", "code_execution", None),
        (1, "result", "code_execution", None),
    ]
    assert orjson.loads(tools[0].input or "") == {"language": "PYTHON", "code": "print(18 - 8)"}
    assert tools[1].status == "completed"
    assert tools[1].summary == {"outcome": "OUTCOME_OK", "output": "10\n", "output_chars": 3}
    assert tools[3].status == "failed"


# -- bounds -------------------------------------------------------------------------------


def test_ten_megabytes_of_tool_result_give_a_bounded_event() -> None:
    huge = "é" * (10 * 1024 * 1024)
    data = _anthropic([
        {"type": "server_tool_use", "id": "srvtoolu_h", "name": "code_execution", "input": {},
         "_deltas": [{"type": "input_json_delta", "partial_json": '{"code":"' + "a" * 100_000},
                     {"type": "input_json_delta", "partial_json": "b" * 5_000_000 + '"}'}]},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_h",
         "content": {"type": "code_execution_result", "stdout": huge, "stderr": huge,
                     "return_code": 0, "content": [{"type": "x", "v": [[[[[[[[1]]]]]]]]}]}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_h",
         "content": [{"type": "text", "text": "x" * 100_000}] * 50},
        {"type": "text", "text": "ok"},
    ])  # fmt: skip
    tools, answer = run(data, max_event_size=1 << 30)
    assert answer.complete and answer.errors == [] and answer.text == "ok"
    sizes = [len(event_to_json(t).decode()) for t in tools]  # characters (é: 2 bytes)
    assert len(tools) == 3 and max(sizes) < 12_000, sizes
    call, result, mcp = tools
    assert call.input is not None and len(call.input) < 5_000
    assert result.summary is not None and result.summary["return_code"] == 0
    assert result.summary["stdout"].endswith("more characters)")
    assert mcp.summary is not None and mcp.summary["count"] == 50
    assert len(orjson.dumps(answer.provider_tools)) < 30_000


def test_bounded_values_stay_valid_json_whatever_their_shape() -> None:
    deep: Any = "x"
    for _ in range(10_000):
        deep = [deep]
    text = bounded_json({"deep": deep, "n": 2**80, "wide": list(range(100_000))}, 500)
    value = orjson.loads(text)
    assert len(text) < 700 and value["n"] == str(2**80)
    assert value["wide"][-1] == "… 99980 more"
    assert bounded_value({"k": "v" * 10}, 0) == "…"
    assert bounded_value({"a": "v" * 10, "b": 1}, 5) == {
        "a": "v… (9 more characters)",
        "…": "1 more",
    }


def test_tools_beyond_the_cap_are_dropped_with_one_error() -> None:
    blocks: list[dict[str, Any]] = []
    for i in range(5):
        blocks.append({"type": "server_tool_use", "id": f"srvtoolu_{i}", "name": "web_search",
                       "input": {"query": str(i)}})  # fmt: skip
        blocks.append({"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{i}",
                       "content": []})  # fmt: skip
    blocks.append({"type": "text", "text": "ok"})
    parser = ChatStreamParser(dialect="anthropic", bounds=StreamBounds(max_tool_calls=3))
    parser.feed(_anthropic(blocks))
    parser.close()
    answer = parser.done_event().answer
    assert [t.tool_index for t in answer.provider_tools] == [0, 0, 1, 1, 2, 2]
    assert [e.code for e in answer.errors] == ["bad_tool_call"]
    assert answer.complete and answer.text == "ok"


# -- the codec ----------------------------------------------------------------------------


def test_codec_round_trip_of_the_event_and_the_answer() -> None:
    tools, answer = run((FIXTURES / "anthropic__server_tools.sse").read_bytes())
    for t in tools:
        wire = event_to_json(t)
        assert wire.startswith(b'{"type":"provider_tool","index":0,"tool_index":')
        assert event_from_json(wire) == t
    back = answer_from_dict(orjson.loads(orjson.dumps(answer)))
    assert back.provider_tools == tools
    # Fields unknown are null, never absent; a reader ignores fields it does not know.
    minimal = event_from_dict({"type": "provider_tool", "future_field": 1})
    assert orjson.loads(event_to_json(minimal)) == {
        "type": "provider_tool", "index": 0, "tool_index": 0, "id": None, "name": None,
        "phase": "call", "input": None, "status": None, "summary": None, "server": None,
    }  # fmt: skip


# -- the holdout recordings ---------------------------------------------------------------

HOLDOUT_TOOLS = {
    "anthropic__mcp_tool_use.sse": [("call", "echo", "echo"), ("result", "echo", "echo")],
    "anthropic__web_fetch_ai_sdk.sse": [("call", "web_fetch", None), ("result", "web_fetch", None)],
    "responses__hosted_mcp.sse": [("call", "web_search_exa", "dmcp"),
                                  ("result", "web_search_exa", "dmcp")] * 2,
    "responses__code_interpreter_container_citation.sse": [
        ("call", "code_interpreter", None), ("result", "code_interpreter", None)] * 3,
    "responses__xai_web_search.sse": [("call", "web_search", None), ("result", "web_search", None)],
}  # fmt: skip


@pytest.mark.skipif(not HOLDOUT.is_dir(), reason="../shared/dialects/holdout absent")
@pytest.mark.parametrize("name", sorted(HOLDOUT_TOOLS))
def test_holdout_recordings_give_their_provider_tools(name: str) -> None:
    tools, answer = run((HOLDOUT / name).read_bytes())
    assert answer.errors == [] and answer.skipped_types == {}
    assert [(t.phase, t.name, t.server) for t in tools] == HOLDOUT_TOOLS[name]
    for call, result in zip(tools[::2], tools[1::2], strict=True):
        assert call.id == result.id and call.tool_index == result.tool_index
        assert result.status == "completed"


@pytest.mark.skipif(not HOLDOUT.is_dir(), reason="../shared/dialects/holdout absent")
def test_every_holdout_search_result_gives_its_count_and_urls_without_page_contents() -> None:
    for path in sorted(HOLDOUT.glob("anthropic__web_search*.sse")):
        tools, answer = run(path.read_bytes())
        results = [t for t in tools if t.phase == "result"]
        assert results and answer.errors == [], path.name
        assert sum(r.summary["count"] for r in results if r.summary) > 0
        for r in results:
            assert r.name == "web_search" and r.summary is not None, path.name
            assert r.summary["count"] == len(r.summary["results"])
            assert all(x["url"].startswith("https://") for x in r.summary["results"])
            assert "encrypted_content" not in orjson.dumps(r).decode()
