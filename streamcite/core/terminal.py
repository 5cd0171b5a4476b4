"""Upstream text made inert for a terminal: no escape sequences, no control characters.

A provider (or anything between it and us) can put ``ESC[2J`` (clear screen),
``ESC]0;title BEL`` (window title) or ``ESC]52;c;… BEL`` (write the clipboard) into a
token, a tool call or an error message. Everything the CLI and the bench tool render
from upstream goes through :func:`terminal_safe` first; ``--json`` output is JSON,
which escapes them. Pure text functions (the console helpers that use them are in
``streamcite.apps._terminal``). Sans-I/O.
"""

from __future__ import annotations

import re

__all__ = ["json_for_terminal", "json_line_escaped", "one_line", "terminal_safe"]

# Whole sequences first (so their parameters go with them), then any control character
# left: C0 except tab and newline, DEL, and C1 (the 8-bit forms of ESC sequences).
_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: cursor moves, erase, colours
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: title, clipboard (52), links
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape (charset selection, RIS, …)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?"  # 8-bit string controls
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)
# Bidi embeddings/overrides (U+202A–E) and isolates (U+2066–9) reorder what follows them
# on the line: a title ``\u202egpj.exe`` shows as ``exe.jpg``. Removed like controls.
_ANY_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# In UTF-8 JSON: C1 (C2 80–9F), bidi overrides (E2 80 AA–AE) and isolates (E2 81 A6–A9).
_RAW_IN_JSON = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def terminal_safe(text: str) -> str:
    r"""``text`` without escape sequences or control characters (``\n`` and ``\t`` kept).

    >>> terminal_safe("ok\x1b]52;c;ZXZpbA==\x07 \x1b[2Jdone\r\n")
    'ok done\n'
    """
    if _ANY_CONTROL.search(text) is None:
        return text  # the usual case: one scan, no copy
    return _SEQUENCES.sub("", text)


def _json_escape(m: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(m.group().decode())


def json_line_escaped(line: bytes) -> bytes:
    r"""UTF-8 JSON with C1 controls and bidi overrides/isolates written as ``\uXXXX``.

    orjson writes U+0080–U+009F and U+202E raw (legal JSON); a terminal reads the
    former as 8-bit escape sequences, the latter reorders the line. Escaped, the
    document decodes to the same value.

    >>> json_line_escaped('{"t":"a\x9b2Jb\u202e"}'.encode())
    b'{"t":"a\\u009b2Jb\\u202e"}'
    """
    if b"\xc2" not in line and b"\xe2" not in line:
        return line  # the usual case: no copy
    return _RAW_IN_JSON.sub(_json_escape, line)


def one_line(text: str) -> str:
    """File or upstream data for a one-line message (a warning): :func:`terminal_safe`,
    line breaks and tabs shown as ``\\n``, ``\\r``, ``\\t`` so one line stays one line."""
    return terminal_safe(text.replace("\r", "\\r")).replace("\n", "\\n").replace("\t", "\\t")


def json_for_terminal(json_text: str) -> str:
    """JSON text safe to print: raw C1 controls and bidi overrides (legal inside JSON
    strings) removed.

    C0 controls are already escaped by every JSON encoder; removing characters, not
    sequences, keeps the document valid JSON.
    """
    return _ANY_CONTROL.sub("", json_text)
