"""The Chainlit adapter without a browser: Chainlit's own session, emitter, ``Message``,
``Step`` and ``Text`` run for real; only the socket.io connection is replaced, by a
recorder of the events Chainlit would send to the page (``new_message``,
``stream_start``, ``send_token``, ``update_message``, ``element``). The page those
events build is replayed (:class:`Page`) and read as a person would: the message text,
the source links it names (Chainlit links a side element whose ``name`` appears in
the message) and what each opens (the file Chainlit stored for it)."""

from __future__ import annotations

import copy
import doctest
import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from streamcite import CitedAnswer, Enricher, stream_chat
from streamcite.enrich import LocalGrounding, WikitSources
from streamcite.events import CitationsEvent, DoneEvent, Event, TokenEvent
from streamcite.local import BackendConfig, LocalBackend
from streamcite.models import Citation, CitationSpan
from tests._ui_apps import PASSAGE, QUESTION

HOSTILE_TITLE = 'Policy <img src=x onerror="alert(1)"> [x](javascript:1) \u202e'


@pytest.fixture(scope="module")
def chainlit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Chainlit imported with its app root in a temporary directory (importing it writes
    ``.chainlit/`` and ``.files/`` there), not in the checkout."""
    if "chainlit" not in sys.modules:
        before = os.environ.get("CHAINLIT_APP_ROOT")
        os.environ["CHAINLIT_APP_ROOT"] = str(tmp_path_factory.mktemp("chainlit-root"))
        try:
            pytest.importorskip("chainlit")
        finally:
            if before is None:
                os.environ.pop("CHAINLIT_APP_ROOT")
            else:
                os.environ["CHAINLIT_APP_ROOT"] = before
    import chainlit

    yield chainlit


@dataclass
class Page:
    """What Chainlit's page shows, replayed from the socket events it was sent."""

    session: Any
    """Chainlit's session: it keeps the files it stored for the elements."""
    events: list[tuple[str, Any]] = field(default_factory=list)

    async def emit(self, event: str, data: Any) -> None:
        self.events.append((event, copy.deepcopy(data)))

    async def emit_call(self, *args: Any) -> None:
        raise AssertionError(f"the adapter asked the user something: {args!r}")

    def messages(self) -> dict[str, dict[str, Any]]:
        """Steps by id, their content as the page has it after every event."""
        shown: dict[str, dict[str, Any]] = {}
        for name, data in self.events:
            if name in ("new_message", "update_message", "stream_start"):
                shown[data["id"]] = dict(data)
            elif name == "stream_token":
                step = shown[data["id"]]
                step["output"] = (
                    data["token"] if data["isSequence"] else step["output"] + data["token"]
                )
        return shown

    def answer(self) -> dict[str, Any]:
        (answer,) = [m for m in self.messages().values() if m["type"] == "assistant_message"]
        return answer

    def elements(self) -> list[dict[str, Any]]:
        """The elements the page holds (one per id, the last sent wins), in order."""
        out: dict[str, dict[str, Any]] = {}
        for name, data in self.events:
            if name == "element":
                out[data["id"]] = data
            elif name == "remove_element":
                out.pop(data["id"], None)
        return list(out.values())

    def opened(self, element: dict[str, Any]) -> str:
        """What clicking the element shows: the text Chainlit stored and serves for it."""
        stored = self.session.files[element["chainlitKey"]]
        return Path(stored["path"]).read_text(encoding="utf-8")


@pytest.fixture
async def page(
    chainlit: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Page]:
    """A Chainlit websocket session whose socket is a :class:`Page`, as the current context."""
    from chainlit import config
    from chainlit.context import init_ws_context
    from chainlit.session import WebsocketSession

    monkeypatch.setattr(config, "FILES_DIRECTORY", tmp_path)
    shown = Page(session=None)
    session = WebsocketSession(
        id=str(uuid.uuid4()), socket_id=str(uuid.uuid4()), emit=cast(Any, shown.emit),
        emit_call=cast(Any, shown.emit_call), user_env={}, client_type="webapp",
    )  # fmt: skip
    shown.session = session
    init_ws_context(session)
    yield shown
    await session.delete()  # type: ignore[no-untyped-call]


def _linked(content: str, element: dict[str, Any]) -> bool:
    """Chainlit's rule: a side element is a link where its name appears in the message."""
    return element["display"] == "side" and element["name"] in content


@dataclass
class ScriptedStream:
    """A stream of given events (the source of events, not Chainlit, is scripted)."""

    script: list[Event]
    answer: CitedAnswer = field(default_factory=CitedAnswer)

    async def __aenter__(self) -> ScriptedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        for event in self.script:
            if isinstance(event, DoneEvent):
                self.answer = event.answer
            yield event


async def test_each_footnote_is_a_side_source_the_message_links_with_its_own_passage(
    page: Page,
) -> None:
    from streamcite.ui.chainlit import send_answer

    request = {"model": "streamcite-local", "stream": True,
               "messages": [{"role": "user", "content": QUESTION}]}  # fmt: skip
    async with LocalBackend(BackendConfig()) as be:
        after: list[Enricher] = [WikitSources(base_url=be.root_url), LocalGrounding()]
        answer = await send_answer(stream_chat(request, base_url=be.base_url, after=after))
    assert "carried over" not in answer.text  # the passage below is not the answer's
    names = [e for e, _ in page.events]
    assert names.index("stream_start") < names.index("update_message")  # streamed first
    assert names.count("stream_token") > 3
    content = page.answer()["output"]
    assert "manager¹\\. ✓" in content and "that day¹\\. ✓" in content
    assert "**Sources**\n\n- ¹ Remote Work Policy — 2\\. Remote work days" in content
    assert PASSAGE not in content  # the passage is in the side panel, not the message
    assert "✓ Grounding (local): 2 of 2 claims supported" in content
    (source,) = page.elements()
    assert (source["type"], source["display"], source["name"]) == (
        "text",
        "side",
        "¹ Remote Work Policy",
    )
    assert source["forId"] == page.answer()["id"]
    assert _linked(content, source)
    opened = page.opened(source)
    assert PASSAGE in opened
    assert f"**[Remote Work Policy]({be.root_url}/documents/" in opened
    assert "— 2\\. Remote work days" in opened


async def test_two_footnotes_on_one_document_open_two_passages_and_a_later_span_updates_one(
    page: Page,
) -> None:
    from streamcite.ui.chainlit import send_answer

    text = "Three days [1]. Tuesday is a team day [2]."
    url = "https://example.org/policy"
    cites = [
        Citation(cited_text=passage, document_index=i, document_title=HOSTILE_TITLE, source_url=url)
        for i, passage in enumerate(["Up to three days per week.", "Tuesday is a team day."])
    ]
    later = CitationSpan(0, 0, 14, cited_text="Unused days are not carried over.")
    stream = ScriptedStream([
        TokenEvent(text=text[:20]), TokenEvent(text=text[20:]),
        CitationsEvent(citations=cites),
        DoneEvent(answer=CitedAnswer(text=text, citations=cites, citation_spans=[
            CitationSpan(0, 0, 14, cited_text="Up to three days per week."), later,
            CitationSpan(1, 16, 42, cited_text="Tuesday is a team day."),
        ], complete=True)),
    ])  # fmt: skip
    await send_answer(stream)  # type: ignore[arg-type]
    content = page.answer()["output"]
    first, second = page.elements()
    assert first["name"] == "¹ Policy img src x onerror alert 1 x javascript 1"
    assert second["name"] == "² Policy img src x onerror alert 1 x javascript 1"
    assert _linked(content, first) and _linked(content, second)
    assert "<img" not in content and "\u202e" not in content
    one, two = page.opened(first), page.opened(second)
    assert "> Up to three days per week\\." in one and "Tuesday" not in one
    assert "> Unused days are not carried over\\." in one  # the span the answer added
    assert "> Tuesday is a team day\\." in two and "three days" not in two
    assert "\\<img" in one and "[Policy" in one  # the title escaped, linked to its URL
    sent = [d["id"] for e, d in page.events if e == "element"]
    assert sent.count(first["id"]) >= 2  # sent again (same id) when its passages changed


async def test_backend_down_is_a_readable_error_message_without_sources(page: Page) -> None:
    from streamcite.ui.chainlit import send_answer

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Q?"}]}
    await send_answer(stream_chat(request, base_url=dead))
    content = page.answer()["output"]
    assert content.startswith("⚠") and "connect" in content.lower()
    assert page.elements() == []


def test_source_names_are_plain_words_and_the_docstring_examples_run(chainlit: Any) -> None:
    from streamcite.ui import chainlit as adapter
    from streamcite.ui.render import Footnote

    runner = doctest.DocTestRunner()
    for example in doctest.DocTestFinder().find(adapter.source_name, globs=vars(adapter)):
        runner.run(example)
    assert (runner.summarize(verbose=False).attempted, runner.failures) == (1, 0)
    long = Footnote(12, "word " * 40, None, None, ())
    assert adapter.source_name(long).startswith("¹² word word")
    assert len(adapter.source_name(long)) <= adapter.MAX_NAME_CHARS + 5
    assert adapter.source_name(Footnote(3, "<>[]()", None, None, ())) == "³ Source"
