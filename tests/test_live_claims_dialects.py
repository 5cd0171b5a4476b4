"""Live claims from citations that arrive mid-stream in the other dialects (Anthropic
``citations_delta`` cited text, Cohere ``citation-start`` spans): the recorded-style
fixtures of tests/fixtures/dialects/ served over loopback at each API's own path, read
by ``stream_chat(api=...)``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp import web

from streamcite import stream_chat
from streamcite.core.events import ClaimEvent
from streamcite.grounding.checker import LocalGrounding
from tests._served import served

FIXTURES = Path(__file__).parent / "fixtures" / "dialects"


class GatedSSE:
    """Serves a fixture's events up to the first with ``gate_after`` in it, waits for
    ``gate`` (bounded), then the rest."""

    def __init__(self, path: Path, gate_after: bytes) -> None:
        parts = [p + b"\n\n" for p in path.read_bytes().split(b"\n\n") if p.strip()]
        cut = next(i for i, p in enumerate(parts) if gate_after in p) + 1
        self.before, self.after = parts[:cut], parts[cut:]
        self.gate = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for part in self.before:
            await resp.write(part)
        async with asyncio.timeout(10):
            await self.gate.wait()
        for part in self.after:
            await resp.write(part)
        return resp


async def _run(up: GatedSSE, api: str, root: str, path: str) -> tuple[list[Any], Any]:
    app = web.Application()
    app.router.add_post(root + path, up.handle)
    request = {
        "model": "m",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Quelle altitude ?"}],
    }
    seen: list[Any] = []
    async with served(app) as url:
        try:
            async with (
                asyncio.timeout(20),
                stream_chat(request, base_url=url + root, api=api, after=[LocalGrounding()]) as s,
            ):
                async for ev in s:
                    seen.append(ev)
                    if isinstance(ev, ClaimEvent):
                        up.gate.set()
                answer = s.answer
        finally:
            up.gate.set()
    return seen, answer


async def test_anthropic_cited_text_checks_its_sentence_before_the_answer_ends() -> None:
    # Held back after the second text block starts: the first block's sentence, its
    # cited text known, must be claimed while the upstream is silent.
    up = GatedSSE(FIXTURES / "anthropic__citations_nonascii.sse", b'"text": " Il est')
    seen, answer = await _run(up, "anthropic", "/v1", "/messages")
    claims = [e for e in seen if isinstance(e, ClaimEvent)]
    types = [e.type for e in seen]
    assert claims and types.index("claim") < types.index("finish")
    first = claims[0]
    assert first.supported is True and first.citation_indices == [0]
    assert answer.text[first.start : first.end] == first.text
    utf16 = answer.text.encode("utf-16-le")
    assert utf16[2 * first.start_utf16 : 2 * first.end_utf16].decode("utf-16-le") == first.text
    assert len(claims) == 2 and answer.claims == claims


async def test_cohere_spans_anchor_the_claims() -> None:
    # Held back once the second sentence starts: the first is complete and its span
    # (citation-start 17-54) known, so it is claimed while the upstream is silent.
    up = GatedSSE(FIXTURES / "cohere__citations_nonascii.sse", b'"text":" Le bulletin')
    seen, answer = await _run(up, "cohere", "/v2", "/chat")
    claims = [e for e in seen if isinstance(e, ClaimEvent)]
    types = [e.type for e in seen]
    assert len(claims) == 2 and types.index("claim") < types.index("finish")
    assert [c.text for c in claims] == [answer.text[c.start : c.end] for c in claims]
    assert claims[0].supported is True and claims[0].citation_indices == [0]
