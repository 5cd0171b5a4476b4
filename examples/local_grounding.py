"""The offline grounding checker: Google's check, in-process, no network, no model.

1. Google's public example (the Titanic answer), checked against facts;
2. the same request as Google's JSON, answered with Google's response JSON;
3. a Hebrew answer with footnotes and an emoji: claim offsets in characters,
   UTF-8 bytes and UTF-16 units;
4. with ``--pipeline``: a streamed answer from the embedded local backend, checked
   against its own citations by ``LocalGrounding`` as a pipeline enricher.

    .venv/bin/python examples/local_grounding.py
    .venv/bin/python examples/local_grounding.py --pipeline "How many days of remote work?"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from streamcite import StreamciteError
from streamcite.enrich import LocalGrounding
from streamcite.grounding.google_check import check_google_request
from streamcite.logs import configure_logging
from streamcite.models import GroundingResult

TITANIC_FACTS = [
    "Titanic is a 1997 American epic romantic disaster movie. It was directed, written, and "
    "co-produced by James Cameron. The movie is about the 1912 sinking of the RMS Titanic. "
    "It stars Kate Winslet and Leonardo DiCaprio. The movie was released on December 19, 1997.",
    'James Cameron\'s "Titanic" is an epic, action-packed romance set against the ill-fated '
    "maiden voyage of the R.M.S. Titanic.",
]


def show(answer: str, result: GroundingResult) -> None:
    print(
        f"support score {result.support_score if result.support_score is None else round(result.support_score, 2)}"
    )
    for claim in result.claims:
        # "·": a question or filler, not checked.
        mark = "✔" if claim.supported else "✘" if claim.grounding_check_required else "·"
        score = "" if claim.score is None else f" score {claim.score:.2f}"
        print(
            f"  {mark} chars {claim.start}-{claim.end}, bytes {claim.start_byte}-"
            f"{claim.end_byte}, utf16 {claim.start_utf16}-{claim.end_utf16}{score}: "
            f"{answer[claim.start : claim.end]}"
        )
        for i in claim.citation_indices:
            fact = result.fact_for_chunk(i)
            print(f"      fact {result.cited_chunks[i].source}: {fact.text[:60] if fact else ''}…")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pipeline", metavar="QUESTION", help="also stream from the local backend")
    args = ap.parse_args()
    configure_logging("WARNING")
    checker = LocalGrounding()

    answer = "Titanic was directed by James Cameron. It starred Brad Pitt and Kate Winslet."
    print(f"1. {answer}")
    show(answer, await checker.check(answer, TITANIC_FACTS, claim_level_scores=True))

    print("\n2. Google's request JSON -> Google's response JSON")
    request = {
        "answerCandidate": "Titanic was directed by James Cameron. It was released in 1997.",
        "facts": [{"factText": f, "attributes": {"author": "demo"}} for f in TITANIC_FACTS],
        "groundingSpec": {"citationThreshold": 0.6, "enableClaimLevelScore": True},
    }
    response = check_google_request(request)
    for chunk in response.get("citedChunks", []):
        chunk["chunkText"] = chunk["chunkText"][:40] + "…"
    response.pop("citedFacts", None)
    print(json.dumps(response, indent=2, ensure_ascii=False))

    hebrew_fact = (
        "מדיניות העבודה מרחוק מאפשרת לעובדים לעבוד מהבית יומיים בשבוע. "
        "עובדים חדשים אינם זכאים לעבודה מרחוק בשלושת החודשים הראשונים."
    )
    hebrew = (
        "העובדים רשאים לעבוד מהבית יומיים בשבוע [1] 🏠. "
        "עובדים חדשים זכאים לעבודה מרחוק מהיום הראשון [1]. "
        "האם יש לך שאלות נוספות?"
    )
    print(f"\n3. {hebrew}")
    show(hebrew, await checker.check(hebrew, [hebrew_fact], claim_level_scores=True))

    if args.pipeline:
        from streamcite import stream_chat
        from streamcite.local import LocalBackend

        print(f"\n4. {args.pipeline}")
        async with LocalBackend() as backend:
            request = {
                "model": "streamcite-local",
                "messages": [{"role": "user", "content": args.pipeline}],
                "stream": True,
            }
            async with stream_chat(
                request, base_url=backend.base_url, after=[LocalGrounding()]
            ) as stream:
                async for event in stream:
                    if event.type == "token":
                        print(event.text, end="", flush=True)
                final = stream.answer.raise_for_error()  # a failure raises
        print(f"\n   grounding took {final.timings.grounding_ms or 0:.1f} ms")
        if final.grounding is not None:
            show(final.text, final.grounding)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except StreamciteError as exc:  # one line and exit status 1, no traceback
        sys.exit(f"error: {exc}")
