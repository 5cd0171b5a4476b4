"""`streamcite.core.redact`: secrets, and every 8+ character cut of one, never survive."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from streamcite.core.redact import MASK, MIN_CUT, Redactor, header_secrets, is_secret_header

SECRET_ALPHABET = string.ascii_letters + string.digits + "-_."
secrets_ = st.text(SECRET_ALPHABET, min_size=MIN_CUT, max_size=60)
# Text around a secret: anything but the mask's own character (a mask next to text
# could otherwise spell part of a secret that holds "*").
around = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="*"), max_size=40)


@given(secret=secrets_, before=around, after=around, cut=st.integers(MIN_CUT, 60))
def test_no_cut_of_a_secret_survives(secret: str, before: str, after: str, cut: int) -> None:
    """Whole or cut anywhere past MIN_CUT characters (as a 120-byte quote cuts it), and
    however often it is repeated, the secret's head is gone from the text and the bytes."""
    piece = secret[:cut]
    text = before + piece + after + secret + before
    r = Redactor([secret])
    for out in (r.text(text), r.data(text.encode()).decode()):
        assert secret[:MIN_CUT] not in out
        assert MASK in out


@given(secret=secrets_, text=around)
def test_text_and_bytes_agree(secret: str, text: str) -> None:
    r = Redactor([secret])
    mixed = text + secret[: len(secret) // 2 + MIN_CUT] + text
    assert r.data(mixed.encode()) == r.text(mixed).encode()


def test_short_cuts_and_other_text_are_left_alone() -> None:
    r = Redactor(["sk-live-0123456789abcdef"])
    assert r.text("sk-live and sk-liv") == "sk-live and sk-liv"  # under MIN_CUT: says nothing
    assert r.text("completion_tokens=12") == "completion_tokens=12"


def test_a_secret_inside_another_is_masked_whole() -> None:
    """Longest first: the longer secret is not left with a visible tail."""
    r = Redactor(["abcdefgh12", "abcdefgh1234567890"])
    assert r.text("x abcdefgh1234567890 y") == f"x {MASK} y"


def test_nothing_to_mask() -> None:
    r = Redactor(["", "abc"])  # too short to be a credential: ignored
    assert not r
    assert r.text("abc") == "abc" and r.data(b"abc") == b"abc"


def test_non_ascii_secret_in_bytes() -> None:
    r = Redactor(["clé-secrète-ünïcode"])
    assert r.data("→ clé-secrète-ünïcode ←".encode()) == f"→ {MASK} ←".encode()
    assert r.data("cut clé-secrè".encode()) == f"cut {MASK}".encode()


def test_regex_metacharacters_in_a_secret_are_literal() -> None:
    r = Redactor(["a.b*c+d?e(f)g[h]"])
    assert r.text("a.b*c+d?e(f)g[h]") == MASK
    assert r.text("aXbXcXdXeXfXgXh") == "aXbXcXdXeXfXgXh"


def test_credential_headers_and_bare_credentials() -> None:
    assert is_secret_header("Authorization") and is_secret_header("X-Api-Key")
    assert is_secret_header("Wikit-Semantics-API-Key") and is_secret_header("x-goog-token")
    assert not is_secret_header("Content-Type") and not is_secret_header("Accept")
    found = header_secrets(
        [
            ("Authorization", "Bearer sk-abcdef123"),
            ("Accept", "text/event-stream"),
            ("X-Api-Key", ""),
        ]
    )
    assert found == ["Bearer sk-abcdef123", "sk-abcdef123"]
