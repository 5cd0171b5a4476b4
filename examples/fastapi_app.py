"""POST /api/chat for the Vercel AI SDK's useChat: cited answers, Wikit sources, grounding.

streamcite serve-local &                 # or any OpenAI-compatible upstream
uvicorn examples.fastapi_app:app --port 8001
"""

import os

from fastapi import FastAPI, HTTPException, Request

from streamcite import stream_chat
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.web.asgi import UIMessageStreamResponse, question_from_request

ROOT = os.environ.get("STREAMCITE_LOCAL_URL", "http://127.0.0.1:8765")  # serve-local default
BASE_URL = os.environ.get("OPENAI_BASE_URL", ROOT + "/v1")
MODEL = os.environ.get("OPENAI_MODEL", "streamcite-local")
WIKIT = (
    os.environ.get("WIKIT_APP", "streamcite-demo"),
    os.environ.get("WIKIT_ORG", "streamcite-local"),
)

KEYS = (os.environ.get("OPENAI_API_KEY"), os.environ.get("WIKIT_API_KEY"))
app = FastAPI()


@app.post("/api/chat")
async def chat(request: Request) -> UIMessageStreamResponse:
    try:
        question = await question_from_request(request)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc
    wikit = WikitSources(*WIKIT, api_key=KEYS[1], base_url=os.environ.get("WIKIT_BASE_URL", ROOT))
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": question}]}
    events = stream_chat(body, base_url=BASE_URL, api_key=KEYS[0], after=[wikit, LocalGrounding()])
    return UIMessageStreamResponse(events)
