"""Limits of Google's ``groundingConfigs.check`` request, as reusable validators.

Both the Google client (to fail before a round trip) and the local checker's
Google-shaped endpoint (to answer a bad request exactly as Google would, with an
``invalid_argument`` error) use these. Pure functions: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from streamcite.core.errors import StreamciteError
from streamcite.enrich.facts import MAX_FACT_CHARS, MAX_FACTS

__all__ = [
    "MAX_ANSWER_TOKENS",
    "MAX_FACTS",
    "MAX_FACT_CHARS",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "InvalidGroundingRequest",
    "count_answer_tokens",
    "validate_answer",
    "validate_citation_threshold",
    "validate_fact_text",
    "validate_facts_count",
    "validate_user_labels",
]

MAX_ANSWER_TOKENS = 4_096
"""Tokens of ``answerCandidate`` (see :func:`count_answer_tokens`)."""
MAX_LABELS = 64
"""``userLabels`` entries per request."""
MAX_LABEL_CHARS = 63
"""Characters per label key or value."""


class InvalidGroundingRequest(StreamciteError):
    """A grounding-check request outside the API's documented limits (HTTP 400)."""

    code = "invalid_argument"


# Google counts a "token" of the answer as a word or a sentence-ending period; the
# exact tokenizer is not published, so this is the documented approximation: runs
# of letters/digits, plus each ., ! or ? that closes a sentence (followed by space
# or the end of the text).
_WORD_RE = re.compile(r"[^\W_]+")
_SENTENCE_END_RE = re.compile(r"[.!?。！？](?=\s|$)")


# Scripts written without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar,
# Tibetan): a "word" run there is a whole clause, so each character counts as a
# token — an upper bound, so that a request the service refuses is refused locally.
_NO_SPACE_RE = re.compile(
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9d"
    "\U00020000-\U0003134f]"
)


def count_answer_tokens(text: str) -> int:
    """Tokens of an answer as the grounding API counts them (words + sentence-ending periods).

    Each character of a script written without spaces (CJK, Thai, …) is one token.
    """
    n_no_space = 0
    if not text.isascii():
        text, n_no_space = _NO_SPACE_RE.subn(" ", text)
    words = sum(1 for _ in _WORD_RE.finditer(text))
    return n_no_space + words + sum(1 for _ in _SENTENCE_END_RE.finditer(text))


def validate_answer(text: Any) -> None:
    """``answerCandidate`` must be a string of at most 4,096 tokens."""
    if not isinstance(text, str):
        raise InvalidGroundingRequest(
            f"answerCandidate: expected a string, got {type(text).__name__}"
        )
    n = count_answer_tokens(text)
    if n > MAX_ANSWER_TOKENS:
        raise InvalidGroundingRequest(
            f"answerCandidate: {n} tokens, more than the maximum of {MAX_ANSWER_TOKENS}"
        )


def validate_facts_count(n: int) -> None:
    if n > MAX_FACTS:
        raise InvalidGroundingRequest(f"facts: {n} facts, more than the maximum of {MAX_FACTS}")


def validate_fact_text(text: Any, path: str = "facts[].factText") -> None:
    if not isinstance(text, str):
        raise InvalidGroundingRequest(f"{path}: expected a string, got {type(text).__name__}")
    if len(text) > MAX_FACT_CHARS:
        raise InvalidGroundingRequest(
            f"{path}: {len(text)} characters, more than the maximum of {MAX_FACT_CHARS}"
        )


def validate_citation_threshold(value: Any) -> float:
    """The threshold as a float in [0, 1] (Google's JSON also accepts a numeric string)."""
    if isinstance(value, bool):
        raise InvalidGroundingRequest("groundingSpec.citationThreshold: expected a number")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InvalidGroundingRequest(
                f"groundingSpec.citationThreshold: expected a number, got {value!r}"
            ) from None
    if not isinstance(value, int | float):
        raise InvalidGroundingRequest(
            f"groundingSpec.citationThreshold: expected a number, got {type(value).__name__}"
        )
    threshold = float(value)
    # NaN fails both comparisons, so it is rejected too.
    if not 0.0 <= threshold <= 1.0:
        raise InvalidGroundingRequest(
            f"groundingSpec.citationThreshold: {value!r} is outside [0, 1]"
        )
    return threshold


def _label_char_ok(c: str) -> bool:
    if c.isascii():
        return c.islower() or c.isdigit() or c in "_-"
    # "International characters are allowed": any non-ASCII letter, mark or digit
    # that is not an upper-case letter (labels are lower-case by rule).
    return (c.isalnum() or _is_mark(c)) and not c.isupper()


def _is_mark(c: str) -> bool:
    return unicodedata.category(c).startswith("M")


def validate_user_labels(labels: Any) -> None:
    """Google's label rules: at most 64; keys 1–63 characters starting with a lower-case
    letter or an international character; keys and values only lower-case letters,
    digits, ``_`` and ``-`` (international characters allowed); values may be empty.

    Raises :class:`InvalidGroundingRequest` naming the offending label.
    """
    if labels is None:
        return
    if not isinstance(labels, Mapping):
        raise InvalidGroundingRequest(
            f"userLabels: expected an object, got {type(labels).__name__}"
        )
    if len(labels) > MAX_LABELS:
        raise InvalidGroundingRequest(
            f"userLabels: {len(labels)} labels, more than the maximum of {MAX_LABELS}"
        )
    for key, value in labels.items():
        if not isinstance(key, str) or not key:
            raise InvalidGroundingRequest("userLabels: keys must be non-empty strings")
        if len(key) > MAX_LABEL_CHARS:
            raise InvalidGroundingRequest(
                f"userLabels: key {key[:20]!r}... longer than {MAX_LABEL_CHARS} characters"
            )
        first = key[0]
        starts_ok = first.islower() if first.isascii() else first.isalpha() and not first.isupper()
        if not starts_ok:
            raise InvalidGroundingRequest(
                f"userLabels: key {key!r} must start with a lower-case letter or an "
                "international character"
            )
        if not all(_label_char_ok(c) for c in key):
            raise InvalidGroundingRequest(
                f"userLabels: key {key!r} may contain only lower-case letters, digits, '_' and '-'"
            )
        if not isinstance(value, str):
            raise InvalidGroundingRequest(f"userLabels[{key!r}]: expected a string value")
        if len(value) > MAX_LABEL_CHARS:
            raise InvalidGroundingRequest(
                f"userLabels[{key!r}]: value longer than {MAX_LABEL_CHARS} characters"
            )
        if not all(_label_char_ok(c) for c in value):
            raise InvalidGroundingRequest(
                f"userLabels[{key!r}]: value may contain only lower-case letters, digits, "
                "'_' and '-'"
            )
