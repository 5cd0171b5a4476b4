"""A relay client in ~100 lines: ask over WebSocket, print tokens live, resume after a cut.

    # against a running relay (streamcite relay --port 8770)
    python examples/relay_client.py "How many days can I work remotely?" --url ws://127.0.0.1:8770/ws

    # self-contained: starts the embedded backend and a relay in-process
    python examples/relay_client.py "How many days can I work remotely?" --drop-after 8

``--drop-after N`` cuts the connection after N tokens to show resume: the client
reconnects, sends ``{"type":"resume","stream_id":...,"after_seq":last}`` and gets every
later event exactly once (it checks ``seq``: a gap or a repeat would be a bug).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import aiohttp
import orjson

from streamcite import CitedAnswer, StreamciteError
from streamcite.events import DoneEvent, ErrorEvent, TokenEvent, event_from_dict


async def stream_answer(
    url: str, question: str, *, token: str | None = None, drop_after: int | None = None
) -> CitedAnswer:
    """Ask ``question``; print the answer as it streams; return the final answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    stream_id: str | None = None
    last_seq = 0
    tokens_seen = 0
    async with aiohttp.ClientSession(headers=headers) as session:
        while True:  # one iteration per connection
            async with session.ws_connect(url, heartbeat=None) as ws:
                if stream_id is None:
                    await ws.send_str(orjson.dumps({"type": "ask", "question": question}).decode())
                else:
                    print(f"\n[reconnected: resuming after seq {last_seq}]", file=sys.stderr)
                    resume = {"type": "resume", "stream_id": stream_id, "after_seq": last_seq}
                    await ws.send_str(orjson.dumps(resume).decode())
                async for msg in ws:
                    if msg.type is not aiohttp.WSMsgType.TEXT:
                        break
                    ev = orjson.loads(msg.data)
                    seq = ev.get("seq")
                    if seq is None:  # control frames: hello, accepted, heartbeat, relay errors
                        if ev["type"] == "accepted":
                            stream_id = ev["stream_id"]
                        elif ev["type"] == "error":
                            raise RuntimeError(f"relay refused: {ev['code']}: {ev['message']}")
                        continue
                    if seq != last_seq + 1:
                        raise RuntimeError(f"sequence gap or repeat: got {seq} after {last_seq}")
                    last_seq = seq
                    event = event_from_dict(ev)  # the typed event (``seq`` is the relay's)
                    if isinstance(event, TokenEvent) and event.index == 0:
                        print(event.text, end="", flush=True)
                        tokens_seen += 1
                        if drop_after is not None and tokens_seen == drop_after:
                            drop_after = None
                            break  # leave the `async with`: the connection is cut
                    elif isinstance(event, ErrorEvent):
                        print(f"\n[error {event.code}: {event.message}]", file=sys.stderr)
                    elif isinstance(event, DoneEvent):
                        print()
                        return event.answer
            if stream_id is None:
                raise RuntimeError("the connection closed before the relay accepted the question")
            await asyncio.sleep(0.2)  # then reconnect and resume


@contextlib.asynccontextmanager
async def embedded_relay() -> AsyncIterator[str]:
    """The embedded backend and a relay in this process; yields the WebSocket URL."""
    from streamcite.local import BackendConfig, LocalBackend
    from streamcite.relay.server import RelayConfig, RelayServer

    async with contextlib.AsyncExitStack() as stack:
        backend = await stack.enter_async_context(LocalBackend(BackendConfig(token_delay=0.05)))
        relay = await stack.enter_async_context(RelayServer(RelayConfig(base_url=backend.base_url)))
        yield relay.ws_url


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question")
    parser.add_argument("--url", help="relay WebSocket URL (default: start one in-process)")
    parser.add_argument("--token", help="relay token, if the relay requires one")
    parser.add_argument("--drop-after", type=int, help="cut the connection after N tokens")
    args = parser.parse_args()
    async with contextlib.AsyncExitStack() as stack:
        url = args.url or await stack.enter_async_context(embedded_relay())
        try:
            answer = await stream_answer(
                url, args.question, token=args.token, drop_after=args.drop_after
            )
        except aiohttp.ClientConnectorError:
            sys.exit(
                f"error: cannot connect to {url}; is the relay running? start it with: "
                "streamcite relay --port 8770"
            )
        except (aiohttp.ClientError, RuntimeError) as exc:  # refused, or a protocol fault
            sys.exit(f"error: {exc}")
    answer.raise_for_error()  # the answer itself failed upstream: StreamciteError
    for c in answer.citations:
        number = "?" if c.document_index is None else c.document_index + 1
        print(f"[{number}] {c.document_title} — {c.source_url}")
    g = answer.grounding
    if g is not None:
        if g.nothing_to_check:
            print("support: nothing to check")
        else:
            print(
                f"support score: {'n/a' if g.support_score is None else f'{g.support_score:.2f}'}"
            )


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    try:
        asyncio.run(main())
    except StreamciteError as exc:  # one line and exit status 1, no traceback
        sys.exit(f"error: {exc}")
