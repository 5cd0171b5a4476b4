"""Google grounding check of a streamed answer, claims mapped back onto the raw text.

Offline (default): starts streamcite's embedded local backend, whose
``groundingConfigs/...:check`` endpoint answers in Google's shape (offline checker),
streams a Hebrew answer and checks it against its own citations as soon as the
finish chunk arrives, concurrently with the Wikit sources.

    .venv/bin/python examples/google_grounding.py
    .venv/bin/python examples/google_grounding.py "Quanti giorni di ferie spettano?"

Real Google (Vertex AI Search / Discovery Engine): check an answer against facts.
Credentials: GOOGLE_OAUTH_ACCESS_TOKEN (e.g. ``gcloud auth print-access-token``; the
older name GOOGLE_ACCESS_TOKEN is read too), else
Application Default Credentials (``pip install 'streamcite[google]'`` and
``gcloud auth application-default login``). The caller needs the permission
discoveryengine.groundingConfigs.check; a user login also needs a quota project.

    .venv/bin/python examples/google_grounding.py --project MY_PROJECT [--quota-project MY_PROJECT]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from streamcite import CitedAnswer, StreamciteError, stream_chat
from streamcite.enrich import GoogleGrounding, WikitSources
from streamcite.logs import configure_logging
from streamcite.models import GroundingResult

CONFIG = "projects/{project}/locations/global/groundingConfigs/default_grounding_config"


def show(result: GroundingResult, text: str, answer: CitedAnswer | None = None) -> None:
    print(
        f"support score: {result.support_score if result.support_score is None else round(result.support_score, 2)}"
    )
    for w in result.warnings:
        print(f"  note: {w}")
    for claim in result.claims:
        mark = "✔" if claim.supported else "✘"
        # start/end index the RAW text the user saw (markers included), in characters;
        # start_utf16/end_utf16 are for a browser's JavaScript strings.
        shown = text[claim.start : claim.end] if claim.start is not None else claim.claim_text
        print(
            f"  {mark} chars {claim.start}–{claim.end} (utf16 {claim.start_utf16}–"
            f"{claim.end_utf16}, bytes sent {claim.start_byte}–{claim.end_byte}): {shown}"
        )
        if answer is not None:
            for origin in result.origins_for(claim, answer.citations, answer.sources):
                title = getattr(origin, "document_title", None) or origin.document.display_name
                print(f"      supported by: {title}")
        else:
            for i in claim.citation_indices:
                fact = result.fact_for_chunk(i)
                print(f"      supported by fact: {fact.text[:70] if fact else '?'}")


async def offline(question: str) -> None:
    from streamcite.local import LocalBackend

    async with LocalBackend() as backend:
        checker = GoogleGrounding(
            CONFIG.format(project="local"),
            token="local",  # the local endpoint takes any token
            endpoint=backend.root_url,
            facts_from="citations",  # does not wait for the Wikit sources: runs alongside
        )
        wikit = WikitSources("demo-app", "org-demo", base_url=backend.root_url)
        request = {
            "model": "streamcite-local",
            "messages": [{"role": "user", "content": question}],
            "stream": True,
        }
        async with stream_chat(
            request, base_url=backend.base_url, after=[wikit, checker]
        ) as stream:
            answer = (await stream.until_done()).raise_for_error()  # a failure raises
    print(answer.text, "\n")
    t = answer.timings
    print(f"sources {t.sources_ms or 0:.1f} ms ∥ grounding {t.grounding_ms or 0:.1f} ms")
    if answer.grounding is not None:
        show(answer.grounding, answer.text, answer)


async def online(project: str, quota_project: str | None) -> None:
    answer = "ירושלים היא בירת ישראל [1]. היא נוסדה במאה העשרים [2]."
    facts = [
        "ירושלים היא בירת מדינת ישראל ומקום מושבם של הכנסת והממשלה.",
        "העיר ירושלים היא אחת הערים העתיקות בעולם, ומיושבת כבר אלפי שנים.",
    ]
    async with GoogleGrounding(
        CONFIG.format(project=project),
        # None: Application Default Credentials. GOOGLE_ACCESS_TOKEN: the name used before.
        token=os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN") or os.environ.get("GOOGLE_ACCESS_TOKEN"),
        quota_project=quota_project,
        request_timeout=15,
        retries=3,
    ) as checker:
        result = await checker.check(answer, facts, claim_level_scores=True)
    show(result, answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default="כמה ימים בשבוע מותר לעבוד מהבית?")
    parser.add_argument("--project", help="check against the real Google API in this project")
    parser.add_argument("--quota-project", help="sent as X-Goog-User-Project")
    args = parser.parse_args()
    configure_logging("WARNING")
    try:
        if args.project:
            asyncio.run(online(args.project, args.quota_project))
        else:
            asyncio.run(offline(args.question))
    except StreamciteError as exc:  # one line and exit status 1, no traceback
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
