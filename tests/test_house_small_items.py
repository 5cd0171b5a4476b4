"""Three contracts made explicit: a claim session's ``prepare()`` is part of its
protocol (the pipeline calls it, it does not probe for it), Google's ``:check`` runs
the offline checker through a public function, and an Anthropic text delta whose
``index`` is not an integer (``0.0``, ``true``) is refused as the strict way refuses it,
not taken as a token."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import orjson
import pytest

import streamcite.grounding.checker as checker_mod
import streamcite.pipeline.claims as pipeline_claims
from streamcite.core.answer import AnswerBuilder
from streamcite.core.claim_channel import ClaimSession
from streamcite.core.dialects import make_interpreter
from streamcite.core.events import ErrorEvent, Event, TokenEvent
from streamcite.core.sse import RawEvent
from streamcite.enrich.claims import ClaimSession as PublicClaimSession
from streamcite.grounding.live_claims import LocalClaimSession

ROOT = Path(__file__).resolve().parent.parent


def test_prepare_is_declared_by_the_claim_session_protocol() -> None:
    assert PublicClaimSession is ClaimSession
    assert "prepare" in ClaimSession.__dict__
    assert inspect.signature(ClaimSession.prepare).parameters.keys() == {"self"}
    assert isinstance(LocalClaimSession(), ClaimSession)


def test_the_pipeline_calls_prepare_without_probing_for_it() -> None:
    tree = ast.parse(inspect.getsource(pipeline_claims))
    probes = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "hasattr"}
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "prepare"
    ]
    assert probes == []


def test_google_check_uses_the_checker_through_public_names() -> None:
    source = (ROOT / "streamcite" / "grounding" / "google_check.py").read_text(encoding="utf-8")
    taken = [
        a.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module == "streamcite.grounding.checker"
        for a in node.names
    ]
    assert "check_facts" in taken
    assert [name for name in taken if name.startswith("_")] == []
    assert set(taken) <= set(checker_mod.__all__)


def _anthropic(index: object) -> list[Event]:
    start = {"type": "message_start", "message": {"id": "m", "model": "c"}}
    blocks = [
        {"type": "content_block_start", "index": i, "content_block": {"type": "text"}}
        for i in (0, 1)
    ]
    delta = {"type": "content_block_delta", "index": index}
    delta["delta"] = {"type": "text_delta", "text": "sneaked"}
    raw: list[RawEvent] = [
        (b"message_start", orjson.dumps(start), "", None),
        *[(b"content_block_start", orjson.dumps(b), "", None) for b in blocks],
        (b"content_block_delta", orjson.dumps(delta), "", None),
    ]
    it = make_interpreter("anthropic", AnswerBuilder(), "keep")
    out: list[Event] = []
    it.feed_raw(raw, out)
    return out


@pytest.mark.parametrize("index", [0.0, 1.0, True])
def test_an_anthropic_text_delta_with_an_index_that_is_not_an_integer_is_refused(
    index: object,
) -> None:
    out = _anthropic(index)
    assert [e.text for e in out if isinstance(e, TokenEvent)] == []
    errors = [e for e in out if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["bad_chunk"]
    assert "content_block_delta not understood" in errors[0].message


def test_an_anthropic_text_delta_with_an_integer_index_is_a_token() -> None:
    out = _anthropic(1)
    assert [e.text for e in out if isinstance(e, TokenEvent)] == ["sneaked"]
    assert not [e for e in out if isinstance(e, ErrorEvent)]
