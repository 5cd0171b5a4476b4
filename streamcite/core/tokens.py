"""One text delta of a choice → its ``token`` event, through the choice's footnote
detector, and into the answer's text parts. The chat interpreter and every other
dialect emit tokens through this one function. Sans-I/O."""

from __future__ import annotations

from streamcite.core.events import Event, TokenEvent
from streamcite.core.markers import FootnoteDetector

__all__ = ["emit_token"]


def emit_token(
    det: FootnoteDetector,
    idx: int,
    text: str,
    out: list[Event],
    raw0: list[str],
    disp0: list[str] | None,
) -> list[tuple[int, int]] | None:
    """Append the ``token`` event of ``text`` (choice ``idx``) to ``out`` and, for choice
    0, the text to ``raw0`` (and its display to ``disp0`` unless that is None: the
    display is the text in ``keep`` mode). Returns the footnotes (number, offset) the
    text completed (None or empty: none). Text without ``[`` and no marker held skips the detector."""
    if det.keep and not det.held and "[" not in text:
        det.offset += len(text)
        out.append(TokenEvent(idx, text, text))
        if idx == 0:
            raw0.append(text)
        return None
    display, refs = det.feed(text)
    out.append(TokenEvent(idx, text, display))
    if idx == 0:
        raw0.append(text)
        if disp0 is not None:
            disp0.append(display)
    return refs
