"""The embedded local backend, three ways: the openai SDK, streamcite's pipeline, and faults.

Runs offline in about a second:  .venv/bin/python examples/local_backend.py
"""

from __future__ import annotations

import asyncio
import sys

import openai

from streamcite import StreamciteError, Timeouts, stream_chat
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.enrich.wikit import by_document
from streamcite.local import MODEL, BackendConfig, LocalBackend
from streamcite.logs import configure_logging

QUESTION = (
    "How many days a week can I work from home, and which security rules apply outside the office?"
)


async def main() -> None:
    configure_logging("WARNING")  # structlog's default prints every debug line on stdout
    # token_delay paces the stream (0.02 s = 50 tokens/s); port 0 picks a free port.
    async with LocalBackend(BackendConfig(token_delay=0.005)) as backend:
        print(f"backend on {backend.root_url}\n")

        # 1. Any OpenAI client works unchanged; `citations` rides on the finish chunk.
        async with openai.AsyncOpenAI(base_url=backend.base_url, api_key="unused") as sdk:
            stream = await sdk.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": QUESTION}], stream=True
            )
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    print(chunk.choices[0].delta.content, end="", flush=True)
                if chunk.choices and chunk.choices[0].finish_reason:
                    citations = (chunk.model_extra or {}).get("citations", [])
        print("\n")
        for c in citations:
            print(
                f"  [{c['document_index'] + 1}] {c['document_title']} — {c['cited_text_heading']}"
            )

        # 2. The streamcite pipeline: live footnotes, then Wikit sources and a grounding
        #    check, both served by the same backend. `hallucinate=1` changes one number
        #    of the answer so the check has something to catch.
        wikit = WikitSources("demo-app", "demo-org", base_url=backend.root_url)
        async with stream_chat(
            {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "stream": True},
            base_url=backend.base_url,
            headers={"X-Streamcite-Fault": "hallucinate=1"},
            marker_mode="superscript",
            after=[wikit, LocalGrounding()],
            timeouts=Timeouts(total=30),
        ) as s:
            async for text in s.text_stream:
                print(text, end="", flush=True)
        answer = s.answer.raise_for_error()  # a failure raises (StreamciteError)
        print("\n")
        for group in by_document(answer.sources):
            print(f"  {' '.join(group.quoted_as):>5}  {group.document.display_name}")
        if answer.grounding is None:
            print(f"\n  no grounding result: {'; '.join(e.message for e in answer.errors)}")
        else:
            print(f"\n  support score {answer.grounding.support_score:.2f}")
            for claim in answer.grounding.claims:
                mark = "✓" if claim.citation_indices else "✗"
                print(f"  {mark} {claim.claim_text}")

        # 3. Faults on request: here the connection drops after 5 tokens.
        async with stream_chat(
            {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "stream": True},
            base_url=backend.base_url,
            headers={"X-Streamcite-Fault": "drop_after=5"},
            timeouts=Timeouts(total=30),
        ) as s:
            dropped = await s.until_done()
        state = "complete" if dropped.complete else "incomplete"
        codes = ", ".join(e.code for e in dropped.errors) or "none"
        print(f"\n  with drop_after=5: the answer is {state}; errors: {codes}")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except StreamciteError as exc:  # one line and exit status 1, no traceback
        sys.exit(f"error: {exc}")
