"""What a chat UI shows of one streamed answer, as Markdown any framework renders.

:class:`ChatView` folds a stream's events (``view.feed(event)``); the functions below
render it. Everything that came from upstream (answer text, titles, passages, URLs,
error messages, tool arguments) is escaped: control and bidi characters dropped, the ASCII
punctuation Markdown reads backslash-escaped (CommonMark renders ``\\<`` as ``<``), so
HTML, links, images, LaTeX ``$`` and Streamlit's ``:color[...]`` directives arrive as the
characters they are. Only ``http``/``https`` URLs become links. No framework is
imported here.

>>> from streamcite.events import TokenEvent
>>> view = ChatView()
>>> for text in ["Paris [", "1]."]:
...     changed = view.feed(TokenEvent(text=text))
>>> answer_markdown(view)
'Paris¹\\\\.'
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from streamcite.core.citations import ANSWER_SEGMENT
from streamcite.core.events import (
    CitationsEvent,
    ClaimEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    GroundingEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
)
from streamcite.core.grounding import GroundingResult
from streamcite.core.markers import find_markers, render_superscript
from streamcite.core.models import Citation, CitationSpan, CitedAnswer, ToolCall
from streamcite.core.sources import QuotedSource

__all__ = [
    "MAX_PASSAGE_CHARS",
    "ChatView",
    "Footnote",
    "Pacer",
    "answer_markdown",
    "error_markdown",
    "escape_markdown",
    "footnote_heading",
    "footnotes",
    "footnotes_markdown",
    "full_markdown",
    "markdown_link",
    "passage_for",
    "plain_text",
    "quote_markdown",
    "sources_markdown",
    "tool_markdown",
    "verdict_text",
    "view_of",
]

MAX_PASSAGE_CHARS = 600
"""A quoted passage longer than this is cut (with "…") in the sources section."""
SUPPORTED_MARK = "✓"
UNSUPPORTED_MARK = "✗"
SOURCES_RULE = "\n\n---\n\n"
"""Between the answer and its sources: what a UI cuts at to send the answer back as history."""

# ASCII punctuation Markdown (CommonMark, GFM, KaTeX, Streamlit) gives a meaning to;
# , ; ? % @ ' " are left as they are (nothing reads them once these are escaped).
_PUNCT = re.compile(r"([!#$&()*+\-./:<=>\[\\\]^_`{|}~])")
# Control characters, every bidi control (U+061C, U+200E/F, U+202A-E, U+2066-9), the
# invisible ones (zero-width space, word joiner, BOM) and the Unicode tag characters
# (U+E0000-E007F: invisible text, a known way to hide instructions). Zero-width
# (non-)joiners U+200C/D stay: Persian, Indic scripts and emoji sequences need them.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f"
    "\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]"
)
_TAIL_PARTIAL = re.compile(r"[ \t]*\[[0-9, ]{0,40}\]?\Z")


def escape_markdown(text: str) -> str:
    """``text`` as inert Markdown: shown as the characters it is, nothing interpreted.

    >>> escape_markdown('<img src=x onerror=alert(1)> $5 :red[x]')
    '\\\\<img src\\\\=x onerror\\\\=alert\\\\(1\\\\)\\\\> \\\\$5 \\\\:red\\\\[x\\\\]'
    """
    text = _INVISIBLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _PUNCT.sub(r"\\\1", text)


def quote_markdown(text: str, limit: int = MAX_PASSAGE_CHARS) -> str:
    """``text`` escaped as a Markdown block quote, cut at ``limit`` characters."""
    text = unicodedata.normalize("NFC", text.strip())
    if len(text) > limit:
        text = text[:limit].rstrip() + "…"
    lines = [escape_markdown(line).strip() for line in text.split("\n")]
    return "\n".join(f"> {line}" if line else ">" for line in lines)


def markdown_link(label: str, url: str | None) -> str:
    """``[label](url)`` when ``url`` is http(s) (percent-encoded), else the label alone."""
    safe_label = escape_markdown(label)
    if not url or _INVISIBLE.search(url) or any(c.isspace() for c in url):
        return safe_label
    try:
        parts = urlsplit(url)
    except ValueError:
        return safe_label
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return safe_label
    return f"[{safe_label}]({quote(url, safe=':/?#@!$&*+,;=%~-._')})"


@dataclass(slots=True)
class ChatView:
    """Everything a chat UI shows of one answer, folded from its events."""

    text: str = ""
    """Choice 0's raw text (footnote markers as written)."""
    reasoning: str = ""
    refusal: str = ""
    citations: list[Citation] = field(default_factory=list)
    spans: list[CitationSpan] = field(default_factory=list)
    claims: dict[tuple[int, int], ClaimEvent] = field(default_factory=dict)
    """The latest verdict per ``(start, end)`` of the answer text."""
    sources: list[QuotedSource] = field(default_factory=list)
    grounding: GroundingResult | None = None
    tool_calls: dict[int, ToolCall] = field(default_factory=dict)
    errors: list[ErrorEvent] = field(default_factory=list)
    done: bool = False

    def feed(self, event: Event) -> str:
        """Fold ``event`` in; returns what it changed: ``text``, ``reasoning``, ``tool``,
        ``sources`` (citations, Wikit sources, grounding, claims), ``error``, ``done``
        or ``""`` (nothing shown changed)."""
        kind = type(event)
        if kind is TokenEvent:
            assert isinstance(event, TokenEvent)
            if event.index != 0:
                return ""
            self.text += event.text
            return "text"
        if kind is ClaimEvent:
            assert isinstance(event, ClaimEvent)
            self.claims[(event.start, event.end)] = event
            return "text"
        return self._feed_other(event)

    def _feed_other(self, event: Event) -> str:
        if isinstance(event, ReasoningEvent):
            if event.index != 0:
                return ""
            self.reasoning += event.text
            return "reasoning"
        if isinstance(event, ToolCallEvent):
            if event.index != 0:
                return ""
            call = self.tool_calls.setdefault(event.tool_index, ToolCall())
            call.id = call.id or event.id
            call.name = call.name or event.name
            call.arguments += event.arguments
            return "tool"
        if isinstance(event, RefusalEvent):
            self.refusal += event.text if event.index == 0 else ""
            return "text"
        if isinstance(event, CitationsEvent):
            self.citations = list(event.citations)
            self.spans = list(event.spans) if event.spans else self.spans
            return "sources"
        if isinstance(event, SourcesEvent):
            self.sources = list(event.sources)
            return "sources"
        if isinstance(event, GroundingEvent):
            self.grounding = event.to_result()
            return "sources"
        if isinstance(event, ErrorEvent):
            self.errors.append(event)
            return "error"
        if isinstance(event, DoneEvent):
            return self._finish(event)
        return ""

    def _finish(self, event: DoneEvent) -> str:
        answer = event.answer
        self.text = answer.text  # the final answer is the authority
        self.citations = list(answer.citations)
        self.spans = list(answer.citation_spans)
        self.sources = list(answer.sources)
        self.grounding = answer.grounding
        self.refusal = answer.refusal or self.refusal
        self.done = True
        return "done"


_PACED = frozenset({"text", "reasoning", "tool"})


class Pacer:
    """When a chat UI redraws while a stream arrives. Each redraw renders the whole
    message again (O(length)), so redrawing after every token of a long answer costs
    O(length²): some 80 s of the server's loop for a 170 KB answer. After a ``text``,
    ``reasoning`` or ``tool`` change the next redraw waits until ``ratio`` times the
    last redraw's duration has passed (a redraw of a short answer takes well under a
    millisecond: every token is still drawn as it comes); any other change, or any
    event while a redraw is held back (the finish chunk after the last token), redraws
    at once, and so does the end.

    >>> pacer = Pacer()
    >>> pacer.wants("text")
    True
    """

    __slots__ = ("_clock", "_due", "_ratio", "pending")

    def __init__(self, ratio: float = 4.0, clock: Callable[[], float] = time.perf_counter) -> None:
        self._ratio = ratio
        self._clock = clock
        self._due = 0.0
        self.pending = False
        """A change is not drawn yet."""

    def wants(self, changed: str) -> bool:
        """Whether to redraw now, after an event that changed ``changed`` (``""``: nothing)."""
        if changed in _PACED and self._clock() < self._due:
            self.pending = True
            return False
        return bool(changed) or self.pending

    def start(self) -> float:
        """Call before a redraw; give the result to :meth:`drawn` after it."""
        return self._clock()

    def drawn(self, started: float) -> None:
        now = self._clock()
        self._due = now + self._ratio * (now - started)
        self.pending = False


def view_of(answer: CitedAnswer) -> ChatView:
    """The view of a finished answer (to show it again: a page rerun, the history)."""
    view = ChatView(reasoning=answer.reasoning_text, errors=list(answer.errors))
    for claim in answer.claims:
        view.claims[(claim.start, claim.end)] = claim
    view.tool_calls = dict(enumerate(answer.tool_calls))
    view.feed(DoneEvent(answer=answer))
    return view


@dataclass(slots=True, frozen=True)
class Footnote:
    """One footnote of the sources section: its number, its document, its passages."""

    number: int
    title: str
    heading: str | None
    url: str | None
    passages: tuple[str, ...]
    """Every distinct passage the provider quoted for this footnote, in order."""


def passage_for(span: CitationSpan, citations: list[Citation]) -> str | None:
    """The quoted passage that supports ``span``: its own ``cited_text`` when the provider
    quoted one for it, else its citation's (never the answer's own words)."""
    if span.cited_text:
        return span.cited_text
    for c in citations:
        if (c.provider_metadata or {}).get(ANSWER_SEGMENT):
            continue
        if c.document_index == span.document_index:
            return c.cited_text
    return None


def footnotes(view: ChatView) -> list[Footnote]:
    """The footnotes of the sources section, by number: one per citation, with each of
    its passages (two spans quoting two passages of one document show both)."""
    # One pass over the citations and one over the spans (a redraw per event must not
    # cost citations × spans): each document's quote, then each span's passage.
    quoted: dict[int | None, str | None] = {}
    for c in view.citations:
        if not (c.provider_metadata or {}).get(ANSWER_SEGMENT):
            quoted.setdefault(c.document_index, c.cited_text)
    by_doc: dict[int | None, dict[str, None]] = {}
    for span in view.spans:
        p = span.cited_text or quoted.get(span.document_index)
        if p and p.strip():
            by_doc.setdefault(span.document_index, {})[p] = None
    out = []
    for c in sorted(view.citations, key=lambda c: (c.document_index is None, c.document_index)):
        if c.document_index is None:
            continue
        passages = list(by_doc.get(c.document_index, ()))
        if not passages and c.cited_text and c.cited_text.strip():
            passages.append(c.cited_text)
        title = c.document_title or c.document_reference or c.source_url or "(untitled)"
        out.append(
            Footnote(
                c.document_index + 1, title, c.cited_text_heading, c.source_url, tuple(passages)
            )
        )
    return out


def _superscripts(numbers: list[int]) -> str:
    return "˒".join(render_superscript(n) for n in numbers)


def answer_markdown(view: ChatView, *, marks: bool = True) -> str:
    """The answer: footnote markers as superscripts, a ✓/✗ after each checked claim
    (``marks``), everything else escaped. While streaming, a marker not yet complete is
    held back."""
    raw = view.text
    if not view.done:
        cut = _TAIL_PARTIAL.search(raw)
        if cut is not None:
            raw = raw[: cut.start()]
    cuts: list[tuple[int, int, str]] = []
    last = 0
    for start, end, numbers in find_markers(raw):
        blank = start
        while blank > last and raw[blank - 1] in " \t":  # the blanks before go with it
            blank -= 1
        cuts.append((blank, end, _superscripts(numbers)))
        last = end
    marked = {p for s, e, _ in cuts for p in (s, e)}  # a marker there already
    for span in view.spans:  # anchored citations (no marker in the text): after the span
        at, doc = span.end, span.document_index
        if at is not None and doc is not None and at <= len(raw) and at not in marked:
            cuts.append((at, at, _superscripts([doc + 1])))
    if marks:
        for (_, end), claim in view.claims.items():
            if claim.supported is not None and end <= len(raw):
                mark = SUPPORTED_MARK if claim.supported else UNSUPPORTED_MARK
                cuts.append((end, end, f" {mark}"))
    cuts.sort(key=lambda c: (c[0], c[1]))
    out: list[str] = []
    pos = 0
    for start, end, replacement in cuts:
        start = max(start, pos)  # inside a marker already replaced: after it
        end = max(end, start)
        out.append(escape_markdown(raw[pos:start]))
        out.append(replacement)
        pos = end
    out.append(escape_markdown(raw[pos:]))
    text = "".join(out)
    if view.refusal:
        text += ("\n\n" if text else "") + "_Refused:_ " + escape_markdown(view.refusal)
    return text


def verdict_text(grounding: GroundingResult | None) -> str | None:
    """One line on the grounding check, or None before (or without) one."""
    if grounding is None:
        return None
    checker = escape_markdown(grounding.provider)
    if grounding.support_score is None or grounding.nothing_to_check:
        why = (
            "nothing to check" if grounding.nothing_to_check else "no quoted text to check against"
        )
        return f"Grounding ({checker}): no verdict, {why}"
    checked = grounding.checked_claims
    unsupported = grounding.unsupported_claims or 0
    head = f"{checked - unsupported} of {checked} claims supported" if checked else "checked"
    icon = SUPPORTED_MARK if unsupported == 0 else UNSUPPORTED_MARK
    return f"{icon} Grounding ({checker}): {head}, support score {grounding.support_score:.2f}"


def footnote_heading(note: Footnote) -> str:
    """A footnote's document as one Markdown line: title (linked when http(s)) and heading."""
    head = f"**{markdown_link(note.title, note.url)}**"
    if note.heading:
        head += " — " + escape_markdown(note.heading)
    return head


def footnotes_markdown(view: ChatView) -> str:
    """**Sources**: each footnote with its document and its own quoted passages."""
    parts: list[str] = []
    notes = footnotes(view)
    if notes:
        parts.append("**Sources**")
        for note in notes:
            parts.append(f"{_superscripts([note.number])} {footnote_heading(note)}")
            parts.extend(quote_markdown(p) for p in note.passages)
    return "\n\n".join(parts)


def sources_markdown(view: ChatView, notes: Callable[[ChatView], str] = footnotes_markdown) -> str:
    """The sources section: the footnotes (``notes`` renders them: by default each with
    its document and its own quoted passages); Wikit's quoted sources; the verdict."""
    parts: list[str] = [notes(view)]
    if view.sources:
        parts.append("**Quoted sources**")
        for s in view.sources:
            page = s.chunk.display_page_start
            where = f", page {page}" if page is not None else ""
            parts.append(
                f"\\[{escape_markdown(s.quoted_as)}\\] "
                f"{markdown_link(s.document.display_name, s.document.url)}{where}"
            )
    parts.append(verdict_text(view.grounding) or "")
    return "\n\n".join(p for p in parts if p)


def error_markdown(errors: list[ErrorEvent]) -> str:
    """The faults, one line each, for people: ``⚠ connect: cannot connect (…)``."""
    return "\n\n".join(
        f"⚠ {escape_markdown(e.message or e.code)} \\({escape_markdown(e.code)}\\)" for e in errors
    )


def tool_markdown(call: ToolCall) -> str:
    """A tool call's arguments as a code block (never interpreted)."""
    args = _INVISIBLE.sub("", call.arguments).replace("```", "` ` `")
    return f"```json\n{args}\n```"


def full_markdown(view: ChatView, notes: Callable[[ChatView], str] = footnotes_markdown) -> str:
    """Answer, sources section (its footnotes rendered by ``notes``) and errors as one
    Markdown message (never empty)."""
    body = answer_markdown(view)
    extra = sources_markdown(view, notes)
    errors = error_markdown(view.errors)
    tail = "\n\n".join(p for p in (extra, errors) if p)
    if tail:
        body = body + SOURCES_RULE + tail if body else tail
    if not body:
        body = "…" if not view.done else "_(no answer)_"
    return body


_UNESCAPE = re.compile(r"\\([!#$&()*+\-./:<=>\[\\\]^_`{|}~])")
_MARKS = re.compile(f" [{SUPPORTED_MARK}{UNSUPPORTED_MARK}]")


def plain_text(markdown: str) -> str:
    """A rendered answer back as plain text, for the conversation history: the sources
    section cut, claim marks dropped, escapes undone (superscripts stay).

    >>> plain_text("Paris¹\\\\. ✓" + SOURCES_RULE + "**Sources**")
    'Paris¹.'
    """
    body = markdown.split(SOURCES_RULE, 1)[0]
    return _UNESCAPE.sub(r"\1", _MARKS.sub("", body)).strip()
