"""examples/streamlit_chat.py without a browser: Streamlit's own test harness
(``streamlit.testing.v1.AppTest``) runs the script as Streamlit does, a rerun per
message with ``st.session_state`` kept, against the embedded backend on a loopback port
(a thread of its own, since ``AppTest`` blocks), and reads the elements it drew."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from streamcite.local import LocalBackend
from tests._ui_apps import PASSAGE, QUESTION, ROOT, backend_thread

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

EXAMPLE = str(ROOT / "examples" / "streamlit_chat.py")
SECOND = "Which security rules apply outside the office?"


@pytest.fixture(scope="module")
def backend() -> Iterator[LocalBackend]:
    with backend_thread() as be:
        yield be


def _app(base_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("STREAMCITE_BASE_URL", base_url)
    app = AppTest.from_file(EXAMPLE, default_timeout=60)
    app.run()
    assert not app.exception
    return app


def _said(message: Any) -> str:
    """All the Markdown one chat message shows."""
    return "\n\n".join(str(m.value) for m in message.markdown)


def test_the_answer_has_footnotes_passages_claim_marks_verdict_and_history(
    backend: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app(backend.base_url, monkeypatch)
    app.chat_input[0].set_value(QUESTION).run()
    assert not app.exception
    user, assistant = app.chat_message
    assert (user.name, assistant.name) == ("user", "assistant")
    answer = _said(assistant)
    assert "manager¹\\. ✓" in answer and "that day¹\\. ✓" in answer
    assert "¹ **[Remote Work Policy](" + backend.root_url + "/documents/" in answer
    assert "— 2\\. Remote work days" in answer
    assert PASSAGE in answer  # footnote 1's own passage, not the answer's words
    assert "\\[1\\] [Remote Work Policy](" in answer  # Wikit's quoted source
    assert "✓ Grounding (local): 2 of 2 claims supported" in answer
    (turn,) = app.session_state["turns"]
    assert turn[1].grounding is not None and turn[1].citations

    app.chat_input[0].set_value(SECOND).run()  # the script reruns: the first answer again
    assert not app.exception
    said = [_said(m) for m in app.chat_message]
    assert len(said) == 4 and said[1] == answer
    assert "VPN" in said[3] and "Grounding (local)" in said[3]


def test_backend_down_is_a_readable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    app = _app(dead, monkeypatch)
    app.chat_input[0].set_value(QUESTION).run()
    assert not app.exception
    answer = _said(app.chat_message[1])
    assert answer.startswith("⚠") and "connect" in answer.lower()
    assert "\\(" in answer  # the error's code is shown with its message
