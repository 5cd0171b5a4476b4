"""Token counts: from the stream's ``usage``, from a tokenizer, or from the chunks.

Streamed chunks are not tokens: a provider may pack several tokens into one chunk,
and a proxy may coalesce the whole answer into one write. So each request's output
length is, in order of trust:

1. ``usage``: ``completion_tokens`` of the stream's usage chunk (asked for with
   ``stream_options.include_usage``), as the provider counted them;
2. ``tokenizer``: a tokenizer run over the answer text after the run (``--tokenizer``:
   a Hugging Face ``tokenizer.json`` file or model name, needs the extra
   ``pip install 'streamcite[tokenizer]'``; or ``words``, a whitespace split, which
   needs nothing and is an approximation);
3. ``chunks``: the number of content chunks.

Every count carries the label of where it came from, and the summary says which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

__all__ = ["TokenCounter", "TokenizerUnavailable", "WordCounter", "load_tokenizer"]


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    name: str

    def count(self, text: str) -> int: ...


class TokenizerUnavailable(RuntimeError):
    """The tokenizer asked for cannot be loaded (package missing, file unreadable)."""


class WordCounter:
    """Whitespace-separated words: an approximation needing no package."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class _HFTokenizer:
    def __init__(self, name: str, tokenizer: object) -> None:
        self.name = name
        self._tok = tokenizer

    def count(self, text: str) -> int:
        if not text:
            return 0
        encoding = self._tok.encode(text, add_special_tokens=False)  # type: ignore[attr-defined]
        return len(encoding.ids)


def load_tokenizer(spec: str) -> TokenCounter:
    """``words``, a path to a ``tokenizer.json``, or a Hugging Face model name (fetched
    by the ``tokenizers`` package)."""
    if spec == "words":
        return WordCounter()
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise TokenizerUnavailable(
            "--tokenizer needs the tokenizers package: pip install 'streamcite[tokenizer]' "
            "(or --tokenizer words for a whitespace approximation)"
        ) from exc
    path = Path(spec)
    try:
        if path.is_dir():
            path = path / "tokenizer.json"
        if path.is_file():
            return _HFTokenizer(spec, Tokenizer.from_file(str(path)))
        return _HFTokenizer(spec, Tokenizer.from_pretrained(spec))
    except Exception as exc:  # the library raises plain Exceptions of its own
        raise TokenizerUnavailable(f"--tokenizer {spec}: cannot load it: {exc}") from exc
