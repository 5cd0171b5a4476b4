"""Lone UTF-16 surrogates in a chat stream's JSON (orjson refuses them): the halves of
a character split across two chunks joined, the rest replaced by U+FFFD and reported.
Part of :class:`~streamcite.core.chunks.ChunkInterpreter` (cold paths only). Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from streamcite.core.chunk_fields import ChunkFields
from streamcite.core.events import Event
from streamcite.core.surrogates import SurrogateJoiner, scrub_surrogates

__all__ = ["SurrogateHandling"]


class SurrogateHandling(ChunkFields):
    """The chat interpreter's lone-surrogate handling (see :class:`ChunkInterpreter`)."""

    __slots__ = ()

    def _interpret(self, obj: dict[str, Any], key: str, out: list[Event]) -> None:
        raise NotImplementedError  # (the interpreter's: ChunkInterpreter._interpret)

    def _token(self, idx: int, content: str, out: list[Event]) -> None:
        raise NotImplementedError  # (the interpreter's: ChunkInterpreter._token)

    def _lenient(self, obj: dict[str, Any], out: list[Event]) -> None:
        """A chunk orjson refused for its lone surrogate escapes (cold). Each choice's
        content joins a high half held from its previous content, and holds back a high
        half it ends with (the template is off while one is held, so the next token
        comes through :meth:`_token`); any other surrogate left alone becomes U+FFFD,
        reported as ``lone_surrogate``."""
        joiner = self._surr
        if joiner is None:
            joiner = self._surr = SurrogateJoiner()
        lone = 0
        choices = obj.get("choices")
        for ch in choices if type(choices) is list else ():
            delta = ch.get("delta") if type(ch) is dict else None
            if type(delta) is not dict or type(c := delta.get("content")) is not str:
                continue
            idx = ch.get("index", 0)
            if type(idx) is int and 0 <= idx < self._builder.bounds.max_choices:
                delta["content"], n = joiner.join(idx, c)
                lone += n
        obj, n = scrub_surrogates(obj)
        lone += n
        if lone:
            self._lone_surrogates(lone, out)
        self._surr_held = False  # this chunk's tokens were joined above
        self._interpret(obj, "delta", out)
        self._surr_held = bool(joiner.held)
        self._hold_template()

    def _hold_template(self) -> None:
        """The template is off while a high surrogate is held, back on after (cold)."""
        if self._surr_held:
            if self._tpl.on:
                self._tpl.on = False
                self._tpl_off = True
        elif self._tpl_off:
            self._tpl.on = True
            self._tpl_off = False

    def _release_held(self, out: list[Event], idx: int | None = None) -> None:
        """High halves still held at a choice's finish (``idx``) or the end: U+FFFD."""
        if self._surr is not None and self._surr_held:
            for k in [idx] if idx is not None else list(self._surr.held):
                if k in self._surr.held:
                    self._token(k, "", out)

    def _unhold(self, idx: int, out: list[Event]) -> str:
        """A token of ``idx`` that did not start with the low half of the high one held:
        that one was alone (U+FFFD, reported). ``""`` when nothing is held for ``idx``."""
        assert self._surr is not None
        lone = self._surr.release(idx)
        self._surr_held = bool(self._surr.held)
        if lone is None:
            return ""
        self._lone_surrogates(1, out)
        self._hold_template()
        return lone

    def _lone_surrogates(self, n: int, out: list[Event]) -> None:
        msg = f"{n} lone UTF-16 surrogate(s) in the stream's JSON: replaced by U+FFFD"
        self._fault(out, "lone_surrogate", msg)
